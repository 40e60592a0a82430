"""The link to the Docker engine: one client, built lazily, dropped after a failure, and the
cached "is the sandbox usable" status the tools read synchronously.

Why apart from the manager: every sandbox operation shares this bookkeeping (an engine that
stops answering flips the status so tools are no longer offered, a later check flips it back),
and none of it depends on what the containers are for.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable

from docker.errors import ImageNotFound

import docker
from rumi.config import SandboxSettings
from rumi.sandbox.errors import (
    ENGINE_ERRORS,
    PROBLEM_DISABLED,
    PROBLEM_ENGINE,
    PROBLEM_IMAGE,
    SandboxUnavailable,
    short,
)

log = logging.getLogger(__name__)

STATUS_TTL = 30.0  # seconds a cached status is trusted by `available()`

ClientFactory = Callable[[], docker.DockerClient]
Status = tuple[bool, "str | None"]


class EngineLink:
    """Client and cached status; `status()` refreshes the cache."""

    def __init__(self, settings: SandboxSettings, factory: ClientFactory,
                 clock: Callable[[], float]) -> None:
        self.settings = settings
        self._factory = factory
        self._clock = clock
        self._client: docker.DockerClient | None = None
        self._status: Status | None = None
        self._problem: str | None = None
        self._checked_at = float("-inf")
        self._refresh: asyncio.Task[Status] | None = None

    async def status(self) -> Status:
        """(available, reason): the engine answers and the image exists. Cached for tools."""
        problem: str | None = None
        if not self.settings.enabled:
            result: Status = (False, "sandbox disabled (sandbox.enabled = false)")
            problem = PROBLEM_DISABLED
        else:
            try:
                client = await self.client()
                await asyncio.to_thread(client.ping)
                await asyncio.to_thread(client.images.get, self.settings.image)
                await self.engine_up(client)
                result = (True, None)
            except ImageNotFound:
                result = (False, f"sandbox image {self.settings.image} not found "
                                 "(build it with `rumi sandbox build`)")
                problem = PROBLEM_IMAGE
            except ENGINE_ERRORS as exc:
                await self.drop_client()
                result = (False, f"Docker engine not reachable ({short(exc)})")
                problem = PROBLEM_ENGINE
        self.set_status(result, problem)
        return result

    async def engine_up(self, client: docker.DockerClient) -> None:
        """Called by a status check that found the engine and the image; nothing here."""

    def available(self) -> bool:
        """Synchronous and cheap (used by Tool.available): the cached status, refreshed lazily."""
        if self._clock() - self._checked_at > STATUS_TTL:
            self._schedule_refresh()
        return bool(self._status and self._status[0])

    @property
    def last_status(self) -> Status | None:
        return self._status

    @property
    def last_problem(self) -> str | None:
        """PROBLEM_ENGINE, PROBLEM_IMAGE or PROBLEM_DISABLED while unavailable, else None."""
        return None if self._status is None or self._status[0] else self._problem

    def set_status(self, result: Status, problem: str | None = None) -> None:
        if self._status != result:
            log.info("sandbox status: %s", "available" if result[0] else result[1])
        self._status = result
        self._problem = None if result[0] else problem
        self._checked_at = self._clock()

    def _schedule_refresh(self) -> None:
        if self._refresh is not None and not self._refresh.done():
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        self._refresh = loop.create_task(self.status(), name="rumi-sandbox-status")

    async def client(self) -> docker.DockerClient:
        if self._client is None:
            self._client = await asyncio.to_thread(self._factory)
        return self._client

    async def drop_client(self) -> None:
        """Forget the client after an engine failure; the next call builds a new one.

        Closing only drops pooled sockets, but it is a blocking call like any other SDK call,
        so it runs off the event loop.
        """
        old, self._client = self._client, None
        if old is not None:
            with contextlib.suppress(Exception):
                await asyncio.to_thread(old.close)

    async def engine_down(self, exc: BaseException) -> SandboxUnavailable:
        """Record an engine failure and return the error to raise (the subclass forgets its
        containers in `forget_containers`)."""
        log.warning("Docker engine failure: %s", short(exc))
        await self.drop_client()
        self.forget_containers()
        self.set_status((False, f"Docker engine not reachable ({short(exc)})"), PROBLEM_ENGINE)
        return SandboxUnavailable(
            "The sandbox is unavailable right now (the Docker engine does not answer); "
            "commands cannot run until it is back."
        )

    def forget_containers(self) -> None:
        """What the engine's failure makes stale; nothing here."""

    async def close_link(self) -> None:
        """Cancel the background status check and close the Docker client."""
        if self._refresh is not None and not self._refresh.done():
            self._refresh.cancel()
            with contextlib.suppress(asyncio.CancelledError, *ENGINE_ERRORS):
                await self._refresh
        if self._client is not None:
            with contextlib.suppress(*ENGINE_ERRORS):
                await asyncio.to_thread(self._client.close)
            self._client = None


def default_factory(settings: SandboxSettings) -> ClientFactory:
    """docker-py from the environment, with a timeout longer than any command may run."""
    def factory() -> docker.DockerClient:
        return docker.from_env(timeout=int(max(60, settings.exec_timeout + 30)))

    return factory

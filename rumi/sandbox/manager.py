"""One hardened container per chat: created on first use, reused, pruned when idle.

Every Docker call is blocking (docker-py), so each runs in `asyncio.to_thread`. A per-chat
lock serialises creation so concurrent calls never race to create the same container. Any
engine failure (socket gone, daemon stopped) becomes `SandboxUnavailable` with a friendly
message and flips the cached status (`rumi/sandbox/engine.py`), so the tools stop being offered
to the model until a later status check sees the engine again. Workspaces are
`rumi/sandbox/workspaces.py`'s, the blocking container calls `rumi/sandbox/containers.py`'s,
the sweeping of leftover containers (at start and at the stop) `rumi/sandbox/reaper.py`'s.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import logging
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from docker.errors import APIError, ImageNotFound, NotFound

import docker
from rumi import __version__
from rumi.base.chats import validate_chat_id
from rumi.config import SandboxSettings
from rumi.sandbox import containers, ownerlock
from rumi.sandbox.containers import Blueprint, SandboxInfo
from rumi.sandbox.engine import ClientFactory, EngineLink, Status, default_factory
from rumi.sandbox.errors import (
    ENGINE_ERRORS,
    PROBLEM_IMAGE,
    SandboxError,
    SandboxUnavailable,
    short,
)
from rumi.sandbox.exec import (
    CannotFork,
    ContainerNotRunning,
    ContainerRemoved,
    ExecResult,
    OutOfMemory,
    can_run,
    run_in_container,
    wrap_command,
)
from rumi.sandbox.policy import Identity, check_safe
from rumi.sandbox.reaper import Reaper
from rumi.sandbox.workspaces import Workspaces

log = logging.getLogger(__name__)

T = TypeVar("T")

RESTARTED_NOTE = ("The sandbox could not start new processes (something had used up its process "
                  "limit), so it was restarted before running this command; files in /workspace "
                  "are kept, running programs were stopped.")
MEMORY_RESTARTED_NOTE = ("The sandbox's memory was used up (for instance by very many files in "
                         "/tmp, which live in memory), so it could not start this command; it "
                         "was restarted and the command run in the new one. Files in /workspace "
                         "are kept; /tmp was emptied.")
KILLED_RESTARTED_NOTE = ("This command was killed (SIGKILL, exit code 137) and the sandbox could "
                         "not run anything after it: its memory was used up (for instance by "
                         "very many files in /tmp, which live in memory). The sandbox was "
                         "restarted, so later commands run again; files in /workspace are "
                         "kept, /tmp was emptied. The command was not run again: check what it "
                         "did before repeating it.")


class SandboxManager(EngineLink):
    """Owns the chats' containers on one Docker engine (see docs/sandbox.md)."""

    def __init__(
        self,
        settings: SandboxSettings,
        data_dir: Path,
        *,
        docker_client_factory: ClientFactory | None = None,
        clock: Callable[[], float] = time.monotonic,
        version: str = __version__,
        stop_wait: float | None = None,
    ) -> None:
        check_safe(settings)
        super().__init__(settings, docker_client_factory or default_factory(settings), clock)
        self.settings = settings
        self.data_dir = Path(data_dir).expanduser()
        self.instance = hashlib.sha256(str(self.data_dir.resolve()).encode()).hexdigest()[:12]
        self.version = version
        self.stop_wait = settings.stop_wait_seconds if stop_wait is None else stop_wait
        # this process's containers carry it: at start they are never an earlier run's orphans
        self.run_id = uuid.uuid4().hex[:12]
        self.workspaces = Workspaces(settings, self.data_dir, self.instance)
        self._plan = Blueprint(settings, containers.options_hash(settings), self.run_id,
                               self.workspaces.is_ours)
        self._containers: dict[str, Any] = {}
        self._locks: dict[str, asyncio.Lock] = {}
        self._exec_locks: dict[str, asyncio.Lock] = {}
        self._last_used: dict[str, float] = {}
        self._busy: dict[str, int] = {}
        self.reaper = Reaper(self.data_dir, self.instance, self.run_id, self.workspaces,
                             lambda: frozenset(c.id for c in self._containers.values()))

    @property
    def limit_problem(self) -> str | None:
        """Why workspaces cannot be size-limited on this host (None while they can)."""
        return self.workspaces.limit_problem

    # ---------------------------------------------------------------- status

    async def start(self, *, sweep_in_background: bool = False) -> Status:
        """At start: check the engine and remove the containers a previous run left behind.

        If the engine is down now, the cleanup happens the first time a status check finds it
        up (before the tools are offered again), never later: by then live chats own containers.
        `sweep_in_background` (Rumi's own start) does not wait for the removals: a stop that
        left 200 containers would otherwise hold the start for half a minute. Until they are
        gone no chat gets a container (`ensure` waits for the cleanup), but the bot answers.
        """
        await self.reaper.start(in_background=sweep_in_background)
        return await self.status()

    async def in_use_by_a_running_rumi(self) -> bool:
        """Whether a started Rumi (this process or another) owns this data dir's containers:
        if not, running ones are orphans of a killed process (`rumi sandbox prune`)."""
        return await asyncio.to_thread(ownerlock.held_elsewhere, self.data_dir)

    async def engine_up(self, client: docker.DockerClient) -> None:
        """A status check found the engine and image: the pending orphan cleanup runs now,
        before the tools are offered again."""
        await self.reaper.engine_up(client)

    def has_container(self, chat_id: str) -> bool:
        """This chat's container is running as far as this manager knows (for /status)."""
        return chat_id in self._containers

    def forget_containers(self) -> None:
        self._containers.clear()

    async def aclose(self) -> None:
        """Cancel the background status check, close the Docker client, release the data
        dir's owner lock."""
        await self.reaper.cancel()
        await self.close_link()
        self.reaper.release()

    # ------------------------------------------------------------- lifecycle

    def identity(self, chat_id: str) -> Identity:
        return Identity(validate_chat_id(chat_id), self.instance, self.version)

    async def ensure(self, chat_id: str) -> Any:
        """The chat's running container, created (and its workspace volume) on first use."""
        if not self.settings.enabled:
            raise SandboxUnavailable("The sandbox is disabled in this Rumi's configuration.")
        ident = self.identity(chat_id)
        lock = self._locks.setdefault(chat_id, asyncio.Lock())
        async with lock:
            known = self._containers.get(chat_id)
            if known is not None:
                return known
            try:
                client = await self.client()
                if self.reaper.pending:  # never create while a cleanup could take it for one
                    await self.reaper.remove_orphans(client, only_if_pending=True)
                container = await asyncio.to_thread(
                    containers.ensure, client, ident, self._plan,
                    lambda: self.workspaces.source(client, ident))
            except SandboxError:
                raise
            except ImageNotFound as exc:
                self.set_status((False, f"sandbox image {self.settings.image} not found"),
                                PROBLEM_IMAGE)
                raise SandboxUnavailable(
                    f"The sandbox image {self.settings.image} is missing; the operator must run "
                    "`rumi sandbox build`."
                ) from exc
            except ENGINE_ERRORS as exc:
                raise await self.engine_down(exc) from exc
            self._containers[chat_id] = container
            self.set_status((True, None))
            return container

    async def remove(
        self, chat_id: str, *, workspace: bool = False, only_if_idle: bool = False
    ) -> bool:
        """Remove the chat's container (the /reset and session-expiry path).

        The workspace survives unless `workspace=True`. Returns whether a container was
        removed. `only_if_idle` (the prune job) re-checks, under the chat's lock, that no
        command is running and none ran within idle_prune_minutes: the prune decided from a
        snapshot, and removing a container mid-command loses that command's result.
        """
        ident = self.identity(chat_id)
        lock = self._locks.setdefault(chat_id, asyncio.Lock())
        async with lock:
            if only_if_idle and not self._is_idle(chat_id):
                return False
            self._containers.pop(chat_id, None)
            self._last_used.pop(chat_id, None)
            try:
                client = await self.client()
                return await asyncio.to_thread(self._remove_sync, client, ident, workspace)
            except SandboxError:
                raise
            except ENGINE_ERRORS as exc:
                raise await self.engine_down(exc) from exc

    def _remove_sync(self, client: docker.DockerClient, ident: Identity, workspace: bool) -> bool:
        removed = containers.remove(client, ident, self.workspaces.is_ours)
        if workspace:
            self.workspaces.remove(client, ident)
        else:
            self.workspaces.release(client, ident)
        return removed

    async def prune_idle(self) -> list[str]:
        """Remove containers of chats idle longer than sandbox.idle_prune_minutes."""
        idle = [chat for chat in list(self._last_used) if self._is_idle(chat)]
        pruned = []
        for chat in idle:
            if await self.remove(chat, only_if_idle=True):
                pruned.append(chat)
        return pruned

    def _is_idle(self, chat_id: str) -> bool:
        """No command running in the chat and none for longer than idle_prune_minutes."""
        used = self._last_used.get(chat_id)
        if used is None or self._busy.get(chat_id):
            return False
        return self._clock() - used > self.settings.idle_prune_minutes * 60

    async def cleanup_orphans(self) -> list[str]:
        """Remove containers a previous run of *this* Rumi left behind (`start` calls this).

        Only containers labelled rumi.managed=1 and rumi.instance=<this data_dir> are touched,
        and none that a chat of this process is using; workspaces (volumes) are kept. Returns
        the removed container names.
        """
        try:
            client = await self.client()
            return await self.reaper.remove_orphans(client, only_if_pending=False)
        except ENGINE_ERRORS as exc:
            raise await self.engine_down(exc) from exc

    async def remove_all(self, *, wait: float | None = None) -> list[str]:  # noqa: ASYNC109
        """Remove every container of this Rumi, keeping the workspaces (`rumi run`/`rumi chat`
        call it as they exit, Ctrl-C and SIGTERM included): a container left running after its
        Rumi stopped holds memory and processes nobody can reach.

        Removals run side by side, and the stop waits for them `wait` seconds at most (default
        sandbox.stop_wait_seconds, 1 s), so a stop with 200 chats stays within a supervisor's
        10 s: those not removed by then are orphans the next start sweeps (their workspaces are
        kept either way). `wait=0` starts none. In `image` mode each workspace image is then
        unmounted, releasing its loop device. An engine that is down is logged, not raised, so
        shutdown goes on. Returns the containers removed."""
        if not self.settings.enabled:
            return []
        budget = self.stop_wait if wait is None else wait
        found, removed = 0, []
        owned_elsewhere = await self.reaper.owned_elsewhere()
        try:
            client = await self.client()
            found, removed = await self.reaper.remove_own(client, budget, owned_elsewhere)
        except ENGINE_ERRORS as exc:
            log.warning("could not stop this Rumi's sandboxes: %s", short(exc))
        else:
            self._containers.clear()
            self._last_used.clear()
            if found > len(removed):
                log.info("%d sandbox container(s) not removed within %.1f s of the stop: the "
                         "next start removes them (workspaces kept)", found - len(removed), budget)
        # a container left running still uses its image: it stays mounted until the next start
        if not owned_elsewhere and len(removed) == found:
            unmounted = await asyncio.to_thread(self.workspaces.unmount_images)
            if unmounted:
                log.info("unmounted %d workspace image(s)", len(unmounted))
        return removed

    async def list_workspaces(self) -> list[str]:
        """Names of this Rumi's workspace volumes (volume mode), in use or not."""
        return await self._call(self.workspaces.list_names)

    async def list_orphaned_images(self) -> list[str]:
        """This Rumi's workspace image stores whose workspace volume is gone (volume mode)."""
        return await self._call(self.workspaces.orphaned_images)

    async def remove_image_store(self, name: str) -> bool:
        """Delete one orphaned workspace image store (its files are lost)."""
        return await self._remove_named("workspace image", self.workspaces.remove_image_store,
                                         name)

    async def remove_workspace_volume(self, name: str) -> bool:
        """Delete one of this Rumi's workspace volumes (its files are lost); False when it is
        gone, foreign or still mounted by a container."""
        return await self._remove_named("workspace volume", self.workspaces.remove_volume, name)

    async def _remove_named(self, what: str, remover: Callable[[Any, str], bool],
                            name: str) -> bool:
        """The engine refusing (in use, gone) is a logged False, not an engine failure."""
        try:
            return await self._call(remover, name, passing=APIError)
        except APIError as exc:
            log.info("%s %s not removed: %s", what, name, short(exc))
            return False

    async def list_sandboxes(self, *, all_instances: bool = False) -> list[SandboxInfo]:
        """Rumi's containers on this engine (this instance's, or every Rumi's)."""
        labels = ["rumi.managed=1"]
        if not all_instances:
            labels.append(f"rumi.instance={self.instance}")
        found = await self._call(
            lambda client: client.containers.list(all=True, filters={"label": labels}))
        return [containers.info(c) for c in found]

    async def _call(self, blocking: Callable[..., T], *args: Any,
                    passing: type[Exception] | tuple[type[Exception], ...] = ()) -> T:
        """`blocking(client, *args)` in a thread; an engine failure (but the `passing` errors,
        raised as they are) marks the engine down and raises `SandboxUnavailable`."""
        try:
            client = await self.client()
            return await asyncio.to_thread(blocking, client, *args)
        except passing:
            raise
        except ENGINE_ERRORS as exc:
            raise await self.engine_down(exc) from exc

    # ------------------------------------------------------------------ exec

    async def exec(
        self, chat_id: str, command: str, timeout: float | None = None  # noqa: ASYNC109
    ) -> ExecResult:
        """Run a shell command line in the chat's container (bash -c, or sh -c).

        `timeout` (default sandbox.exec_timeout) is enforced inside the container and by a
        host-side sweep, so the processes really die; it is not an await timeout.
        """
        seconds = timeout if timeout is not None else self.settings.exec_timeout
        return await self.exec_argv(chat_id, wrap_command(command, seconds), seconds)

    async def exec_argv(
        self, chat_id: str, argv: list[str], timeout: float  # noqa: ASYNC109
    ) -> ExecResult:
        """Run an argv (no shell) in the chat's container with the same timeout guarantees.

        One command at a time per chat: when a command ends, every process left in the
        container is killed, which would take a concurrent command with it.
        """
        self._busy[chat_id] = self._busy.get(chat_id, 0) + 1
        self._last_used[chat_id] = self._clock()
        try:
            async with self._exec_locks.setdefault(chat_id, asyncio.Lock()):
                return await self._exec_once(chat_id, argv, timeout)
        finally:
            self._busy[chat_id] -= 1
            self._last_used[chat_id] = self._clock()

    async def _exec_once(self, chat_id: str, argv: list[str], timeout: float) -> ExecResult:  # noqa: ASYNC109
        note = ""
        for attempt in (1, 2, 3):
            container = await self.ensure(chat_id)
            try:
                result = await asyncio.to_thread(
                    run_in_container, container, argv, timeout,
                    user=self.settings.user, limit=self.settings.output_max_chars,
                )
            except ContainerNotRunning as exc:  # nothing ran: recreate and retry once
                self._containers.pop(chat_id, None)
                if attempt >= 2:
                    raise SandboxError("The sandbox container stopped; try again.") from exc
                continue
            except CannotFork as exc:  # nothing ran: the pids limit or memory is used up
                if note or attempt >= 3:
                    raise SandboxError(
                        "The sandbox cannot start new processes even after a restart."
                    ) from exc
                memory = isinstance(exc, OutOfMemory)
                log.warning("sandbox of chat %s cannot %s; recreating it", chat_id,
                            "start processes (memory used up)" if memory else "fork")
                await self.remove(chat_id)
                note = MEMORY_RESTARTED_NOTE if memory else RESTARTED_NOTE
                continue
            except (ContainerRemoved, NotFound) as exc:
                self._containers.pop(chat_id, None)
                raise SandboxError(
                    "The sandbox container was stopped or removed while the command ran, "
                    "so its result is lost; it was not run again (files in /workspace are "
                    "kept). Check what it did before running it again."
                ) from exc
            except ENGINE_ERRORS as exc:
                raise await self.engine_down(exc) from exc
            if result.container_killed:
                self._containers.pop(chat_id, None)
            elif (result.exit_code == 137 and not result.timed_out
                  and not await self._still_runs(container)):
                log.warning("sandbox of chat %s cannot run anything (memory used up); "
                            "recreating it", chat_id)
                await self.remove(chat_id)
                note = KILLED_RESTARTED_NOTE
            return dataclasses.replace(result, note=note) if note else result
        raise AssertionError("unreachable")

    async def _still_runs(self, container: Any) -> bool:
        """After a SIGKILLed command: can the container still run a process?"""
        try:
            return await asyncio.to_thread(can_run, container, self.settings.user)
        except ENGINE_ERRORS as exc:
            raise await self.engine_down(exc) from exc

    async def put_archive(self, chat_id: str, directory: str, data: bytes) -> None:
        """Extract a tar into the container (used by write_file; runs as the daemon)."""
        self._last_used[chat_id] = self._clock()
        container = await self.ensure(chat_id)
        try:
            ok = await asyncio.to_thread(container.put_archive, directory, data)
        except NotFound as exc:
            raise SandboxError(f"Directory {directory} does not exist in the sandbox.") from exc
        except APIError as exc:
            raise SandboxError(f"Could not write into the sandbox: {exc.explanation}") from exc
        except ENGINE_ERRORS as exc:
            raise await self.engine_down(exc) from exc
        if not ok:
            raise SandboxError("Could not write into the sandbox.")


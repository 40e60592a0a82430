"""Sandbox fixtures: real Docker engine, unique chat ids, teardown by container/volume name."""

from __future__ import annotations

import asyncio
import contextlib
import os
import tempfile
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import pytest
from docker.errors import NotFound

import docker
from rumi.config import SandboxSettings
from rumi.sandbox.manager import SandboxManager
from tests.conftest import SANDBOX_TEST_IMAGE

pytestmark = pytest.mark.docker


class FakeClock:
    """Monotonic time the test moves by hand (idle prune without sleeping)."""

    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def docker_client(docker_engine: None) -> Iterator[docker.DockerClient]:
    client = docker.from_env()
    try:
        yield client
    finally:
        client.close()


@pytest.fixture
def chat_ids(docker_client: docker.DockerClient) -> Iterator[Callable[[], str]]:
    """Unique chat ids for this test; their containers and volumes are removed afterwards."""
    prefix = f"t{uuid.uuid4().hex[:10]}"
    made: list[str] = []

    def new() -> str:
        chat = f"{prefix}_{len(made)}"
        made.append(chat)
        return chat

    yield new
    for chat in made:
        with contextlib.suppress(NotFound):
            docker_client.containers.get(f"rumi-sbx-{chat}").remove(force=True)
        with contextlib.suppress(NotFound):
            docker_client.volumes.get(f"rumi-ws-{chat}").remove(force=True)


@pytest.fixture
def sandbox_settings() -> Callable[..., SandboxSettings]:
    def make(**overrides: object) -> SandboxSettings:
        values: dict[str, object] = {"image": SANDBOX_TEST_IMAGE, "exec_timeout": 10.0}
        values.update(overrides)
        return SandboxSettings(**values)

    return make


@pytest.fixture
async def make_manager(
    data_dir: Path, sandbox_settings: Callable[..., SandboxSettings], docker_engine: None
) -> AsyncIterator[Callable[..., SandboxManager]]:
    managers: list[SandboxManager] = []

    def make(**kwargs: object) -> SandboxManager:
        settings = kwargs.pop("settings", None) or sandbox_settings()
        manager = SandboxManager(settings, kwargs.pop("data_dir", data_dir), **kwargs)
        managers.append(manager)
        return manager

    yield make
    for manager in managers:
        await manager.aclose()


@pytest.fixture
async def manager(make_manager: Callable[..., SandboxManager]) -> SandboxManager:
    return make_manager()


def docker_socket_path() -> str:
    host = os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")
    return host.removeprefix("unix://")


class SocketRelay:
    """A unix-socket proxy to the real Docker socket that a test can cut, like a dead daemon.

    Stopping it closes every open connection too, so a client mid-session sees the engine go.
    """

    def __init__(self, path: Path, upstream: str) -> None:
        self.path = path
        self.upstream = upstream
        self._server: asyncio.AbstractServer | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self._tasks: set[asyncio.Task[None]] = set()

    async def start(self) -> SocketRelay:
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()
        self._server = await asyncio.start_unix_server(self._handle, path=str(self.path))
        return self

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_unix_connection(self.upstream)
        except OSError:
            writer.close()
            return
        self._writers.update((writer, up_writer))
        for src, dst in ((reader, up_writer), (up_reader, writer)):
            task = asyncio.create_task(self._pipe(src, dst))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    @staticmethod
    async def _pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
        try:
            while data := await src.read(65536):
                dst.write(data)
                await dst.drain()
        except (ConnectionError, OSError):
            pass
        finally:
            with contextlib.suppress(Exception):
                if dst.can_write_eof():
                    dst.write_eof()

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
            self._server = None
        for writer in list(self._writers):
            writer.close()
        self._writers.clear()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()


@pytest.fixture
async def docker_relay(docker_engine: None) -> AsyncIterator[SocketRelay]:
    short_dir = Path(tempfile.mkdtemp(prefix="rumi-relay-"))  # unix socket paths max ~107 bytes
    relay = await SocketRelay(short_dir / "docker.sock", docker_socket_path()).start()
    try:
        yield relay
    finally:
        await relay.stop()
        short_dir.rmdir()

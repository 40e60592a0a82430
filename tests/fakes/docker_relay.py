"""A cuttable path to the real Docker engine: how tests make "the daemon stopped" happen.

Stopping the shared dockerd is not an option (CI and other test runs use it), so a test points
its client (or `DOCKER_HOST`) at this relay and stops the relay instead: every open connection
closes and new ones are refused, which is what a client sees when the daemon dies.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from pathlib import Path


def docker_socket_path() -> str:
    """The real engine's unix socket (read before a test points DOCKER_HOST at a relay)."""
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
        # Close the open connections before waiting: from Python 3.12.1 `wait_closed` waits
        # for them, and the Docker client keeps its keep-alive connection open.
        if self._server is not None:
            self._server.close()
        for writer in list(self._writers):
            writer.close()
        self._writers.clear()
        if self._server is not None:
            await self._server.wait_closed()
            self._server = None
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()

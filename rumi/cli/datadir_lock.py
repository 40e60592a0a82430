"""One data dir, one Rumi: `rumi run` and `rumi chat` hold `data_dir/.rumi.lock` while they run.

Two Rumis on one data dir would both fire the same reminders, both sync the same MEMORY.md,
append to the same tapes and sweep each other's sandbox containers as "orphans". The lock is an
exclusive `flock` (the kernel drops it however the holder dies, so it is never stale); the
holder writes its pid and command line into the file so the one that is refused can say who
holds it.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import os
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

from rumi.config import Settings
from rumi.fileio import try_lock

LOCK_NAME = ".rumi.lock"
_MAX_COMMAND = 200


class DataDirBusy(Exception):
    """Another running process holds this data dir; the message is the one line to print."""


@dataclass
class DataDirLock:
    """The held lock; `release()` (or the process ending) frees the data dir."""

    path: Path
    fd: int | None

    def release(self) -> None:
        if self.fd is not None:
            with contextlib.suppress(OSError):
                os.ftruncate(self.fd, 0)
            with contextlib.suppress(OSError):
                os.close(self.fd)
            self.fd = None


def acquire(data_dir: Path) -> DataDirLock:
    """Hold the data dir or raise `DataDirBusy` naming the process that holds it."""
    path = Path(data_dir).expanduser() / LOCK_NAME
    fd = try_lock(path)
    if fd is None:
        raise DataDirBusy(
            f"another Rumi is already running on {path.parent} ({_holder(path)}); "
            "stop it first, or give this one its own data_dir")
    with contextlib.suppress(OSError):
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n{_own_command()}\n".encode(), 0)
    return DataDirLock(path, fd)


Handler = Callable[[argparse.Namespace, Settings], Awaitable[int]]


def holding_data_dir(handler: Handler) -> Handler:
    """Run a long-lived command (`rumi run`, `rumi chat`) only while it holds the data dir;
    refused with one line on stderr and exit code 1 when another Rumi holds it."""

    @functools.wraps(handler)
    async def run(args: argparse.Namespace, settings: Settings) -> int:
        try:
            held = acquire(settings.data_dir)
        except DataDirBusy as exc:
            print(f"rumi: {exc}", file=sys.stderr)
            return 1
        try:
            return await handler(args, settings)
        finally:
            held.release()

    return run


def _own_command() -> str:
    try:
        raw = Path("/proc/self/cmdline").read_bytes()
        parts = [p.decode(errors="replace") for p in raw.split(b"\0") if p]
    except OSError:
        parts = [sys.executable, *sys.argv]
    return " ".join(parts)[:_MAX_COMMAND]


def _holder(path: Path) -> str:
    """'pid 1234: rumi run --config …' from the lock file, as far as it can be read."""
    try:
        pid, _, command = path.read_text(encoding="utf-8", errors="replace").partition("\n")
    except OSError:
        return "pid unknown"
    pid, command = pid.strip(), command.strip()
    if not pid.isdigit():
        return "pid unknown"  # it is still starting: it writes its pid right after locking
    return f"pid {pid}: {command}" if command else f"pid {pid}"

"""Is a Rumi running on this data dir right now? An advisory lock answers it.

The running Rumi holds an exclusive `flock` on `data_dir/.sandbox-owner.lock` from start to
exit. The kernel drops it when the process dies however it dies (SIGKILL, power loss), so
`rumi sandbox prune` can tell containers a live Rumi is using from orphans a killed one left
running, without trusting a pid file that outlives its process.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from rumi.fileio import try_lock

LOCK_NAME = ".sandbox-owner.lock"


def take(data_dir: Path) -> int | None:
    """The open, locked file descriptor, or None when another process holds the lock."""
    return try_lock(Path(data_dir) / LOCK_NAME)


def release(fd: int | None) -> None:
    if fd is not None:
        with contextlib.suppress(OSError):
            os.close(fd)  # closing the descriptor drops the flock


def held_elsewhere(data_dir: Path) -> bool:
    """True while a running Rumi (another process, or another manager here) holds the lock."""
    fd = take(data_dir)
    release(fd)
    return fd is None

"""Atomic file replacement, the one way Rumi rewrites a file a person or a restart will read.

Temp file in the same directory + fsync + rename: a reader (or Rumi after a crash) sees the old
file or the new one, never half of either. Blocking: async callers use `asyncio.to_thread`.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Callable
from pathlib import Path


def atomic_write_bytes(
    path: Path, data: bytes, *, sync_dir: bool = False,
    only_if: Callable[[], bool] | None = None,
) -> bool:
    """Replace `path` with `data`; `sync_dir` also makes the rename itself durable.

    `only_if` is checked after the new data is on disk and right before the rename, so the
    window in which a concurrent writer can slip in is one check and one rename wide; when it
    returns False nothing is replaced and the result is False.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        if only_if is not None and not only_if():
            Path(tmp).unlink(missing_ok=True)
            return False
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    if sync_dir:
        fsync_dir(path.parent)
    return True


def atomic_write_text(path: Path, text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8"))


def fsync_dir(directory: Path) -> None:
    """Persist a directory entry (a rename, a new file) across a power cut."""
    dir_fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def sha256_file(path: Path) -> str:
    """Hex SHA-256 of a file, read in 1 MiB blocks (model and index files are large)."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()

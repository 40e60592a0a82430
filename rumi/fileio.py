"""Atomic file replacement, the one way Rumi rewrites a file a person or a restart will read.

Temp file in the same directory + fsync + rename: a reader (or Rumi after a crash) sees the old
file or the new one, never half of either. Blocking: async callers use `asyncio.to_thread`.
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import json
import os
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any


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


DISK_FULL_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT})
PROBE_BYTES = 64 * 1024


def is_disk_full(exc: BaseException | None) -> bool:
    """Whether `exc` (or what caused it) is a full disk: no bytes or no inodes left (ENOSPC),
    a quota reached (EDQUOT), or SQLite's "database or disk is full"."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, OSError) and exc.errno in DISK_FULL_ERRNOS:
            return True
        if type(exc).__name__ == "OperationalError" and "disk is full" in str(exc):
            return True
        if isinstance(exc, BaseExceptionGroup):
            return any(is_disk_full(inner) for inner in exc.exceptions)
        exc = exc.__cause__ or exc.__context__
    return False


def has_room(directory: Path, size: int = PROBE_BYTES) -> bool:
    """Whether a new file of `size` bytes can be written in `directory` now (it needs an
    inode and blocks, like the writes a message needs; filesystems reserve blocks at write
    time, so no fsync is needed); the probe is removed (blocking)."""
    try:
        fd, name = tempfile.mkstemp(prefix=".rumi-room-", dir=directory)
    except OSError as exc:
        if is_disk_full(exc):
            return False
        raise
    try:
        written = 0
        while written < size:
            written += os.write(fd, b"\0" * (size - written))
        return True
    except OSError as exc:
        if is_disk_full(exc):
            return False
        raise
    finally:
        os.close(fd)
        os.unlink(name)


def unused_path(path: Path) -> Path:
    """`path`, or `<name>-2`, `-3`… beside it: where something set aside may go without
    replacing what an earlier run set aside there (blocking)."""
    candidate, n = path, 1
    while candidate.exists():
        n += 1
        candidate = path.with_name(f"{path.name}-{n}")
    return candidate


def read_json_lines(path: Path) -> list[dict[str, Any]]:
    """Every readable object line of a JSON-lines file, in order: a line torn by a crash (or
    anything that is not an object) is skipped, the rest is still good. Blocking."""
    records: list[dict[str, Any]] = []
    try:
        with open(path, "rb") as fh:
            for raw in fh:
                try:
                    value = json.loads(raw)
                except ValueError:
                    continue
                if isinstance(value, dict):
                    records.append(value)
    except FileNotFoundError:
        pass
    return records


def try_lock(path: Path) -> int | None:
    """An open descriptor holding an exclusive `flock` on `path` (created 600, its directory
    700), or None when another process holds it. The kernel drops the lock when the last copy
    of the descriptor closes, so a killed holder never leaves it stale."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    return fd


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


WHOLE_FILE = 1 << 62  # read_bounded's limit for a file that must be read whole


class UnreadableFile(OSError):
    """A path Rumi refuses to read: not a regular file (a FIFO would block forever, a device
    could stream without end) or larger than the reader's limit. The message says which."""


def read_bounded(path: Path, limit: int) -> tuple[bytes, int]:
    """(at most `limit` bytes of `path`, the file's full size). Blocking.

    Opened non-blocking and checked with fstat on the opened descriptor (no race between a
    check and the open): anything but a regular file raises UnreadableFile. FileNotFoundError
    passes through.
    """
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | getattr(os, "O_CLOEXEC", 0))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise UnreadableFile(f"{path.name} no es un archivo normal ({_kind(st.st_mode)})")
        chunks: list[bytes] = []
        left = limit
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks), st.st_size
    finally:
        os.close(fd)


class ArchiveFileTooLarge(Exception):
    """A local archive file is bigger than allowed; `size` is how many bytes were seen."""

    def __init__(self, size: int) -> None:
        super().__init__(f"the file is too large ({size} bytes)")
        self.size = size


class NotARegularFile(OSError):
    """The path exists but is a directory, pipe or device: nothing to read as an archive."""


def read_archive_file(path: Path, max_bytes: int) -> bytes:
    """The bytes of a local archive file, for the terminal's `/import <path>` and `rumi import`.

    One reader so both refuse the same files the same way. Blocking: run it with
    `asyncio.to_thread`. A missing path raises `FileNotFoundError` and anything but a regular
    file `NotARegularFile` (reading a pipe or device could block forever). The size is checked
    before reading, so an oversized file is never loaded, and at most `max_bytes + 1` bytes are
    read, so a file that grows meanwhile cannot make us hold more; either way
    `ArchiveFileTooLarge`. Any other failure is the `OSError` itself.
    """
    if path.is_dir():
        raise NotARegularFile(errno.EISDIR, os.strerror(errno.EISDIR), str(path))
    # O_NONBLOCK: opening a pipe swapped in after a check must not block; the checks below
    # are made on what was really opened
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    with os.fdopen(fd, "rb") as fh:
        info = os.fstat(fh.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise NotARegularFile(errno.EINVAL, "not a regular file", str(path))
        if info.st_size > max_bytes:
            raise ArchiveFileTooLarge(info.st_size)
        data = fh.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise ArchiveFileTooLarge(len(data))
    return data


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "es una FIFO"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "es un dispositivo"
    if stat.S_ISSOCK(mode):
        return "es un socket"
    if stat.S_ISDIR(mode):
        return "es un directorio"
    return "tipo desconocido"


def ensure_private_dir(path: Path) -> Path:
    """Create `path` (and missing parents) readable by its owner only, before anything else
    writes into it: the data dir holds every chat's memory, so it is 0700 from its first
    moment rather than 0755 until someone runs `chmod`. An existing directory is left as the
    person set it (doctor reports a too-open one)."""
    path = Path(path).expanduser()
    if not path.is_dir():
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        os.chmod(path, 0o700)  # mkdir's mode is filtered by the umask
    return path

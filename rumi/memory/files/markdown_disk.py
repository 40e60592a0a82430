"""MEMORY.md on disk: read with a size bound, replaced only if nobody saved meanwhile.

A FIFO or a huge file is refused rather than read; a write never lands over a save the
person made between Rumi's read and its rename.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from rumi import messages as msg
from rumi.fileio import UnreadableFile, atomic_write_bytes, read_bounded

MAX_FILE_BYTES = 4 * 1024 * 1024  # far above any real MEMORY.md; a bigger one is refused, not read


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def is_blank(data: bytes | None) -> bool:
    return data is not None and not data.removeprefix(b"\xef\xbb\xbf").strip()


def read_bytes(path: Path) -> bytes | None:
    """The file's bytes, None if absent; UnreadableFile for a FIFO/device or an oversize file
    (a FIFO used to hang /remember, and Ctrl-C with it)."""
    try:
        data, size = read_bounded(path, MAX_FILE_BYTES)
    except FileNotFoundError:
        return None
    if size > MAX_FILE_BYTES:
        raise UnreadableFile(msg.MD_TOO_LARGE.format(size=msg.format_number(size),
                                                     max=msg.format_number(MAX_FILE_BYTES)))
    return data


def replace_if_unchanged(path: Path, data: bytes, expect: bytes | None) -> bool:
    """Atomically replace `path` with `data` only if it still holds `expect` (None: absent).

    Not a write after a separate check: the new file is written and fsynced first, so a save
    can only slip in between one read and one rename, never during an fsync or an event-loop
    turn (a save landing there used to be overwritten and lost). `path` is never absent, so
    readers (export, editors) always find a whole file.
    """
    def unchanged() -> bool:
        try:
            return read_bytes(path) == expect
        except UnreadableFile:
            return False

    return atomic_write_bytes(path, data, only_if=unchanged)

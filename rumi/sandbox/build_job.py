"""Where a sandbox image build leaves its trace, and the lock that keeps it to one at a time.

`rumi setup` starts a missing image's build in the background and goes on (the bot answers
meanwhile, without command tools), so the build must be visible afterwards from outside the
process that started it: its output goes to `<data_dir>/logs/sandbox-build.log`, and while it
runs it holds an exclusive `flock` on a lock file of its tag. A second setup or `rumi sandbox
build` of the same tag finds the lock taken instead of starting a second build, and doctor
says "being built". A lock the kernel holds (not a pid file) is released by a crash too, so a
killed build never leaves the image "being built" forever.
"""

from __future__ import annotations

import fcntl
import os
import re
from dataclasses import dataclass
from pathlib import Path

from rumi.fileio import try_lock

LOG_NAME = "sandbox-build.log"
FINISHED_OK = "rumi: sandbox image built: "
FINISHED_FAILED = "rumi: sandbox image build failed: "


@dataclass(frozen=True)
class BuildFiles:
    """The log (one per data dir: the last background build's) and the lock of one tag."""

    log: Path
    lock: Path

    @classmethod
    def of(cls, data_dir: Path, tag: str) -> BuildFiles:
        logs = Path(data_dir).expanduser() / "logs"
        safe = re.sub(r"[^A-Za-z0-9_.-]", "_", tag)
        return cls(log=logs / LOG_NAME, lock=logs / f"sandbox-build-{safe}.lock")


def take_lock(files: BuildFiles) -> int | None:
    """An open descriptor holding the tag's lock, or None when a build already holds it.

    The descriptor is the lock: pass it to the build process (`pass_fds`) and the lock lives
    as long as that process keeps it open, whoever else closes their copy."""
    return try_lock(files.lock)


def being_built(files: BuildFiles) -> bool:
    """True while some process holds the tag's build lock."""
    if not files.lock.exists():
        return False
    try:
        fd = os.open(files.lock, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


def last_failure(files: BuildFiles, tag: str) -> bool:
    """The log's last background build was of `tag` and failed (or died before finishing)."""
    try:
        text = files.log.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    header = text.rfind(started_line(tag))
    if header < 0 or text.rfind("rumi: building sandbox image ") > header:
        return False
    return FINISHED_OK + tag not in text[header:]


def started_line(tag: str) -> str:
    return f"rumi: building sandbox image {tag}\n"

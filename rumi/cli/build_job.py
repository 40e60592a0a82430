"""Building the sandbox image off the critical path: a detached child that outlives `rumi
setup`, logging to `<data_dir>/logs/sandbox-build.log` and holding the tag's build lock.

The image takes a minute (online) to several (offline, or on a Pi) to build, and the bot
needs none of it to answer: `SandboxManager.available()` re-checks the image lazily, so the
command tools appear once it exists. Setup therefore starts the build and goes on.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from rumi.sandbox.build_job import (
    FINISHED_FAILED,
    FINISHED_OK,
    BuildFiles,
    started_line,
    take_lock,
)

CHILD = "import sys; from rumi.cli.build_job import child_main; sys.exit(child_main())"


@dataclass(frozen=True)
class Background:
    """What `start_background` did: started a build (`pid`), or found one running."""

    log: Path
    pid: int | None

    @property
    def started(self) -> bool:
        return self.pid is not None


def start_background(tag: str, data_dir: Path, *, minimal: bool = False) -> Background:
    """Start a detached build of `tag` (its own session: Ctrl-C on setup or setup's exit does
    not stop it) unless one already holds the tag's lock. The lock is taken here and handed to
    the child, so two setups started together cannot both start one."""
    files = BuildFiles.of(data_dir, tag)
    fd = take_lock(files)
    if fd is None:
        return Background(files.log, None)
    try:
        stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
        with files.log.open("a", encoding="utf-8") as log:
            os.chmod(files.log, 0o600)
            log.write(f"\n{stamp} " + started_line(tag))
            log.flush()
            argv = [sys.executable, "-c", CHILD, tag, str(fd), *(["--minimal"] if minimal else [])]
            child = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log,
                                     stderr=subprocess.STDOUT, pass_fds=(fd,),
                                     start_new_session=True, close_fds=True)
    finally:
        os.close(fd)  # the child keeps its copy, and with it the lock, until it exits
    return Background(files.log, child.pid)


def child_main(argv: list[str] | None = None) -> int:
    """The background build itself: `python -c CHILD TAG LOCK_FD [--minimal]`. Docker's whole
    output goes to the log; the last line says how it ended (doctor reads it)."""
    tag, _fd, *rest = sys.argv[1:] if argv is None else argv
    from rumi.cli.image_build import build_with_fallback

    code = asyncio.run(build_with_fallback(tag, minimal="--minimal" in rest, verbose=True))
    ending = FINISHED_OK + tag if code == 0 else f"{FINISHED_FAILED}{tag} (exit {code})"
    print(ending, file=sys.stderr, flush=True)
    return code


def already_running(tag: str, log: Path) -> str:
    """One line for a build that found the tag's lock taken."""
    return (f"a build of {tag} is already running (log: {log}); its tools appear when it "
            "ends, `rumi doctor` says how it went")


async def build_in_foreground(tag: str, data_dir: Path, **options: object) -> int:
    """`rumi sandbox build` and `rumi setup --wait-for-image`: the same build, waited for, under
    the same lock (a data dir that cannot hold the lock file builds without it)."""
    from rumi.cli.image_build import build_with_fallback

    files = BuildFiles.of(data_dir, tag)
    try:
        fd = await asyncio.to_thread(take_lock, files)
    except OSError:
        return await build_with_fallback(tag, **options)  # type: ignore[arg-type]
    if fd is None:
        print(f"rumi: {already_running(tag, files.log)}", file=sys.stderr)
        return 1
    try:
        return await build_with_fallback(tag, **options)  # type: ignore[arg-type]
    finally:
        os.close(fd)

"""A chat's workspace as a fixed-size ext4 image, loop-mounted on the host (workspace_mode="image").

Why: Docker caps a volume only on XFS with project quotas; on ext4 (every Raspberry Pi OS
install) a chat could fill the host's disk or its inode table. A filesystem of its own is a
limit the kernel enforces: writing past it fails with ENOSPC inside the sandbox, and its inode
table (ext4's default ratio, one per 16 KiB: 65,536 per GiB) bounds the file count. The image is
sparse, so it costs the host only what the chat really wrote.

Every function here blocks (subprocess, mount): call them through `asyncio.to_thread`. Mounting
needs root on the host (see docs/sandbox.md).
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

log = logging.getLogger(__name__)

MOUNT_OPTIONS = "loop,nosuid,nodev"
BYTES_PER_INODE = 16384  # ext4's default ratio, fixed so small images are bounded the same way
_TIMEOUT = 120


class DiskImageError(Exception):
    """The workspace image could not be created, mounted or filled; phrased for the operator."""


def image_path(chat_dir: Path) -> Path:
    return chat_dir / "workspace.img"


def ensure_mounted(chat_dir: Path, size: int, owner: str, legacy: Path | None = None) -> Path:
    """The chat's workspace directory with its image mounted on it (created on first use).

    Files that were there before (a `bind` workspace at the same path, or `legacy`, the host
    directory of an old workspace volume) are copied into a new image once; a bind workspace's
    old directory is removed only after the copy succeeded. Returns the mount point.
    """
    mountpoint = chat_dir / "workspace"
    if os.path.ismount(mountpoint):
        return mountpoint
    image = image_path(chat_dir)
    chat_dir.mkdir(parents=True, exist_ok=True)
    fresh = not image.exists()
    previous: Path | None = legacy if legacy is not None and legacy.is_dir() else None
    if mountpoint.is_dir() and any(mountpoint.iterdir()):
        if not fresh:
            raise DiskImageError(
                f"{mountpoint} holds files but is not the mounted {image.name}; move them away "
                "(or into the image) before this chat's sandbox can start"
            )
        previous = mountpoint.with_name("workspace.migrating")
        mountpoint.rename(previous)
    if fresh:
        _make_image(image, size, owner)
    mountpoint.mkdir(exist_ok=True)
    try:
        _run(["mount", "-o", MOUNT_OPTIONS, str(image), str(mountpoint)], "mount the image")
        with contextlib.suppress(OSError):
            (mountpoint / "lost+found").rmdir()
        if fresh and previous is not None:
            _copy_in(previous, mountpoint)
    except DiskImageError:
        if fresh:
            unmount(mountpoint)
            image.unlink(missing_ok=True)
            if previous is not None and previous.name == "workspace.migrating":
                mountpoint.rmdir()
                previous.rename(mountpoint)
        raise
    if previous is not None and previous.name == "workspace.migrating":
        shutil.rmtree(previous, ignore_errors=True)
    return mountpoint


@contextlib.contextmanager
def mounted_readonly(image: Path, mountpoint: Path) -> Iterator[Path]:
    """Another workspace's image (a limited volume's) mounted read-only, to copy from."""
    mountpoint.mkdir(parents=True, exist_ok=True)
    _run(["mount", "-o", "loop,ro,noload,nosuid,nodev", str(image), str(mountpoint)],
         "mount the old workspace's image")
    try:
        yield mountpoint
    finally:
        unmount(mountpoint)
        with contextlib.suppress(OSError):
            mountpoint.rmdir()


def unmount(mountpoint: Path) -> None:
    """Unmount if mounted (the loop device is released with it)."""
    if os.path.ismount(mountpoint):
        _run(["umount", str(mountpoint)], "unmount the workspace")


def destroy(chat_dir: Path) -> None:
    """Unmount and delete the chat's image and mount point (the workspace's files are gone)."""
    mountpoint = chat_dir / "workspace"
    unmount(mountpoint)
    image_path(chat_dir).unlink(missing_ok=True)
    shutil.rmtree(mountpoint, ignore_errors=True)


def _make_image(image: Path, size: int, owner: str) -> None:
    with open(image, "wb") as handle:  # sparse: the host pays only for what is written
        handle.truncate(size)
    try:
        _run(["mkfs.ext4", "-q", "-F", "-m", "0", "-i", str(BYTES_PER_INODE), "-E",
              f"root_owner={owner}", str(image)],
             "format the image")
    except DiskImageError:
        image.unlink(missing_ok=True)
        raise


def _copy_in(source: Path, mountpoint: Path) -> None:
    log.info("migrating workspace %s into its image", source)
    _run(["cp", "-a", "--", f"{source}/.", f"{mountpoint}/"],
         f"copy the existing workspace ({source}) into the image; is it larger than "
         "sandbox.workspace_size?")


def _run(argv: list[str], what: str) -> None:
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=_TIMEOUT, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise DiskImageError(f"could not {what}: {exc}") from exc
    if done.returncode != 0:
        detail = (done.stderr or done.stdout).strip().splitlines()
        reason = detail[-1] if detail else f"exit code {done.returncode}"
        if argv[0] == "mount" and os.geteuid() != 0:
            reason += " (workspace_mode = \"image\" needs Rumi to run as root on the host)"
        raise DiskImageError(f"could not {what}: {reason}")

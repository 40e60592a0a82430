"""`rumi backup` / `rumi restore`: the whole data dir as one `.tar.gz`, safe while Rumi runs.

`rumi.db` is copied with SQLite's online backup API (a consistent snapshot even mid-write, WAL
included), never by copying the file; everything else under data_dir is added as it is, except
what is derived or would recurse: the vector index (rebuilt from the database), the backups
themselves, chats' sandbox workspaces (unless asked: `--workspaces`), files already set aside
(`*.corrupt-*`, `*.stale-*`, `*.before-restore-*`) and a `config.toml` in data_dir (it holds
secrets). Restoring never deletes: whatever the archive
replaces (and the vector index, which named the old rows) is renamed
`<name>.before-restore-<time>` first. Blocking: call in a thread.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import tarfile
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from rumi.fileio import ensure_private_dir, fsync_dir, unused_path

log = logging.getLogger(__name__)

DB_NAME = "rumi.db"
PREFIX = "rumi-backup-"
SKIP_TOP = {"vectors", "backups", "config.toml", f"{DB_NAME}-wal", f"{DB_NAME}-shm", DB_NAME}
WORKSPACE_NAMES = frozenset({"workspace", "workspace.img", "workspace.migrating", "workspace.old"})
SKIP_MARKS = (".corrupt-", ".stale-", ".before-restore-", ".restoring-")


class RestoreRejected(ValueError):
    """The archive is not a Rumi backup, or would write outside the data dir."""


@dataclass(frozen=True)
class BackupInfo:
    path: Path
    files: int
    size: int


def _is_workspace(rel: str) -> bool:
    """A chat's sandbox workspace (its directory, image or a migration leftover)."""
    parts = rel.split("/", 3)
    return len(parts) >= 3 and parts[0] == "chats" and parts[2] in WORKSPACE_NAMES


def _files(data_dir: Path, workspaces: bool) -> list[Path]:
    """Regular files under data_dir, sorted. An explicit stack, not rglob or os.walk (both
    recurse in Python 3.11): a 1,500-deep directory must not raise RecursionError. Symlinks
    and other filesystems (a mounted workspace image) are never followed: a folder on another
    device than its parent is a mount point. That is os.path.ismount's own test, done with the
    parent's device at hand; ismount resolves the whole path first, which at 1,500 levels made
    one backup take minutes."""
    found: list[Path] = []
    try:
        top_device = os.stat(data_dir).st_dev
    except OSError:
        return found
    stack: list[tuple[str, str, int]] = [(str(data_dir), "", top_device)]
    while stack:
        folder, rel_folder, device = stack.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            rel = f"{rel_folder}/{entry.name}" if rel_folder else entry.name
            if ((not rel_folder and entry.name in SKIP_TOP)
                    or any(mark in entry.name for mark in SKIP_MARKS)
                    or (not workspaces and _is_workspace(rel))):
                continue
            if entry.is_dir(follow_symlinks=False):
                try:
                    inner = entry.stat(follow_symlinks=False).st_dev
                except OSError:
                    continue
                if workspaces or inner == device:
                    stack.append((entry.path, rel, inner))
            elif entry.is_file(follow_symlinks=False):
                found.append(Path(entry.path))
    return sorted(found)


def make_backup(data_dir: Path, out_dir: Path, *, stamp: str | None = None,
                workspaces: bool = False) -> BackupInfo:
    """Write `out_dir/rumi-backup-<time>.tar.gz` atomically; returns where and how big.

    Chats' sandbox workspaces (up to `workspace_size` each, a whole disk image in image mode)
    are left out unless `workspaces` is set: memory is what a backup must hold."""
    stamp = stamp or time.strftime("%Y%m%d-%H%M%S", time.gmtime())
    out_dir.mkdir(parents=True, exist_ok=True)
    target = out_dir / f"{PREFIX}{stamp}.tar.gz"
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=out_dir)
    os.close(fd)
    files = 0
    try:
        with (tempfile.TemporaryDirectory(prefix="rumi-backup-") as scratch,
              tarfile.open(tmp, "w:gz") as tar):
            db = data_dir / DB_NAME
            if db.exists():
                copy = Path(scratch) / DB_NAME
                source = sqlite3.connect(db, timeout=30)
                dest = sqlite3.connect(copy)
                try:
                    source.backup(dest)
                finally:
                    dest.close()
                    source.close()
                tar.add(copy, arcname=DB_NAME)
                files += 1
            for path in _files(data_dir, workspaces):
                rel = PurePosixPath(path.relative_to(data_dir).as_posix())
                if out_dir.resolve() in path.resolve().parents:
                    continue
                try:
                    tar.add(path, arcname=str(rel), recursive=False)
                except FileNotFoundError:   # replaced while we read (atomic writes)
                    continue
                files += 1
        with open(tmp, "rb") as handle:
            os.fsync(handle.fileno())
        os.replace(tmp, target)
        fsync_dir(out_dir)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return BackupInfo(target, files, target.stat().st_size)


def prune_backups(out_dir: Path, keep_days: float, now: float | None = None) -> list[Path]:
    """Delete this folder's own daily backups older than `keep_days` (never the newest one)."""
    now = time.time() if now is None else now
    backups = sorted(out_dir.glob(f"{PREFIX}*.tar.gz"), key=lambda p: p.stat().st_mtime)
    removed = []
    for path in backups[:-1]:
        if now - path.stat().st_mtime > keep_days * 86_400:
            path.unlink()
            removed.append(path)
    return removed


def restore_backup(archive: Path, data_dir: Path) -> list[str]:
    """Unpack `archive` into data_dir; what it replaces is renamed aside first. Stop Rumi
    before restoring. Returns the top-level names restored."""
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
    ensure_private_dir(data_dir)
    staging = data_dir / f".restoring-{stamp}"
    with tarfile.open(archive, "r:gz") as tar:
        members = tar.getmembers()
        names = {m.name for m in members}
        if DB_NAME not in names:
            raise RestoreRejected(f"{archive.name} is not a Rumi backup (no {DB_NAME})")
        for member in members:
            rel = PurePosixPath(member.name)
            if rel.is_absolute() or ".." in rel.parts or not (member.isfile() or member.isdir()):
                raise RestoreRejected(f"unsafe entry in the archive: {member.name!r}")
        tar.extractall(staging, filter="data")
    top = sorted(p.name for p in staging.iterdir())
    for name in [*top, f"{DB_NAME}-wal", f"{DB_NAME}-shm", "vectors"]:
        current = data_dir / name
        if current.exists():
            current.rename(unused_path(data_dir / f"{name}.before-restore-{stamp}"))
    for name in top:
        (staging / name).rename(data_dir / name)
    staging.rmdir()
    fsync_dir(data_dir)
    log.warning("restored %s into %s (replaced files kept as *.before-restore-%s)",
                archive.name, data_dir, stamp)
    return top

"""A chat's memory as one portable `.tar.gz`, and the careful way back in.

Export packs `.smma/` (editable files and the tape), `memory/` (MEMORY.md, daily logs,
snapshots), `memories.jsonl` (the store's export) and `manifest.json` (versions, sizes and
sha256 of every file). Import trusts nothing: `safety.validate_archive` checks the whole
archive before anything is written; files are then staged next to their destination and
renamed into place only after the store accepted the memories, so a refused or failed import
leaves nothing half-written.
"""

from __future__ import annotations

import asyncio
import io
import json
import logging
import os
import re
import shutil
import tarfile
import tempfile
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import Any

from rumi import __version__
from rumi.fileio import atomic_write_bytes
from rumi.memory.archive.safety import (
    FORMAT,
    FORMAT_VERSION,
    MANIFEST,
    MEMORIES,
    TAPE,
    ArchiveLimits,
    ValidatedArchive,
    is_allowed,
    sha,
    validate_archive,
)
from rumi.memory.redaction.record import keep_redacted, redacted_before
from rumi.memory.redaction.text import tombstone
from rumi.paths import IMPORTED_TAPE_PREFIX, ChatPaths

log = logging.getLogger(__name__)

# --- export ---------------------------------------------------------------------------------


def collect_files(paths: ChatPaths) -> dict[str, bytes]:
    """The chat's own files, keyed by archive path (blocking; run in a thread)."""
    files: dict[str, bytes] = {}
    sources = [(paths.smma, ".smma"), (paths.memory_dir, "memory"),
               (paths.snapshots, "memory/snapshots")]
    for folder, prefix in sources:
        if not folder.is_dir():
            continue
        for entry in sorted(folder.iterdir()):
            name = f"{prefix}/{entry.name}"
            if entry.is_symlink() or not entry.is_file() or not is_allowed(name):
                continue
            files[name] = entry.read_bytes()
    return files


def build_archive(chat_id: str, files: dict[str, bytes], memories_jsonl: list[str],
                  extra: dict[str, Any] | None = None) -> bytes:
    """The `.tar.gz` bytes: every file plus memories.jsonl and a checksummed manifest."""
    all_files = dict(files)
    all_files[MEMORIES] = "".join(line.rstrip("\n") + "\n" for line in memories_jsonl).encode()
    manifest = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "rumi_version": __version__,
        "chat_id": chat_id,
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "memory_count": len(memories_jsonl),
        "files": {name: {"sha256": sha(data), "size": len(data)}
                  for name, data in sorted(all_files.items())},
        **(extra or {}),
    }
    buffer = io.BytesIO()
    mtime = int(datetime.now(UTC).timestamp())
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        items = [(MANIFEST, json.dumps(manifest, indent=1, ensure_ascii=False).encode())]
        items += sorted(all_files.items())
        for name, data in items:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mode = 0o600
            info.mtime = mtime
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


async def export_chat(data_dir: Path, chat_id: str, store: Any) -> tuple[str, bytes]:
    """(file name, archive bytes) for the chat; never touches another chat's files."""
    paths = ChatPaths(data_dir, chat_id)
    files = await asyncio.to_thread(collect_files, paths)
    lines = await store.export_jsonl(chat_id)
    data = await asyncio.to_thread(build_archive, chat_id, files, lines)
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    return f"rumi-{chat_id}-{stamp}.tar.gz", data


async def export_to_file(data_dir: Path, chat_id: str, store: Any, out: Path | None) -> Path:
    name, data = await export_chat(data_dir, chat_id, store)
    target = out if out is not None else Path.cwd() / name
    await asyncio.to_thread(atomic_write_bytes, target, data)
    return target


# --- import ---------------------------------------------------------------------------------


@dataclass
class ImportReport:
    memories_added: int = 0
    files_written: list[str] = field(default_factory=list)
    files_merged: list[str] = field(default_factory=list)
    files_kept: list[str] = field(default_factory=list)
    # memories.jsonl lines the store refused: (line number, reason); the rest was imported
    memory_errors: list[tuple[int, str]] = field(default_factory=list)
    # memories.jsonl lines this chat had forgotten: skipped, never brought back
    memories_forgotten: int = 0


def _merge_plan(paths: ChatPaths, archive: ValidatedArchive) -> tuple[dict[str, bytes],
                                                                       ImportReport]:
    """What to write where (blocking). Nothing is overwritten that the chat already has."""
    plan: dict[str, bytes] = {}
    report = ImportReport()
    known = redacted_before(paths.smma)   # what this chat had redacted stays redacted
    tomb = tombstone()
    for original, raw in sorted(archive.files.items()):
        name, data = keep_redacted(known, original, raw, tomb)
        if name == "memory/MEMORY.md":
            continue  # regenerated from the store after the memories are merged
        target = paths.root / name
        existing = target.read_bytes() if target.is_file() else None
        if existing is None or not existing.strip() or _is_blank_default(paths, name, existing):
            plan[name] = data
            report.files_written.append(name)
        elif existing == data:
            continue
        elif name == TAPE:
            if _tape_already_here(paths, existing, data):
                continue
            beside = _free_imported_name(paths)
            plan[beside] = data
            report.files_written.append(beside)
        elif re.match(r"^memory/\d{4}-\d{2}-\d{2}\.md$", name):
            have = set(existing.decode("utf-8", "replace").splitlines())
            new_lines = [ln for ln in data.decode("utf-8", "replace").splitlines()
                         if ln not in have and not ln.startswith("# ")]
            if new_lines:
                sep = b"" if existing.endswith(b"\n") else b"\n"
                plan[name] = existing + sep + ("\n".join(new_lines) + "\n").encode()
                report.files_merged.append(name)
        elif name.startswith("memory/snapshots/"):
            stem = target.stem
            n = 2
            while (target.parent / f"{stem}-{n}.md").exists():
                n += 1
            other = f"memory/snapshots/{stem}-{n}.md"
            plan[other] = data
            report.files_written.append(other)
        else:
            report.files_kept.append(name)
    return plan, report


def _is_blank_default(paths: ChatPaths, name: str, existing: bytes) -> bool:
    """A `.smma` file still as a new chat got it (the operator's template or the packaged
    default) holds nothing of the person's: the imported one replaces it."""
    match = re.fullmatch(r"\.smma/([A-Za-z0-9_-]+\.md)", name)
    if match is None:
        return False
    file_name = match.group(1)
    template = paths.data_dir / "smma_defaults" / file_name
    if template.is_file() and template.read_bytes() == existing:
        return True
    packaged = resources.files("rumi").joinpath("defaults", file_name)
    return packaged.is_file() and packaged.read_bytes() == existing


def _free_imported_name(paths: ChatPaths) -> str:
    """A new imported tape's name; its tag (`imp<time>`) names its messages for good, so two
    imports in the same second must not share one."""
    stamp = datetime.now(UTC).strftime("%Y%m%d%H%M%S")
    name, n = f"{IMPORTED_TAPE_PREFIX}{stamp}.jsonl", 1
    while (paths.smma / name).exists():
        n += 1
        name = f"{IMPORTED_TAPE_PREFIX}{stamp}-{n}.jsonl"
    return f".smma/{name}"


def _tape_already_here(paths: ChatPaths, existing: bytes, data: bytes) -> bool:
    """Importing the same archive twice stores its tape once: it is already this chat's tape
    (or the start of it), or one of the tapes imported beside it."""
    if existing.startswith(data):
        return True
    return any(p.read_bytes() == data
               for _, p in paths.imported_tapes())


def _stage(paths: ChatPaths, plan: dict[str, bytes]) -> Path:
    staging = Path(tempfile.mkdtemp(prefix=".import-", dir=paths.root))
    for name, data in plan.items():
        target = staging / name
        target.parent.mkdir(parents=True, exist_ok=True)
        with open(target, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
    return staging


def _commit(paths: ChatPaths, staging: Path, plan: dict[str, bytes]) -> None:
    for name in plan:
        target = paths.root / name
        target.parent.mkdir(parents=True, exist_ok=True)
        os.replace(staging / name, target)
    shutil.rmtree(staging, ignore_errors=True)


async def import_archive(data_dir: Path, chat_id: str, data: bytes, store: Any,
                         limits: ArchiveLimits | None = None) -> ImportReport:
    """Validate, then merge into `chat_id` (which may differ from the exported chat)."""
    archive = await asyncio.to_thread(validate_archive, data, limits)
    paths = ChatPaths(data_dir, chat_id)
    await asyncio.to_thread(paths.root.mkdir, parents=True, exist_ok=True)
    plan, report = await asyncio.to_thread(_merge_plan, paths, archive)
    staging = await asyncio.to_thread(_stage, paths, plan)
    try:
        memories = await store.import_report(chat_id, archive.memories)
        report.memories_added = memories.imported
        report.memory_errors = list(memories.errors)
        report.memories_forgotten = memories.forgotten
    except BaseException:
        await asyncio.to_thread(shutil.rmtree, staging, True)
        raise
    await asyncio.to_thread(_commit, paths, staging, plan)
    log.info("imported archive into chat %s: %d memories, %d files written, %d merged",
             chat_id, report.memories_added, len(report.files_written),
             len(report.files_merged))
    return report

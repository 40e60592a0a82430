"""A chat's memory as one portable `.tar.gz`, and the careful way back in.

Export packs `.smma/` (editable files and the tape), `memory/` (MEMORY.md, daily logs,
snapshots), `memories.jsonl` (the store's export) and `manifest.json` (versions, sizes and
sha256 of every file). Import trusts nothing: the gzip stream is inflated by us in bounded
chunks (compressed size, total size and compression ratio are checked while inflating, so a
bomb costs at most the cap), the tar headers are scanned before `tarfile` parses them (GNU
longname/longlink and pax headers above a few KiB are refused: `tarfile` reads their payload
whole before any member-level check could run), every member must be a regular file at an
expected relative path (no absolute paths, `..`, links or devices), and every checksum must
match, all before anything is written. Files are staged next to their
destination and renamed into place only after the store accepted the memories, so a refused or
failed import leaves nothing half-written.
"""

from __future__ import annotations

import asyncio
import hashlib
import io
import json
import logging
import os
import re
import shutil
import tarfile
import tempfile
import zlib
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path, PurePosixPath
from typing import Any

from rumi import __version__
from rumi import messages as msg
from rumi.fileio import atomic_write_bytes
from rumi.memory.redact_text import tombstone
from rumi.memory.redaction import keep_redacted, redacted_before
from rumi.paths import IMPORTED_TAPE_PREFIX, ChatPaths

log = logging.getLogger(__name__)

FORMAT = "rumi-chat-archive"
FORMAT_VERSION = 1
MANIFEST = "manifest.json"
MEMORIES = "memories.jsonl"


@dataclass(frozen=True)
class ArchiveLimits:
    max_archive_bytes: int = 50 * 1024 * 1024
    max_members: int = 5_000
    max_total_bytes: int = 200 * 1024 * 1024
    max_file_bytes: int = 100 * 1024 * 1024
    max_ratio: float = 200.0


class ArchiveRejected(Exception):
    """The archive is unsafe or invalid; the message is a clear Spanish reason for the person."""


ALLOWED = (
    re.compile(r"^\.smma/[A-Za-z0-9_.-]+\.(md|jsonl)$"),
    re.compile(r"^memory/MEMORY\.md$"),
    re.compile(r"^memory/\d{4}-\d{2}-\d{2}\.md$"),
    re.compile(r"^memory/snapshots/[A-Za-z0-9_.-]+\.md$"),
)
TAPE = ".smma/session_log.jsonl"


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _is_allowed(name: str) -> bool:
    return any(p.match(name) for p in ALLOWED) and not name.split("/")[-1].startswith(".")


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
            if entry.is_symlink() or not entry.is_file() or not _is_allowed(name):
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
        "files": {name: {"sha256": _sha(data), "size": len(data)}
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
class ValidatedArchive:
    manifest: dict[str, Any]
    files: dict[str, bytes]
    memories: list[str]


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


INFLATE_CHUNK = 256 * 1024
MAX_META_BYTES = 8 * 1024
TAR_OVERHEAD_PER_MEMBER = 3 * tarfile.BLOCKSIZE   # header + padding + a small meta header


def inflate_bounded(data: bytes, limits: ArchiveLimits) -> bytearray:
    """Gunzip `data` ourselves, never holding more than the limits allow.

    `tarfile`'s own gzip layer inflates whatever a header asks for, so a tiny archive could
    make us allocate gigabytes. Here output grows in `INFLATE_CHUNK` steps and stops as soon
    as the total cap (contents plus tar framing) or the compression ratio is exceeded.
    Concatenated gzip members are accepted, as `gzip` does.
    """
    cap = limits.max_total_bytes + TAR_OVERHEAD_PER_MEMBER * (limits.max_members + 1)
    out = bytearray()
    rest = data
    try:
        while rest:
            inflater = zlib.decompressobj(wbits=31)
            pending = rest
            while not inflater.eof:
                chunk = inflater.decompress(pending, INFLATE_CHUNK)
                out += chunk
                if len(out) > cap:
                    raise ArchiveRejected(msg.ARCHIVE_INFLATED_TOO_LARGE)
                if len(out) > 1024 * 1024 and len(out) > max(len(data), 1) * limits.max_ratio:
                    raise ArchiveRejected(msg.ARCHIVE_BOMB)
                pending = inflater.unconsumed_tail
                if not chunk and not pending:
                    raise ArchiveRejected(msg.ARCHIVE_NOT_TAR)   # truncated gzip stream
            rest = inflater.unused_data.lstrip(b"\0")
    except zlib.error as exc:
        raise ArchiveRejected(msg.ARCHIVE_NOT_TAR) from exc
    return out   # not copied to bytes: that would double the peak


def _header_size(field: bytes | bytearray) -> int:
    """A tar header's size field: octal text, or GNU base-256 for huge values."""
    if field[:1] in (b"\x80", b"\xff"):
        value = int.from_bytes(field[1:], "big")
        return -value if field[:1] == b"\xff" else value
    text = field.split(b"\0", 1)[0].strip(b" ")
    try:
        return int(text or b"0", 8)
    except ValueError as exc:
        raise ArchiveRejected(msg.ARCHIVE_NOT_TAR) from exc


def _pax_size(payload: bytes | bytearray) -> int | None:
    """The `size` a pax extended header sets for the next member, if any."""
    for record in payload.split(b"\n"):
        _, _, keyword_value = record.partition(b" ")
        keyword, sep, value = keyword_value.partition(b"=")
        if sep and keyword == b"size":
            try:
                return int(value)
            except ValueError as exc:
                raise ArchiveRejected(msg.ARCHIVE_NOT_TAR) from exc
    return None


def scan_tar_headers(tar: bytes | bytearray) -> None:
    """Walk the raw tar headers and refuse oversized or global metadata headers.

    Python's `tarfile` reads a GNU longname/longlink or pax payload in one piece while it
    parses the header, before we see the member: a 2 GiB "file name" would be allocated
    whole. Our own exports never need more than a few hundred bytes of such metadata.
    """
    offset = 0
    override: int | None = None
    while offset + tarfile.BLOCKSIZE <= len(tar):
        header = tar[offset:offset + tarfile.BLOCKSIZE]
        if not header.strip(b"\0"):
            return   # end-of-archive marker
        kind = header[156:157]
        size = _header_size(header[124:136])
        if size < 0:
            raise ArchiveRejected(msg.ARCHIVE_NOT_TAR)
        if kind == tarfile.XGLTYPE:
            raise ArchiveRejected(msg.ARCHIVE_PAX_GLOBAL)
        if kind in (tarfile.GNUTYPE_LONGNAME, tarfile.GNUTYPE_LONGLINK, tarfile.XHDTYPE,
                    tarfile.SOLARIS_XHDTYPE):
            if size > MAX_META_BYTES:
                raise ArchiveRejected(msg.ARCHIVE_META_TOO_LARGE.format(
                    size=size // 1024, max=MAX_META_BYTES // 1024))
            if kind in (tarfile.XHDTYPE, tarfile.SOLARIS_XHDTYPE):
                start = offset + tarfile.BLOCKSIZE
                override = _pax_size(tar[start:start + size])
        else:
            if override is not None:
                size, override = override, None
        if kind == tarfile.GNUTYPE_SPARSE:
            raise ArchiveRejected(msg.ARCHIVE_SPARSE)
        blocks = -(-size // tarfile.BLOCKSIZE)
        offset += tarfile.BLOCKSIZE * (1 + blocks)


def validate_archive(data: bytes, limits: ArchiveLimits | None = None) -> ValidatedArchive:
    """Read and check everything; ArchiveRejected with a clear reason on any problem."""
    limits = limits or ArchiveLimits()
    if len(data) > limits.max_archive_bytes:
        raise ArchiveRejected(msg.ARCHIVE_TOO_LARGE.format(
            size=len(data) // 1024, max=limits.max_archive_bytes // 1024))
    raw_tar = inflate_bounded(data, limits)
    scan_tar_headers(raw_tar)
    contents: dict[str, bytes] = {}
    total = 0
    try:
        with tarfile.open(fileobj=io.BytesIO(raw_tar), mode="r:") as tar:
            for count, member in enumerate(tar, start=1):
                if count > limits.max_members:
                    raise ArchiveRejected(
                        f"demasiados archivos dentro (más de {limits.max_members})")
                name = _check_member(member)
                if member.size > limits.max_file_bytes:
                    raise ArchiveRejected(msg.ARCHIVE_MEMBER_TOO_LARGE.format(name=name))
                total += member.size
                if total > limits.max_total_bytes:
                    raise ArchiveRejected(msg.ARCHIVE_INFLATED_TOO_LARGE)
                if total > max(len(data), 1) * limits.max_ratio and total > 1024 * 1024:
                    raise ArchiveRejected(msg.ARCHIVE_BOMB)
                if name in contents:
                    raise ArchiveRejected(msg.ARCHIVE_DUPLICATE.format(name=name))
                handle = tar.extractfile(member)
                if handle is None:
                    raise ArchiveRejected(msg.ARCHIVE_UNREADABLE.format(name=name))
                body = handle.read(member.size + 1)
                if len(body) != member.size:
                    raise ArchiveRejected(msg.ARCHIVE_TRUNCATED.format(name=name))
                contents[name] = body
    except ArchiveRejected:
        raise
    except (tarfile.TarError, EOFError, OSError, ValueError) as exc:
        raise ArchiveRejected(msg.ARCHIVE_NOT_TAR) from exc
    return _check_manifest(contents)


def _check_member(member: tarfile.TarInfo) -> str:
    name = member.name
    if name.startswith("/") or re.match(r"^[A-Za-z]:", name) or "\\" in name:
        raise ArchiveRejected(msg.ARCHIVE_BAD_PATH.format(name=name))
    parts = PurePosixPath(name).parts
    if any(p == ".." for p in parts):
        raise ArchiveRejected(msg.ARCHIVE_DOTDOT.format(name=name))
    if member.issym() or member.islnk():
        raise ArchiveRejected(msg.ARCHIVE_LINK.format(name=name))
    if member.ischr() or member.isblk() or member.isfifo() or member.isdev():
        raise ArchiveRejected(msg.ARCHIVE_DEVICE.format(name=name))
    if not member.isreg():
        raise ArchiveRejected(msg.ARCHIVE_ENTRY_TYPE.format(name=name))
    clean = str(PurePosixPath(*parts)) if parts else ""
    if clean.startswith("./"):
        clean = clean[2:]
    if clean not in (MANIFEST, MEMORIES) and not _is_allowed(clean):
        raise ArchiveRejected(msg.ARCHIVE_UNEXPECTED.format(name=name))
    return clean


def _check_manifest(contents: dict[str, bytes]) -> ValidatedArchive:
    raw = contents.pop(MANIFEST, None)
    if raw is None:
        raise ArchiveRejected(msg.ARCHIVE_NO_MANIFEST)
    try:
        manifest = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ArchiveRejected(msg.ARCHIVE_MANIFEST_JSON) from exc
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise ArchiveRejected(msg.ARCHIVE_NOT_RUMI)
    version = manifest.get("format_version")
    if not isinstance(version, int) or version > FORMAT_VERSION or version < 1:
        raise ArchiveRejected(msg.ARCHIVE_VERSION.format(version=repr(version)))
    listed = manifest.get("files")
    if not isinstance(listed, dict):
        raise ArchiveRejected(msg.ARCHIVE_MANIFEST_FILES)
    for name, data in contents.items():
        entry = listed.get(name)
        if not isinstance(entry, dict):
            raise ArchiveRejected(msg.ARCHIVE_NOT_IN_MANIFEST.format(name=name))
        if entry.get("sha256") != _sha(data) or entry.get("size") != len(data):
            raise ArchiveRejected(msg.ARCHIVE_CHECKSUM.format(name=name))
    missing = sorted(set(listed) - set(contents))
    if missing:
        raise ArchiveRejected(msg.ARCHIVE_MISSING.format(names=", ".join(missing[:3])))
    memories_raw = contents.pop(MEMORIES, b"")
    try:
        lines = [line for line in memories_raw.decode("utf-8").splitlines() if line.strip()]
        for line in lines:
            if not isinstance(json.loads(line), dict):
                raise ValueError
    except (UnicodeDecodeError, ValueError) as exc:
        raise ArchiveRejected(msg.ARCHIVE_MEMORIES_INVALID) from exc
    return ValidatedArchive(manifest, contents, lines)


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

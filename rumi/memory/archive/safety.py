"""Reading an archive nobody vouches for: every check made before anything is written.

A local file is read with a size bound (never a pipe or device); the gzip stream is inflated
by us in bounded chunks (compressed size, total size and ratio checked while inflating); the
tar headers are scanned before `tarfile` parses them; every member must be a regular file at
an expected relative path; the manifest's checksums must all match.
"""

from __future__ import annotations

import hashlib
import io
import json
import re
import tarfile
import zlib
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

from rumi import messages as msg

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


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def is_text(body: bytes) -> bool:
    """Every file an archive may carry is UTF-8 text: random bytes used to be imported and
    then shown in /search and the model's prompt as mojibake, with a warning per line."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return _CONTROL.search(text) is None


def is_allowed(name: str) -> bool:
    return any(p.match(name) for p in ALLOWED) and not name.split("/")[-1].startswith(".")




@dataclass
class ValidatedArchive:
    manifest: dict[str, Any]
    files: dict[str, bytes]
    memories: list[str]


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
                if not is_text(body):
                    raise ArchiveRejected(msg.ARCHIVE_NOT_TEXT.format(name=name))
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
    if clean not in (MANIFEST, MEMORIES) and not is_allowed(clean):
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
        if entry.get("sha256") != sha(data) or entry.get("size") != len(data):
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

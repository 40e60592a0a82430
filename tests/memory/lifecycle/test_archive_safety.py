"""Malicious or broken archives are refused with a clear reason, before anything is written."""

from __future__ import annotations

import gzip
import io
import json
import tarfile
import tracemalloc
import zlib

import pytest

from rumi.memory.archive import (
    ArchiveLimits,
    ArchiveRejected,
    build_archive,
    validate_archive,
)

FILES = {".smma/user_profile.md": b"# Perfil\nLe gusta el te\n",
         "memory/2026-01-02.md": b"# 2026-01-02\n\n- 10:00 algo\n"}
MEMS = [json.dumps({"content": "Trabaja en Google", "type": "fact"})]


def good() -> bytes:
    return build_archive("1", FILES, MEMS)


def members_of(data: bytes) -> list[tuple[tarfile.TarInfo, bytes | None]]:
    out = []
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        for m in tar:
            body = tar.extractfile(m).read() if m.isreg() else None
            out.append((m, body))
    return out


def rebuild(entries: list[tuple[tarfile.TarInfo, bytes | None]]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for info, body in entries:
            tar.addfile(info, io.BytesIO(body) if body is not None else None)
    return buf.getvalue()


def with_extra(info: tarfile.TarInfo, body: bytes | None = None) -> bytes:
    return rebuild([*members_of(good()), (info, body)])


def test_good_archive_validates():
    archive = validate_archive(good())
    assert archive.files == FILES
    assert archive.memories == MEMS
    assert archive.manifest["format_version"] == 1
    assert set(archive.manifest["files"]) == {*FILES, "memories.jsonl"}


@pytest.mark.parametrize("name, reason", [
    ("/etc/passwd", "absoluta"),
    ("../../evil.md", ".."),
    ("memory/../../x.md", ".."),
    ("workspace/run.sh", "inesperado"),
])
def test_bad_paths_refused(name, reason):
    info = tarfile.TarInfo(name)
    info.size = 3
    with pytest.raises(ArchiveRejected, match=reason):
        validate_archive(with_extra(info, b"abc"))


@pytest.mark.parametrize("kind, reason", [
    (tarfile.SYMTYPE, "enlace"), (tarfile.LNKTYPE, "enlace"),
    (tarfile.CHRTYPE, "dispositivo"), (tarfile.FIFOTYPE, "dispositivo"),
])
def test_links_and_devices_refused(kind, reason):
    info = tarfile.TarInfo("memory/snapshots/x.md")
    info.type = kind
    info.linkname = "/etc/passwd"
    with pytest.raises(ArchiveRejected, match=reason):
        validate_archive(with_extra(info))


def test_bad_checksum_refused():
    entries = members_of(good())
    tampered = []
    for info, body in entries:
        if info.name == "memory/2026-01-02.md":
            body = body.replace(b"algo", b"otro")
        tampered.append((info, body))
    with pytest.raises(ArchiveRejected, match="suma de comprobación"):
        validate_archive(rebuild(tampered))


def test_missing_manifest_and_unlisted_files_refused():
    entries = [e for e in members_of(good()) if e[0].name != "manifest.json"]
    with pytest.raises(ArchiveRejected, match="manifest"):
        validate_archive(rebuild(entries))
    info = tarfile.TarInfo("memory/snapshots/extra.md")
    info.size = 1
    with pytest.raises(ArchiveRejected, match="no está en el manifiesto"):
        validate_archive(with_extra(info, b"x"))


def test_archive_bomb_refused_before_decompressing_everything():
    # 16 MiB of zeros compresses to ~16 KiB: the ratio check refuses it.
    zeros = b"\0" * (16 * 1024 * 1024)
    info = tarfile.TarInfo("memory/snapshots/bomb.md")
    info.size = len(zeros)
    data = rebuild([(info, zeros)])
    assert len(data) < 1024 * 1024
    with pytest.raises(ArchiveRejected, match="bomba"):
        validate_archive(data)


def test_too_many_members_and_oversize_refused():
    many = []
    for i in range(20):
        info = tarfile.TarInfo(f"memory/snapshots/s{i}.md")
        info.size = 1
        many.append((info, b"x"))
    with pytest.raises(ArchiveRejected, match="demasiados"):
        validate_archive(rebuild(many), ArchiveLimits(max_members=10))
    with pytest.raises(ArchiveRejected, match="demasiado grande"):
        validate_archive(good(), ArchiveLimits(max_archive_bytes=100))
    with pytest.raises(ArchiveRejected, match="demasiado grande"):
        validate_archive(good(), ArchiveLimits(max_total_bytes=50))


def test_not_an_archive_refused():
    with pytest.raises(ArchiveRejected, match="no es un archivo"):
        validate_archive(b"hello, this is not a tarball")
    with pytest.raises(ArchiveRejected, match="no es un archivo"):
        validate_archive(gzip.compress(b"plain text inside gzip" * 10))


def test_foreign_format_and_future_version_refused():
    entries = members_of(good())
    for field, value, reason in (("format", "other", "no es un archivo exportado"),
                                 ("format_version", 99, "versión")):
        patched = []
        for info, body in entries:
            if info.name == "manifest.json":
                manifest = json.loads(body)
                manifest[field] = value
                body = json.dumps(manifest).encode()
                info.size = len(body)
            patched.append((info, body))
        with pytest.raises(ArchiveRejected, match=reason):
            validate_archive(rebuild(patched))


def _streamed_bomb(meta_type: bytes, payload_size: int) -> bytes:
    """A `.tar.gz` whose first header claims a `payload_size`-byte metadata payload.

    Built by streaming zlib chunks, so the test itself never holds the inflated bytes.
    """
    pax = meta_type in (tarfile.XHDTYPE, tarfile.SOLARIS_XHDTYPE)
    name = "././@PaxHeader" if pax else "././@LongLink"
    info = tarfile.TarInfo(name)
    info.type = meta_type
    info.size = payload_size
    header = info.tobuf(format=tarfile.GNU_FORMAT)[:tarfile.BLOCKSIZE]
    header = header[:156] + meta_type + header[157:]
    zipper = zlib.compressobj(9, zlib.DEFLATED, 31)
    parts = [zipper.compress(header)]
    block = (b"30 comment=" + b"a" * 18 + b"\n") * (1024 * 1024 // 30) \
        if pax else b"a" * (1024 * 1024)
    written = 0
    while written < payload_size:
        piece = block[:payload_size - written]
        parts.append(zipper.compress(piece))
        written += len(piece)
    parts.append(zipper.compress(b"\0" * (-payload_size % tarfile.BLOCKSIZE)))
    regular = tarfile.TarInfo("memory/snapshots/x.md")
    regular.size = 1
    parts.append(zipper.compress(regular.tobuf(format=tarfile.GNU_FORMAT) + b"x" + b"\0" * 511))
    parts.append(zipper.compress(b"\0" * 1024))
    parts.append(zipper.flush())
    return b"".join(parts)


def _peak_while(fn) -> tuple[Exception | None, int]:
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        error = None
        try:
            fn()
        except Exception as exc:  # noqa: BLE001 - the caller asserts on it
            error = exc
        return error, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("meta_type", [tarfile.GNUTYPE_LONGNAME, tarfile.XHDTYPE,
                                       tarfile.SOLARIS_XHDTYPE],
                         ids=["gnu-longname", "pax", "solaris-pax"])
def test_metadata_header_bomb_refused_with_bounded_memory(meta_type):
    """A 64 MiB long name / pax header in a ~64 KiB archive: refused, and the bytes we
    inflate stay under the cap (tarfile would have read the whole payload first)."""
    bomb = _streamed_bomb(meta_type, 64 * 1024 * 1024)
    assert len(bomb) < 512 * 1024
    limits = ArchiveLimits(max_total_bytes=4 * 1024 * 1024, max_members=100, max_ratio=10_000)
    error, peak = _peak_while(lambda: validate_archive(bomb, limits))
    assert isinstance(error, ArchiveRejected), error
    assert "demasiado grande" in str(error)
    assert peak < 16 * 1024 * 1024, f"peak {peak / 2**20:.1f} MiB"
    # with the default limits the ratio check stops it even earlier
    error, peak = _peak_while(lambda: validate_archive(bomb))
    assert isinstance(error, ArchiveRejected) and peak < 64 * 1024 * 1024


@pytest.mark.parametrize("meta_type", [tarfile.GNUTYPE_LONGNAME, tarfile.XHDTYPE,
                                       tarfile.SOLARIS_XHDTYPE],
                         ids=["gnu-longname", "pax", "solaris-pax"])
def test_oversized_metadata_header_refused_even_under_the_caps(meta_type):
    small = _streamed_bomb(meta_type, 64 * 1024)
    with pytest.raises(ArchiveRejected, match="cabecera de metadatos demasiado grande"):
        validate_archive(small)


def test_long_names_that_fit_still_work():
    """A legitimate pax header (a long snapshot name) is accepted."""
    name = "memory/snapshots/2026-01-02-" + "a" * 120 + ".md"
    data = build_archive("1", {**FILES, name: b"# Instant\n"}, MEMS)
    assert name in validate_archive(data).files


def test_truncated_gzip_refused():
    with pytest.raises(ArchiveRejected, match="no es un archivo"):
        validate_archive(good()[:-40])

"""An archive whose markdown and tape are random bytes (with a manifest whose checksums match)
is refused with one clear line in both languages and nothing is imported (issue 26: it was
reported as a success, then showed binary garbage in /search and U+FFFD in prompts)."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from rumi import messages_en, messages_es
from rumi.config import MemorySettings
from rumi.memory.archive.chat_archive import build_archive, import_archive
from rumi.memory.archive.safety import ArchiveRejected
from rumi.memory.store.memories import MemoryStore


def _noise(seed: int, size: int) -> bytes:
    return random.Random(seed).randbytes(size)


@pytest.mark.parametrize("name", ["memory/MEMORY.md", ".smma/session_log.jsonl",
                                  "memory/2026-01-02.md"])
async def test_archive_of_random_bytes_is_refused_and_nothing_imported(tmp_path: Path,
                                                                      name: str) -> None:
    files = {"memory/MEMORY.md": b"# MEMORY\n", ".smma/session_log.jsonl": b"",
             "memory/2026-01-02.md": b"# 2026-01-02\n\n- 10:00 algo\n"}
    files[name] = _noise(len(name), 64 * 1024)
    data = build_archive("1", files, [json.dumps({"content": "Trabaja en Google",
                                                  "type": "fact"})])
    store = await MemoryStore.open(tmp_path / "rumi.db", MemorySettings(embeddings_enabled=False))
    try:
        with pytest.raises(ArchiveRejected) as caught:
            await import_archive(tmp_path, "7", data, store)
        assert await store.list("7") == []
    finally:
        await store.close()
    assert str(caught.value) == messages_es.ARCHIVE_NOT_TEXT.format(name=name)
    assert not (tmp_path / "chats" / "7").exists() or not any(
        p.is_file() for p in (tmp_path / "chats" / "7").rglob("*"))


def test_a_nul_or_control_byte_is_not_text_but_accents_and_emoji_are() -> None:
    from rumi.memory.archive.safety import is_text
    assert is_text("Ñandú 🐈\tok\r\n".encode())
    assert not is_text(b"hola\x00mundo") and not is_text(b"\x1b[31mrojo")
    assert "{name}" in messages_en.ARCHIVE_NOT_TEXT

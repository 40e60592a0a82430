"""A forgotten memory leaves no copy of its text: not in `rumi.db` (rows, FTS segments, freed
pages, WAL), MEMORY.md and its state file, an export, a search or a recall; and nothing brings
it back by itself (extraction, an import of an older export)."""

from __future__ import annotations

import io
import tarfile
import uuid
from pathlib import Path

from rumi.base.replies import Attachment
from rumi.config import MemorySettings
from rumi.memory.learning.consolidation import Consolidator
from rumi.memory.recall.retrieval import MemoryRecall
from rumi.memory.store.models import MemorySource, MemoryStatus, NewMemory
from rumi.paths import ChatPaths
from tests.memory.backends import sqlite_only

CHAT = "1501"


def _occurrences(root: Path, secret: bytes) -> dict[str, int]:
    """Every file under `root` that holds `secret`, with how many times."""
    found: dict[str, int] = {}
    for path in sorted(root.rglob("*")):
        if path.is_file():
            n = path.read_bytes().count(secret)
            if n:
                found[str(path.relative_to(root))] = n
    return found


def _in_archive(data: bytes, secret: bytes) -> dict[str, int]:
    found: dict[str, int] = {}
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        for member in tar.getmembers():
            extracted = tar.extractfile(member)
            n = extracted.read().count(secret) if extracted is not None else 0
            if n:
                found[member.name] = n
    return found


async def _checkpoint(store) -> None:
    if store.vectors is not None:
        await store.vectors.flush()
    await store.connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")


@sqlite_only  # reads rumi.db's bytes on disk (PostgreSQL: test_pg_store's forget test)
async def test_forget_erases_the_memory_its_history_and_its_edits_everywhere(rig):
    secret = "zq" + uuid.uuid4().hex[:12]
    raw = secret.encode()
    data_dir = rig.settings.data_dir
    store = rig.store
    first = (await store.save(CHAT, NewMemory(f"Mi DNI es {secret}-A", key="dni",
                                              source=MemorySource.EXPLICIT))).memory
    await store.save(CHAT, NewMemory("Le gusta el ajedrez"))
    # extraction learns a new value: the first one becomes its superseded history
    learned = await Consolidator(store, None).integrate(
        CHAT, NewMemory(f"Mi DNI es {secret}-B", key="dni"))
    assert learned.action == "SUPERSEDE" and learned.memory is not None
    current = learned.memory
    # the person corrects the line in MEMORY.md: the old text goes to `edited_from`
    sync = rig.memory.sync
    await sync.write(CHAT)
    md = ChatPaths(data_dir, CHAT).memory_md
    md.write_text(md.read_text(encoding="utf-8").replace(f"{secret}-B", f"{secret}-C"),
                  encoding="utf-8")
    assert (await sync.sync_from_file(CHAT)).changed == 1
    edited = await store.get(CHAT, current.id)
    assert edited.content == f"Mi DNI es {secret}-C"
    assert edited.metadata["edited_from"] == [f"Mi DNI es {secret}-B"]
    before = await rig.say(CHAT, "/export")
    assert before.document is not None and _in_archive(before.document.data, raw)
    await _checkpoint(store)
    assert _occurrences(data_dir, raw).get("rumi.db")   # the test could fail: it is there

    reply = await rig.say(CHAT, "/forget dni")

    assert f"Olvidado: memoria #{current.id} y su historial (1 versión anterior)" in reply.text
    assert secret not in reply.text and "/redact <texto> lo borra" in reply.text
    assert await store.get(CHAT, first.id) is None and await store.get(CHAT, current.id) is None
    await _checkpoint(store)
    assert _occurrences(data_dir, raw) == {}            # db, WAL, MEMORY.md, state file, …
    after = await rig.say(CHAT, "/export")
    assert after.document is not None and _in_archive(after.document.data, raw) == {}
    assert await rig.memory.commands.search(CHAT, secret) == []
    assert await store.keyword_search(CHAT, secret, 10) == []
    recall = MemoryRecall(store, MemorySettings(embeddings_enabled=False))
    assert secret not in await recall.recall_block(CHAT, f"DNI {secret}", 2_000)
    assert [m.content for m in await store.list(CHAT)] == ["Le gusta el ajedrez"]

    # nothing brings it back by itself: extraction of any of its texts, nor the old export
    for suffix in "ABC":
        out = await Consolidator(store, None).integrate(
            CHAT, NewMemory(f"Mi DNI es {secret}-{suffix}", key="dni"))
        assert out.action == "NOOP" and out.reason == "forgotten by the person"
    back = await rig.say(CHAT, "/import",
                         attachment=Attachment("old.tar.gz", before.document.data))
    assert "2 recuerdos del archivo ya los habías olvidado" in back.text
    assert [m.content for m in await store.list(CHAT, status=None)] == ["Le gusta el ajedrez"]
    await _checkpoint(store)
    assert "rumi.db" not in _occurrences(data_dir, raw)

    # saying it again on purpose is the person's choice: it is remembered again
    again = await rig.say(CHAT, f"/remember dni: {secret}-C")
    assert again.text.startswith("✅")
    assert [m.status for m in await store.list(CHAT, key="dni")] == [MemoryStatus.ACTIVE]


@sqlite_only  # reads rumi.db's bytes on disk (PostgreSQL: test_pg_store's forget test)
async def test_a_memory_md_line_the_person_deletes_is_erased_with_its_edits(rig):
    secret = "zq" + uuid.uuid4().hex[:12]
    store = rig.store
    mem = (await store.save(CHAT, NewMemory(f"Clave del wifi {secret}"))).memory
    for text in ("Le gusta el ajedrez", "Vive en Lima", "Usa Vim"):
        await store.save(CHAT, NewMemory(text))
    sync = rig.memory.sync
    await sync.write(CHAT)
    md = ChatPaths(rig.settings.data_dir, CHAT).memory_md
    md.write_text(md.read_text(encoding="utf-8").replace(secret, f"{secret}-2"),
                  encoding="utf-8")
    assert (await sync.sync_from_file(CHAT)).changed == 1
    md.write_text("".join(line for line in md.read_text(encoding="utf-8").splitlines(True)
                          if secret not in line), encoding="utf-8")
    assert (await sync.sync_from_file(CHAT)).removed == 1
    assert await store.get(CHAT, mem.id) is None
    await _checkpoint(store)
    assert _occurrences(rig.settings.data_dir, secret.encode()) == {}

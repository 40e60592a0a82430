"""Importing exported memories into a chat that already has some of them (issue 7, MUST 6).

Exports carry history (superseded and expired memories). The target chat may hold the same
text as an *active* memory: only one active row per (chat, content) may exist, so history must
go in with its final status, and a collision is a duplicate to report, never a crash.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from rumi.config import MemorySettings
from rumi.memory.store.memories import MemoryStore
from rumi.memory.store.models import MemoryStatus, NewMemory
from tests.memory.conftest import open_store


async def test_superseded_history_imports_into_a_chat_where_it_is_active(
    store: MemoryStore,
) -> None:
    lima = (await store.save("1", NewMemory("Vive en Lima", key="ciudad"))).memory
    madrid = await store.supersede("1", lima.id, NewMemory("Vive en Madrid", key="ciudad"))
    lines = await store.export_jsonl("1")
    here = (await store.save("2", NewMemory("Vive en Lima", key="ciudad"))).memory

    report = await store.import_report("2", lines)

    assert (report.imported, report.duplicates, report.errors) == (2, 0, [])
    rows = await store.list("2", status=None)
    by_status = {(m.content, m.status) for m in rows}
    assert by_status == {("Vive en Lima", MemoryStatus.ACTIVE),
                         ("Vive en Lima", MemoryStatus.SUPERSEDED),
                         ("Vive en Madrid", MemoryStatus.ACTIVE)}
    assert (await store.get("2", here.id)).status == MemoryStatus.ACTIVE  # untouched
    history = next(m for m in rows if m.status == MemoryStatus.SUPERSEDED)
    new_madrid = next(m for m in rows if m.content == "Vive en Madrid")
    assert history.superseded_by == new_madrid.id != madrid.id
    hits = [i for i, _ in await store.vector_search("2", "Madrid", 5)]
    assert new_madrid.id in hits and history.id not in hits  # only active rows are indexed
    assert await store.import_report("2", lines) == type(report)(imported=0, duplicates=2)


async def test_a_memory_saved_while_an_import_waits_is_a_duplicate(data_dir: Path) -> None:
    """The bot (or a CLI in another process) may save the same text between the import's read
    of the chat and its write: that line is counted as a duplicate, the rest still imports."""
    settings = MemorySettings(embeddings_enabled=False)
    source = await open_store(data_dir / "a", settings, None)
    target = await open_store(data_dir / "b", settings, None)
    other = await MemoryStore.open(data_dir / "b" / "rumi.db", settings)  # second connection
    try:
        await source.save_many("1", [NewMemory("Toca el violín"), NewMemory("Tiene un gato")])
        lines = await source.export_jsonl("1")
        async with target.write_lock:
            task = asyncio.create_task(target.import_report("2", lines))
            for _ in range(200):  # until the import has read the chat and waits for the lock
                await asyncio.sleep(0.01)
                if getattr(target.write_lock, "_waiters", None):
                    break
            assert not task.done()
            await other.save("2", NewMemory("Toca el violín"))
        report = await task
        assert (report.imported, report.duplicates, report.errors) == (1, 1, [])
        assert sorted(m.content for m in await target.list("2")) == ["Tiene un gato",
                                                                     "Toca el violín"]
    finally:
        for st in (source, target, other):
            await st.close()


async def test_an_import_does_not_bring_back_what_the_chat_forgot(data_dir: Path) -> None:
    """Neither a forgotten memory nor a forgotten text kept as another one's `edited_from`."""
    store = await open_store(data_dir, MemorySettings(embeddings_enabled=False), None)
    try:
        old = (await store.save("40", NewMemory("Su clave es qx81", key="clave"))).memory
        lines = await store.export_jsonl("40")
        await store.forget("40", memory_id=old.id)
        edited = (await store.save("41", NewMemory(
            "Su clave es nueva", key="clave",
            metadata={"edited_from": ["Su clave es qx81", "Su clave es otra"]}))).memory
        lines += await store.export_jsonl("41")

        report = await store.import_report("40", lines)

        assert (report.imported, report.forgotten) == (1, 1)
        [back] = await store.list("40", status=None)
        assert back.content == "Su clave es nueva" and back.id != edited.id
        assert back.metadata["edited_from"] == ["Su clave es otra"]
    finally:
        await store.close()

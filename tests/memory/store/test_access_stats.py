"""Access stats written behind recall (`access.AccessLog`): the answer never waits for the
write, every read sees the touch at once, closing writes it, and nothing is lost or counted
twice — not on a busy database, not on a forget, and a crash costs only unwritten counts."""

from __future__ import annotations

import asyncio
import os
import sqlite3
import subprocess
import sys
import textwrap
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from rumi.config import MemorySettings
from rumi.memory.recall.retrieval import MemoryRecall
from rumi.memory.store.codec import ts
from rumi.memory.store.memories import MemoryStore
from rumi.memory.store.models import NewMemory

NOW = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)
SETTINGS = MemorySettings(embeddings_enabled=False)


def stored_counts(db: Path) -> dict[int, tuple[int, str | None]]:
    """(access_count, last_accessed_at) of every row, read from the file by another
    connection: what is really written."""
    with sqlite3.connect(db) as conn:
        return {row[0]: (row[1], row[2]) for row in conn.execute(
            "SELECT id, access_count, last_accessed_at FROM memories")}


async def open_kw(db: Path, **overrides: object) -> MemoryStore:
    return await MemoryStore.open(db, SETTINGS.model_copy(update=overrides))


async def test_recall_returns_before_the_write_and_reads_see_the_touch(tmp_path: Path) -> None:
    db = tmp_path / "rumi.db"
    store = await open_kw(db)
    try:
        saved = await store.save("1", NewMemory("The garden shed key is under the blue pot"))
        recall = MemoryRecall(store, store.settings)
        found = await recall.recall("1", "garden shed key", k=3, now=NOW)
        assert [s.memory.id for s in found] == [saved.memory.id]
        assert store.access.pending == 1                 # not written when the answer came
        assert stored_counts(db)[saved.memory.id] == (0, None)
        got = await store.get("1", saved.memory.id)      # ...but every read sees it
        assert got is not None and got.access_count == 1 and got.last_accessed_at == NOW
        listed = await store.list("1")
        assert listed[0].access_count == 1
        await store.access.flush()
        assert store.access.pending == 0
        assert stored_counts(db)[saved.memory.id][0] == 1
        again = await store.get("1", saved.memory.id)
        assert again is not None and again.access_count == 1   # not counted twice
    finally:
        await store.close()


async def test_closing_right_after_a_recall_writes_the_touch(tmp_path: Path) -> None:
    db = tmp_path / "rumi.db"
    store = await open_kw(db)
    saved = await store.save("1", NewMemory("Ana's birthday is on the ninth of March"))
    recall = MemoryRecall(store, store.settings)
    for _ in range(3):
        await recall.recall("1", "Ana birthday", k=3, now=NOW)
    await store.close()
    assert stored_counts(db)[saved.memory.id] == (3, ts(NOW))
    reopened = await open_kw(db)
    try:
        got = await reopened.get("1", saved.memory.id)
        assert got is not None and got.access_count == 3 and got.last_accessed_at == NOW
    finally:
        await reopened.close()


async def test_background_write_lands_without_anyone_waiting(tmp_path: Path) -> None:
    db = tmp_path / "rumi.db"
    store = await open_kw(db)
    try:
        saved = await store.save("1", NewMemory("The wifi password is on the fridge"))
        await store.mark_accessed("1", [saved.memory.id], NOW, wait=False)
        for _ in range(1_000):   # the loop runs the write; nothing calls flush (≤ 10 s)
            if stored_counts(db)[saved.memory.id][0] == 1:
                break
            await asyncio.sleep(0.01)
        assert stored_counts(db)[saved.memory.id][0] == 1
        assert store.access.pending == 0
    finally:
        await store.close()


async def test_a_busy_database_keeps_the_touches_for_the_next_write(tmp_path: Path) -> None:
    db = tmp_path / "rumi.db"
    store = await open_kw(db, db_busy_timeout_ms=50)
    other = sqlite3.connect(db, isolation_level=None)
    try:
        a = (await store.save("1", NewMemory("Luis plays the cello on Sundays"))).memory.id
        b = (await store.save("1", NewMemory("Luis studies Portuguese"))).memory.id
        await store.mark_accessed("1", [a, b], NOW, wait=False)
        other.execute("BEGIN IMMEDIATE")   # another process holds the write lock
        with pytest.raises(sqlite3.OperationalError):
            await store.access.flush()
        await store.mark_accessed("1", [a], NOW + timedelta(minutes=1), wait=False)
        got = {m.id: m.access_count for m in await store.get_many("1", [a, b])}
        assert got == {a: 2, b: 1}
        other.execute("ROLLBACK")
        await store.access.flush()
        assert stored_counts(db)[a] == (2, ts(NOW + timedelta(minutes=1)))
        assert stored_counts(db)[b][0] == 1
        assert {m.id: m.access_count for m in await store.get_many("1", [a, b])} == {a: 2, b: 1}
    finally:
        other.close()
        await store.close()


async def test_a_touch_of_a_memory_forgotten_meanwhile_brings_nothing_back(
        tmp_path: Path) -> None:
    db = tmp_path / "rumi.db"
    store = await open_kw(db)
    try:
        gone = (await store.save("1", NewMemory("Old locker code 4411"))).memory.id
        kept = (await store.save("1", NewMemory("New locker code 9902"))).memory.id
        await store.mark_accessed("1", [gone, kept], NOW, wait=False)
        await store.forget("1", memory_id=gone)
        await store.access.flush()
        rows = stored_counts(db)
        assert gone not in rows and rows[kept][0] == 1
        assert [m.content for m in await store.list("1")] == ["New locker code 9902"]
    finally:
        await store.close()


async def test_touches_of_another_chat_id_change_nothing(tmp_path: Path) -> None:
    db = tmp_path / "rumi.db"
    store = await open_kw(db)
    try:
        mine = (await store.save("100", NewMemory("Project codename Sparrow"))).memory.id
        await store.mark_accessed("-200", [mine], NOW, wait=False)
        got = await store.get("100", mine)
        assert got is not None and got.access_count == 0
        await store.access.flush()
        assert stored_counts(db)[mine] == (0, None)
    finally:
        await store.close()


CRASH = textwrap.dedent("""
    import asyncio, os, sys
    from datetime import UTC, datetime
    from pathlib import Path
    from rumi.config import MemorySettings
    from rumi.memory.recall.retrieval import MemoryRecall
    from rumi.memory.store.memories import MemoryStore
    from rumi.memory.store.models import NewMemory

    async def main() -> None:
        store = await MemoryStore.open(Path(sys.argv[1]),
                                       MemorySettings(embeddings_enabled=False))
        for n in range(20):
            await store.save("1", NewMemory(f"Trip note {n}: pack the red umbrella"))
        recall = MemoryRecall(store, store.settings)
        now = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)
        first = await recall.recall("1", "red umbrella trip", k=3, now=now)
        await store.access.flush()   # written
        await recall.recall("1", "red umbrella trip", k=3, now=now)   # not yet written
        print(",".join(str(s.memory.id) for s in first), flush=True)
        os._exit(9)   # the process dies: no close, no flush

    asyncio.run(main())
""")


def test_a_crash_loses_only_touches_not_yet_written(tmp_path: Path) -> None:
    db = tmp_path / "rumi.db"
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[3])}
    done = subprocess.run([sys.executable, "-c", CRASH, str(db)], capture_output=True,
                          text=True, timeout=120, env=env, check=False)
    assert done.returncode == 9, done.stderr
    first = {int(i) for i in done.stdout.strip().split(",")}
    rows = stored_counts(db)
    assert len(rows) == 20                                  # every memory is there
    assert {i for i, (count, _) in rows.items() if count} == first
    assert all(rows[i][0] == 1 for i in first)              # the unwritten touch is all it lost
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        texts = sorted(r[0] for r in conn.execute("SELECT content FROM memories"))
    assert texts == sorted(f"Trip note {n}: pack the red umbrella" for n in range(20))


async def test_a_touch_during_a_write_in_flight_is_neither_lost_nor_counted_twice(
        tmp_path: Path) -> None:
    db = tmp_path / "rumi.db"
    store = await open_kw(db)
    try:
        mid = (await store.save("1", NewMemory("The boat leaves at seven"))).memory.id
        await store.mark_accessed("1", [mid], NOW, wait=False)
        async with store.write_lock:   # another task's transaction: the write waits for it
            flushing = asyncio.ensure_future(store.access.flush())
            await asyncio.sleep(0.05)
            assert not flushing.done()
            later = NOW + timedelta(hours=1)
            await store.mark_accessed("1", [mid], later, wait=False)
            got = await store.get("1", mid)
            assert got is not None and got.access_count == 2 and got.last_accessed_at == later
        await flushing
        await store.access.flush()
        assert stored_counts(db)[mid] == (2, ts(later))
        got = await store.get("1", mid)
        assert got is not None and got.access_count == 2
    finally:
        await store.close()

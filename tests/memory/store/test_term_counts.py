"""The keyword index's term counts kept between recalls (`recall_index.TermCounts`).

A kept count must never outlive the table state it was read at: every test here changes the
chat's memories the way real use does (a save, an edit, a forget, a status change by another
process, a transaction that rolls back) and checks the next counts against a fresh probe and
the next search against what is stored now."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from rumi.config import MemorySettings
from rumi.memory.recall.query import plan
from rumi.memory.store import recall_index
from rumi.memory.store.memories import MemoryStore
from rumi.memory.store.models import NewMemory
from tests.memory.backends import SQLITE
from tests.memory.conftest import store_fixture

SETTINGS = MemorySettings(embeddings_enabled=False)
CAP = 2_001


async def _table(store: MemoryStore, chat: str) -> str:
    table = await store.keyword_index.table(chat)
    assert table is not None
    return table


async def _kept(store: MemoryStore, chat: str, words: tuple[str, ...]) -> list[int]:
    counts, _ = await store.keyword_index.term_counts.counts(
        chat, await _table(store, chat), words, CAP)
    return counts


async def _fresh(store: MemoryStore, chat: str, words: tuple[str, ...]) -> list[int]:
    probe = await recall_index._doc_counts(  # noqa: SLF001 - the uncached truth
        store.connection, await _table(store, chat), words, CAP)
    return probe.counts


async def _probes(store: MemoryStore) -> list[str]:
    """The count probes SQLite runs on the store's connection from now on (its own log)."""
    seen: list[str] = []
    await store.connection.set_trace_callback(
        lambda sql: seen.append(sql) if "LIMIT 2001" in sql else None)
    return seen


async def _ids(store: MemoryStore, chat: str, text: str) -> set[int]:
    hits = await store.keyword_index.search(chat, plan(text), 50, 2_000)
    return {i for i, _ in hits}


store = store_fixture(SETTINGS, model=False, backends=[SQLITE])


async def test_a_repeated_word_is_counted_once_while_nothing_changes(
        store: MemoryStore) -> None:
    await store.save_many("1", [NewMemory(f"harbour note {n}") for n in range(30)]
                          + [NewMemory(f"lighthouse keeper {n}") for n in range(5)])
    first = await _kept(store, "1", ("harbour", "lighthouse"))
    assert first == await _fresh(store, "1", ("harbour", "lighthouse"))
    assert first[1] == 5
    probes = await _probes(store)
    assert await _kept(store, "1", ("lighthouse", "harbour")) == first[::-1]
    assert await _kept(store, "1", ("harbour", "keeper")) == [first[0], 5]
    # one statement each (the stamp), the only word counted is the new one
    assert sum(sql.count("MATCH") for sql in probes) == 1


async def test_a_save_an_edit_and_a_forget_each_reach_the_next_counts(
        store: MemoryStore) -> None:
    saved = await store.save_many("1", [NewMemory(f"harbour note {n}") for n in range(20)])
    words = ("harbour", "ferry")
    assert await _kept(store, "1", words) == [20, 0]
    new = (await store.save("1", NewMemory("the ferry left the harbour"))).memory
    assert await _kept(store, "1", words) == [21, 1] == await _fresh(store, "1", words)
    assert new.id in await _ids(store, "1", "ferry")
    await store.update("1", new.id, content="the boat left at noon")
    kept = await _kept(store, "1", words)
    assert kept[1] == 0 and kept == await _fresh(store, "1", words)
    assert await _ids(store, "1", "ferry") == set()
    await store.forget("1", memory_id=saved[0].memory.id)
    assert await _kept(store, "1", words) == [kept[0] - 1, 0] == await _fresh(store, "1", words)
    assert saved[0].memory.id not in await _ids(store, "1", "harbour")


async def test_another_process_writing_reaches_the_next_counts(
        store: MemoryStore, data_dir: Path) -> None:
    await store.save_many("1", [NewMemory(f"harbour note {n}") for n in range(20)])
    assert await _kept(store, "1", ("harbour",)) == [20]
    with sqlite3.connect(data_dir / "rumi.db") as conn:
        conn.execute("UPDATE memories SET status = 'deleted' WHERE id IN (SELECT id "
                     "FROM memories WHERE chat_id = '1' LIMIT 8)")
    assert await _kept(store, "1", ("harbour",)) == [12] == await _fresh(store, "1", ("harbour",))


async def test_a_rolled_back_transaction_leaves_no_count_behind(store: MemoryStore) -> None:
    """Inside a transaction this connection sees its uncommitted rows, which do not move the
    table's stamp: a count read then must not be kept."""
    await store.save_many("1", [NewMemory(f"harbour note {n}") for n in range(20)])
    assert await _kept(store, "1", ("harbour",)) == [20]
    seen_inside: list[int] = []
    with pytest.raises(RuntimeError):
        async with store.transaction() as conn:
            await conn.execute(
                "INSERT INTO memories(chat_id, type, content, source, importance, confidence, "
                "access_count, created_at, updated_at, status, related_ids, content_hash, "
                "metadata) SELECT chat_id, type, 'harbour again', source, importance, "
                "confidence, 0, created_at, updated_at, status, related_ids, 'x', metadata "
                "FROM memories WHERE chat_id = '1' LIMIT 1")
            seen_inside = await _kept(store, "1", ("harbour",))
            raise RuntimeError("rolled back")
    assert seen_inside == [21]   # what the transaction itself sees
    assert await _kept(store, "1", ("harbour",)) == [20] == await _fresh(store, "1", ("harbour",))
    # a row written straight into the index (no trigger, so nothing flushes FTS5's pending
    # rows before the count): the stamp stays, only the write lock says not to keep it
    table = await _table(store, "1")
    with pytest.raises(RuntimeError):
        async with store.transaction() as conn:
            await conn.execute(f"INSERT INTO {table}(rowid, content) VALUES (999999, 'harbour')")
            seen_inside = await _kept(store, "1", ("harbour",))
            raise RuntimeError("rolled back")
    assert seen_inside == [21]
    assert await _kept(store, "1", ("harbour",)) == [20] == await _fresh(store, "1", ("harbour",))


async def test_one_chats_counts_never_answer_another(store: MemoryStore) -> None:
    await store.save_many("1", [NewMemory(f"harbour note {n}") for n in range(20)])
    await store.save_many("2", [NewMemory(f"harbour note {n}") for n in range(3)])
    assert await _kept(store, "1", ("harbour",)) == [20]
    assert await _kept(store, "2", ("harbour",)) == [3]
    assert await _kept(store, "1", ("harbour",)) == [20]


async def test_a_rebuilt_table_is_counted_again(store: MemoryStore) -> None:
    await store.save_many("1", [NewMemory(f"harbour note {n}") for n in range(20)])
    table = await _table(store, "1")
    assert await _kept(store, "1", ("harbour",)) == [20]
    # dropped by hand (table and triggers) while the store is open, then saved to: the
    # next search finds it gone, the one after rebuilds it under the same name
    for name in recall_index.RECALL_TRIGGERS:
        await store.connection.execute(f"DROP TRIGGER {table}_{name}")
    await store.connection.execute(f"DROP TABLE {table}")
    await store.save_many("1", [NewMemory(f"harbour later {n}") for n in range(4)])
    await _ids(store, "1", "harbour")
    assert len(await _ids(store, "1", "harbour")) == 24
    assert await _table(store, "1") == table
    assert await _kept(store, "1", ("harbour",)) == [24] == await _fresh(store, "1", ("harbour",))

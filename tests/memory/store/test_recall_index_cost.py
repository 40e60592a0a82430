"""What a recall costs the chat's keyword table: no statement that grows with the chat.

`count(*)` over the chat's FTS5 `_docsize` ran on every recall (twice when the question had
words the chat never said); the row count now comes from FTS5's own totals record, which must
equal the real count through saves, forgets, status changes and an import."""

from __future__ import annotations

import dataclasses
import sqlite3
from pathlib import Path

from rumi.config import MemorySettings
from rumi.memory.recall.query import plan
from rumi.memory.recall.retrieval import MemoryRecall
from rumi.memory.store import recall_index
from rumi.memory.store.memories import MemoryStore
from rumi.memory.store.models import NewMemory

SETTINGS = MemorySettings(embeddings_enabled=False)


async def _table(store: MemoryStore, chat: str) -> str:
    table = await store.keyword_index.table(chat)
    assert table is not None
    return table


async def _sizes(store: MemoryStore, table: str) -> tuple[int, int]:
    """(FTS5's stored row total as recall reads it, count(*) of the table's rows)."""
    total = (await recall_index._doc_counts(store.connection, table, ("x",), 2)).total  # noqa: SLF001
    [(counted,)] = await store.connection.execute_fetchall(
        f"SELECT count(*) FROM {table}_docsize")  # noqa: S608
    return total, counted


async def test_the_stored_row_total_follows_every_change(tmp_path: Path) -> None:
    store = await MemoryStore.open(tmp_path / "rumi.db", SETTINGS)
    try:
        saved = await store.save_many("1", [NewMemory(f"note {n} about the harbour")
                                            for n in range(300)])
        table = await _table(store, "1")
        assert await _sizes(store, table) == (300, 300)
        await store.forget("1", memory_id=saved[0].memory.id)
        await store.forget("1", text="note 7 about")
        total, counted = await _sizes(store, table)
        assert total == counted < 300
        await store.supersede("1", saved[5].memory.id, NewMemory("note five, corrected"))
        await store.save_many("1", [NewMemory(f"later note {n}") for n in range(200)])
        before = counted + 200
        assert await _sizes(store, table) == (before, before)
        lines = await store.export_jsonl("1")
        await store.import_report("2", lines)
        total2, counted2 = await _sizes(store, await _table(store, "2"))
        assert total2 == counted2 == before
        # another process writes: the next read sees its total too
        with sqlite3.connect(tmp_path / "rumi.db") as conn:
            conn.execute("UPDATE memories SET status = 'deleted' WHERE id IN (SELECT id "
                         "FROM memories WHERE chat_id = '1' AND status = 'active' LIMIT 50)")
        assert await _sizes(store, table) == (before - 50, before - 50)
    finally:
        await store.close()


async def test_the_varint_reader_matches_sqlites_encoding() -> None:
    encode_cases = {0: b"\x00", 127: b"\x7f", 128: b"\x81\x00", 300: b"\x82\x2c",
                    2**21: b"\x81\x80\x80\x00", 2**64 - 1: b"\xff" * 9}
    for value, record in encode_cases.items():
        assert recall_index._row_total(record + b"\x05\x07") == value  # noqa: SLF001
    assert recall_index._row_total(None) == 0  # noqa: SLF001


async def test_a_recall_runs_no_statement_that_counts_the_whole_chat(tmp_path: Path) -> None:
    store = await MemoryStore.open(tmp_path / "rumi.db", SETTINGS)
    try:
        await store.save_many("1", [NewMemory(f"the garden {n} needs water on day {n}")
                                    for n in range(50)])
        recall = MemoryRecall(store, store.settings)
        await recall.recall("1", "garden water", k=3)   # builds the table
        statements: list[str] = []
        await store.connection.set_trace_callback(statements.append)
        try:
            # an unknown word with an alternative: the stand-in probe ran count(*) a 2nd time
            query = dataclasses.replace(plan("jardín water"),
                                        alternatives={"jardín": ("garden",)})
            hits = await store.keyword_index.search("1", query, 10)
            found = await recall.recall("1", "garden water", k=3)
        finally:
            await store.connection.set_trace_callback(None)
        assert hits and found
        assert not [s for s in statements if "_docsize)" in s]
    finally:
        await store.close()

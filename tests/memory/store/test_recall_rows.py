"""`recall_rows`: recall's candidates as light rows (`RecallRow`), the whole `Memory` built only
for those recall returns. Whatever is built must be the memory `get_many` gives — with the
access touches not written yet — and every field recall reads must be that memory's."""

from __future__ import annotations

from datetime import UTC, datetime

from rumi.memory.store.api import MemoryStoreAPI
from rumi.memory.store.models import Memory, MemoryType, NewMemory, RecallRow

MONDAY = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
READ = ("id", "type", "content", "importance", "created_at", "expires_at", "status",
        "access_days")


def _same(row: RecallRow, memory: Memory) -> None:
    assert tuple(getattr(row, name) for name in READ) == tuple(
        getattr(memory, name) for name in READ)
    assert row.memory() == memory
    assert (row.key, row.metadata, row.owner_id) == (memory.key, memory.metadata,
                                                     memory.owner_id)   # read from the whole


async def test_rows_are_the_memories_get_many_gives(kw_store: MemoryStoreAPI) -> None:
    saved = [r.memory for r in await kw_store.save_many("1", [
        NewMemory("the ferry leaves at nine"),
        NewMemory("Ana prefers the window seat", type=MemoryType.PREFERENCE, key="seat",
                  importance=0.9, created_at=datetime(2025, 3, 14, 9, 30, tzinfo=UTC),
                  expires_at=datetime(2030, 1, 1, tzinfo=UTC), metadata={"owner_name": "Ana"},
                  owner_id="77"),
        NewMemory("what time is the ferry?", type=MemoryType.EPISODIC),
    ])]
    other = (await kw_store.save("2", NewMemory("another chat's ferry"))).memory
    await kw_store.mark_accessed("1", [saved[0].id], MONDAY)   # written
    await kw_store.mark_accessed("1", [saved[1].id], MONDAY, wait=False)   # maybe not yet
    wanted = [saved[2].id, other.id, saved[1].id, 999_999, saved[0].id, saved[2].id]
    rows = await kw_store.recall_rows("1", wanted)
    with_vectors, vectors = await kw_store.recall_rows_with_vectors("1", wanted)
    memories = await kw_store.get_many("1", wanted)
    assert [m.id for m in memories] == [saved[2].id, saved[1].id, saved[0].id]
    assert [r.id for r in rows] == [r.id for r in with_vectors] == [m.id for m in memories]
    for row, again, memory in zip(rows, with_vectors, memories, strict=True):
        _same(row, memory)
        _same(again, memory)
    assert vectors == {}   # no model: no stored vectors
    assert memories[1].access_days == memories[2].access_days == 1


async def test_a_row_of_a_memory_already_built_is_that_memory(kw_store: MemoryStoreAPI) -> None:
    memory = (await kw_store.save("1", NewMemory("the tide turns at noon", key="tide"))).memory
    row = RecallRow.of(memory)
    _same(row, memory)
    assert row.memory() is memory

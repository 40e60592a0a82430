"""`codec.row_to_memory` fills a `Memory` without its frozen `__init__` (a millisecond of every
recall at 100k memories): the object must be the one the constructor would build."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime
from pathlib import Path

import pytest

from rumi.config import MemorySettings
from rumi.memory.store.codec import MEMORY_COLUMNS, row_to_memory
from rumi.memory.store.memories import MemoryStore
from rumi.memory.store.models import Memory, MemoryType, NewMemory


async def test_a_row_becomes_the_memory_the_constructor_builds(tmp_path: Path) -> None:
    store = await MemoryStore.open(tmp_path / "rumi.db", MemorySettings(embeddings_enabled=False))
    try:
        first = (await store.save("1", NewMemory("the ferry leaves at nine"))).memory
        saved = (await store.save("1", NewMemory(
            "Ana prefers the window seat", type=MemoryType.PREFERENCE, key="seat",
            summary="seat", importance=0.9, related_ids=(first.id,),
            created_at=datetime(2025, 3, 14, 9, 30, tzinfo=UTC),
            expires_at=datetime(2030, 1, 1, tzinfo=UTC), metadata={"owner_name": "Ana"},
            owner_id="77"))).memory
        [row] = await store.connection.execute_fetchall(
            f"SELECT {MEMORY_COLUMNS} FROM memories WHERE id = ?", (saved.id,))  # noqa: S608
    finally:
        await store.close()
    memory = row_to_memory(row)
    built = Memory(**{f.name: getattr(memory, f.name) for f in dataclasses.fields(Memory)})
    assert memory == built == saved
    assert set(vars(memory)) == {f.name for f in dataclasses.fields(Memory)}
    assert (memory.related_ids, memory.metadata, memory.owner_id) == (
        (first.id,), {"owner_name": "Ana"}, "77")
    assert memory.created_at == datetime(2025, 3, 14, 9, 30, tzinfo=UTC)
    with pytest.raises(dataclasses.FrozenInstanceError):
        memory.content = "changed"  # type: ignore[misc]
    assert dataclasses.replace(memory, content="x").content == "x"


async def test_a_row_is_read_by_position_and_may_carry_more_columns(tmp_path: Path) -> None:
    """Recall's rows carry the stored vector after the memory's columns; the memory is read
    from the first ones, in `MEMORY_COLUMNS`' order, whatever follows."""
    store = await MemoryStore.open(tmp_path / "rumi.db", MemorySettings(embeddings_enabled=False))
    try:
        saved = (await store.save("1", NewMemory("the ferry leaves at nine", key="ferry",
                                                 created_at=datetime(2025, 1, 2, tzinfo=UTC)))
                 ).memory
        [row] = await store.connection.execute_fetchall(
            f"SELECT {MEMORY_COLUMNS}, x'00' AS vector, 1 AS dim FROM memories "  # noqa: S608
            "WHERE id = ?", (saved.id,))
    finally:
        await store.close()
    assert row_to_memory(row) == row_to_memory(tuple(row)) == saved
    swapped = list(row)
    swapped[3], swapped[5] = swapped[5], swapped[3]   # content and key: order is the contract
    assert (row_to_memory(swapped).content, row_to_memory(swapped).key) == ("ferry",
                                                                             saved.content)

"""Recall of a few conversation turns said at one moment, with a ranking setting at its
default and switched off: the tests of single ranking steps compare the two orders."""

from __future__ import annotations

from datetime import UTC, datetime

from rumi.memory.recall.retrieval import MemoryRecall
from rumi.memory.store.memories import MemoryStore
from rumi.memory.store.models import MemoryType, NewMemory

SAID = datetime(2026, 3, 2, 18, tzinfo=UTC)


async def first_two(store: MemoryStore, texts: list[str], question: str, setting: str,
                    off: float) -> tuple[list[int], list[int], list[int]]:
    """(the saved ids, the first two recalled with the store's settings, the first two with
    `setting` set to `off`)."""
    ids = [(await store.save("1", NewMemory(t, type=MemoryType.EPISODIC, created_at=SAID))
            ).memory.id for t in texts]

    async def top(settings: object) -> list[int]:
        found = await MemoryRecall(store, settings).recall("1", question, k=3, now=SAID,
                                                            touch=False)
        return [s.memory.id for s in found[:2]]

    return (ids, await top(store.settings),
            await top(store.settings.model_copy(update={setting: off})))

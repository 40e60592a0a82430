"""While the query is still being embedded, the keyword hits' rows load meanwhile (a trip to
SQLite's thread overlapping the embedding), and the ranking is the one a recall with the
query embedded beforehand gives."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any

from rumi.memory.recall.retrieval import MemoryRecall
from rumi.memory.store.memories import MemoryStore
from rumi.memory.store.models import NewMemory
from tests.memory.conftest import model_settings
from tests.memory.recall.test_recall_prefetch import FACTS, _counting

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
QUESTION = "who plays the cello in the orchestra?"


class Trips:
    """Counts the store's row loads (each one trip to SQLite's thread), calling the real ones."""

    def __init__(self, store: MemoryStore) -> None:
        self.loads: list[str] = []
        for name in ("recall_rows", "recall_rows_with_vectors"):
            setattr(store, name, self._counted(name, getattr(store, name)))

    def _counted(self, name: str, real: Any) -> Any:
        async def counted(*args: Any, **kwargs: Any) -> Any:
            self.loads.append(name)
            return await real(*args, **kwargs)
        return counted


async def test_rows_load_while_the_query_is_still_embedded(sqlite_store: MemoryStore) -> None:
    ids = [(await sqlite_store.save("1", NewMemory(t))).memory.id for t in FACTS]
    recall = MemoryRecall(sqlite_store, model_settings())
    plain = await recall.recall("1", QUESTION, k=3, now=NOW, touch=False)
    recall = MemoryRecall(sqlite_store, model_settings())   # nothing embedded yet
    sqlite_store._query_cache.clear()  # noqa: SLF001 - the store's cache would answer at once
    counting = _counting(sqlite_store)
    counting.gate.clear()
    trips = Trips(sqlite_store)
    searching = asyncio.ensure_future(recall.recall("1", QUESTION, k=3, now=NOW, touch=False))
    await asyncio.wait_for(counting.asked.wait(), 30)
    for _ in range(200):   # the keyword hits' rows load while the embedding is held
        if trips.loads:
            break
        await asyncio.sleep(0.01)
    assert trips.loads == ["recall_rows_with_vectors"] and not searching.done()
    counting.gate.set()
    found = await searching
    assert found[0].memory.id == ids[3] and found[0].score.vector > 0
    assert [(s.memory.id, s.score) for s in found] == [(s.memory.id, s.score) for s in plain]

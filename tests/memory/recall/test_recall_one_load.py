"""With the query embedded before the keyword half ends (the bot prefetches it), the rows of
both halves load in one trip to SQLite's thread after the vector search, however late the
search returns; while the query is still being embedded, the keyword hits' rows load
meanwhile. Either way the ranking is the same."""

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
        for name in ("get_many", "get_many_with_vectors"):
            setattr(store, name, self._counted(name, getattr(store, name)))

    def _counted(self, name: str, real: Any) -> Any:
        async def counted(*args: Any, **kwargs: Any) -> Any:
            self.loads.append(name)
            return await real(*args, **kwargs)
        return counted


def _search_after_keywords(store: MemoryStore) -> asyncio.Event:
    """Hold the vector search until the keyword half's search has returned: the order a
    loaded machine gives when the search's worker thread waits for a core."""
    keywords_done = asyncio.Event()
    keyword_search, vector_search = store.keyword_index.search, store.vectors.search

    async def keywords(*args: Any, **kwargs: Any) -> Any:
        try:
            return await keyword_search(*args, **kwargs)
        finally:
            keywords_done.set()

    async def vectors(*args: Any, **kwargs: Any) -> Any:
        await asyncio.wait_for(keywords_done.wait(), 30)
        return await vector_search(*args, **kwargs)

    store.keyword_index.search = keywords   # type: ignore[method-assign]
    store.vectors.search = vectors   # type: ignore[method-assign]
    return keywords_done


async def test_a_prefetched_query_loads_the_rows_once_after_a_late_search(
        sqlite_store: MemoryStore) -> None:
    ids = [(await sqlite_store.save("1", NewMemory(t))).memory.id for t in FACTS]
    recall = MemoryRecall(sqlite_store, model_settings())
    plain = await recall.recall("1", QUESTION, k=3, now=NOW, touch=False)
    keywords_done = _search_after_keywords(sqlite_store)
    trips = Trips(sqlite_store)
    prefetch = recall.prefetch("1", QUESTION)
    assert prefetch is not None
    await prefetch
    found = await recall.recall("1", QUESTION, k=3, now=NOW, touch=False)
    assert keywords_done.is_set()   # the search did return after the keyword half
    assert trips.loads == ["get_many_with_vectors"]
    assert found[0].memory.id == ids[3] and found[0].score.vector > 0
    assert [(s.memory.id, s.score) for s in found] == [(s.memory.id, s.score) for s in plain]


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
    assert trips.loads == ["get_many_with_vectors"] and not searching.done()
    counting.gate.set()
    found = await searching
    assert found[0].memory.id == ids[3] and found[0].score.vector > 0
    assert [(s.memory.id, s.score) for s in found] == [(s.memory.id, s.score) for s in plain]

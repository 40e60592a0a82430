"""A message's query is embedded once, starting when the message arrives: the recall of the
turn finds the vector ready (or joins the embedding under way) and ranks exactly as without
the head start."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from rumi.memory.files.journal import Journal
from rumi.memory.install import DailyLogRecall
from rumi.memory.recall.retrieval import MemoryRecall
from rumi.memory.store.memories import MemoryStore
from rumi.memory.store.models import NewMemory
from rumi.memory.store.switch import MemorySwitch
from tests.memory.conftest import model_settings

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
FACTS = ["The user's cat is called Miso and loves tuna",
         "Lucía trabaja como enfermera en el hospital de Valencia",
         "Anoche cené paella con mis primos en la playa",
         "The user plays the cello in an amateur orchestra on Thursdays"]


class CountingEmbedder:
    """The real embedder, counting the query embeddings it is asked for (and able to hold
    them back, to catch a recall while its prefetch is still under way)."""

    def __init__(self, real: Any) -> None:
        self.real = real
        self.queries: list[str] = []
        self.asked = asyncio.Event()   # set by the first query
        self.gate = asyncio.Event()
        self.gate.set()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)

    async def embed_query(self, text: str) -> np.ndarray | None:
        self.queries.append(text)
        self.asked.set()
        await self.gate.wait()
        return await self.real.embed_query(text)


def _counting(store: MemoryStore) -> CountingEmbedder:
    counting = CountingEmbedder(store.index.embedder)
    store.index.embedder = counting   # type: ignore[assignment]
    return counting


async def _held_prefetch(store: MemoryStore, question: str
                         ) -> tuple[MemoryRecall, CountingEmbedder]:
    """A recall whose prefetch of `question` has asked for its embedding, held back."""
    recall = MemoryRecall(store, model_settings())
    counting = _counting(store)
    counting.gate.clear()
    assert recall.prefetch("1", question) is not None
    await asyncio.wait_for(counting.asked.wait(), 30)
    return recall, counting


async def _done(*prefetches: Awaitable[object] | None) -> None:
    """Wait for the head starts that were started (prefetch gives None for none)."""
    await asyncio.gather(*(p for p in prefetches if p is not None))


async def test_recall_after_a_prefetch_embeds_nothing_and_ranks_the_same(
        sqlite_store: MemoryStore) -> None:
    ids = [(await sqlite_store.save("1", NewMemory(t))).memory.id for t in FACTS]
    recall = MemoryRecall(sqlite_store, model_settings())
    plain = await recall.recall("1", "what is my cat called?", k=3, now=NOW, touch=False)
    counting = _counting(sqlite_store)
    prefetch = recall.prefetch("1", "¿Qué cené ayer con mis primos?")
    assert prefetch is not None
    await prefetch
    # the text recall embeds: the relative date taken out, as recall does it
    assert len(counting.queries) == 1 and "ayer" not in counting.queries[0]
    found = await recall.recall("1", "¿Qué cené ayer con mis primos?", k=3, now=NOW,
                                touch=False)
    assert len(counting.queries) == 1   # no second embedding
    assert found[0].memory.id == ids[2] and found[0].score.vector > 0
    again = await recall.recall("1", "what is my cat called?", k=3, now=NOW, touch=False)
    assert [(s.memory.id, s.score.total) for s in again] == \
        [(s.memory.id, s.score.total) for s in plain]


async def test_a_recall_joins_the_prefetch_under_way(sqlite_store: MemoryStore) -> None:
    ids = [(await sqlite_store.save("1", NewMemory(t))).memory.id for t in FACTS]
    recall, counting = await _held_prefetch(sqlite_store, "who plays the cello?")
    searching = asyncio.ensure_future(recall.recall("1", "who plays the cello?", k=2, now=NOW))
    await asyncio.sleep(0.05)
    assert not searching.done()   # waiting for the one embedding, not running its own
    counting.gate.set()
    found = await searching
    assert counting.queries == ["who plays the cello?"]
    assert found[0].memory.id == ids[3] and found[0].score.vector > 0


async def test_a_cancelled_recall_does_not_cancel_the_shared_embedding(
        sqlite_store: MemoryStore) -> None:
    await sqlite_store.save("1", NewMemory(FACTS[0]))
    recall, counting = await _held_prefetch(sqlite_store, "tuna for the cat")
    first = asyncio.ensure_future(recall.recall("1", "tuna for the cat", k=1, now=NOW))
    await asyncio.sleep(0.02)
    first.cancel()
    counting.gate.set()
    found = await recall.recall("1", "tuna for the cat", k=1, now=NOW)
    assert found and found[0].score.vector > 0 and counting.queries == ["tuna for the cat"]


async def test_keyword_mode_and_blank_queries_prefetch_nothing(
        sqlite_store: MemoryStore) -> None:
    await sqlite_store.save("1", NewMemory(FACTS[0]))
    counting = _counting(sqlite_store)
    keyword = MemoryRecall(sqlite_store, model_settings(), mode="keyword")
    assert keyword.prefetch("1", "my cat") is None   # nothing to embed nor translate
    hybrid = MemoryRecall(sqlite_store, model_settings())
    assert hybrid.prefetch("1", "   ") is None
    await _done(hybrid.prefetch("../etc", "my cat"))   # a bad chat id: logged, nothing raised
    assert counting.queries == []


async def test_the_daily_log_wrapper_prefetches_only_where_memory_is_on(
        sqlite_store: MemoryStore, data_dir: Path) -> None:
    await sqlite_store.save("1", NewMemory(FACTS[0]))
    await sqlite_store.save("2", NewMemory(FACTS[0]))
    counting = _counting(sqlite_store)
    switch = MemorySwitch(sqlite_store)
    await switch.set("2", False)
    inner = MemoryRecall(sqlite_store, model_settings())
    wrapper = DailyLogRecall(inner, Journal(data_dir), 500, switch=switch)
    await _done(wrapper.prefetch("2", "my cat Miso"),   # memory off: its recall never runs
                wrapper.prefetch("1", "the cat's name"))
    assert counting.queries == ["the cat's name"]

"""One chat's memories never change another chat's recall (issue 7: isolation between chats).

Keyword statistics (BM25's IDF and average length, the rarest-first term budget) used to be
computed over one table shared by every chat: a chat that filled up with a common word changed
— and with a small budget emptied — another chat's results. Each chat now has its own table, so
chat B's recall must be *identical*, ids and every score component, before and after chat A
stores a hundred notes full of B's query words.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from rumi.config import MemorySettings
from rumi.memory.recall.retrieval import MemoryRecall
from rumi.memory.store.memories import MemoryStore
from rumi.memory.store.models import MemoryType, NewMemory
from rumi.memory.vectors.embeddings import Embedder
from tests.memory.conftest import model_settings, open_store

NOW = datetime(2026, 3, 1, 12, tzinfo=UTC)
B_NOTES = ("Python is my favourite language", "I build small web apps with Flask",
           "Bookmarked a Python Flask tutorial for the weekend", "Dinner was pasta again")


async def fill_and_compare(store: MemoryStore, recall: MemoryRecall, a_notes: int) -> None:
    await store.save_many("chatb", [NewMemory(n, type=MemoryType.FACT) for n in B_NOTES])

    async def snapshot() -> list[tuple[int, tuple[float, ...]]]:
        found = await recall.recall("chatb", "python flask", k=10, now=NOW, touch=False)
        return [(s.memory.id, (s.score.total, s.score.relevance, s.score.keyword,
                               s.score.vector, s.score.recency)) for s in found]

    before = await snapshot()
    assert {m.content for m in await store.get_many("chatb", [i for i, _ in before])} >= {
        B_NOTES[0], B_NOTES[1], B_NOTES[2]}
    await store.save_many("chata", [NewMemory(f"python note {n}: more python, always python",
                                              type=MemoryType.FACT) for n in range(a_notes)])
    assert await snapshot() == before


@pytest.mark.parametrize("doc_budget", [50, 2_000])
async def test_keyword_recall_in_one_chat_ignores_another_chats_words(
    data_dir: Path, doc_budget: int
) -> None:
    """Budget 50: A's 100 "python" notes used to drop "python" from B's query entirely;
    budget 2,000: they used to lower its IDF, changing B's scores."""
    settings = MemorySettings(embeddings_enabled=False, recall_keyword_doc_budget=doc_budget)
    store = await open_store(data_dir, settings, None)
    try:
        await fill_and_compare(store, MemoryRecall(store, settings), a_notes=100)
    finally:
        await store.close()


async def test_hybrid_recall_in_one_chat_ignores_another_chat(
    data_dir: Path, embedder: Embedder
) -> None:
    settings = model_settings(recall_keyword_doc_budget=50)
    store = await open_store(data_dir, settings, embedder)
    try:
        await fill_and_compare(store, MemoryRecall(store, settings), a_notes=60)
    finally:
        await store.close()


async def test_text_search_ranks_with_the_chats_own_statistics(data_dir: Path) -> None:
    """`/search` and `/forget` (`keyword_search`) ranked on the shared `memories_fts`, whose
    IDF counted every chat: A storing "apple" notes flipped the order of B's "apple" and
    "banana" hits — B could learn which words A uses. Now B's scores are untouched."""
    settings = MemorySettings(embeddings_enabled=False)
    store = await open_store(data_dir, settings, None)
    try:
        await store.save_many("chatb", [NewMemory("apple pie recipe from grandma"),
                                        NewMemory("banana bread recipe from grandma")])
        before = await store.keyword_search("chatb", "apple banana", 10)
        assert len(before) == 2
        await store.save_many("chata", [NewMemory(f"apple note {n}") for n in range(40)])
        assert await store.keyword_search("chatb", "apple banana", 10) == before
        assert await store.keyword_search("chatb", "apple banana", 10, match_all=True) == []
    finally:
        await store.close()

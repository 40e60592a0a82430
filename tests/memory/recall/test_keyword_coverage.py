"""The keyword half weighs as much as the query's evidence it holds: a word the chat says in
every memory (a speaker's name) or never (another language's word) is no evidence, so a
question that shares only those with the chat is decided by meaning."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

import pytest

from rumi.memory.recall.fusion import fuse
from rumi.memory.recall.query import plan
from rumi.memory.recall.retrieval import MemoryRecall
from rumi.memory.store.coverage import idf, query_coverage
from rumi.memory.store.memories import MemoryStore
from rumi.memory.store.models import NewMemory
from tests.conftest import require_real_model
from tests.memory.backends import sqlite_only_kw
from tests.memory.conftest import model_settings

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def test_idf_is_bm25s_positive_form() -> None:
    assert idf(1, 100) == pytest.approx(math.log(1 + 99.5 / 1.5))
    assert idf(1000, 1000) < 0.001 < idf(500, 1000) < 0.7  # in every memory: nothing
    assert idf(0, 100) > idf(1, 100)  # never said: the rarest of all
    assert idf(5, 3) == idf(5, 5)  # a count over a stale size is a word in every memory


def test_coverage_counts_the_ranked_words_by_their_rarity() -> None:
    # a rare word and a name in every memory, both ranked: everything is covered
    assert query_coverage([2, 100], [True, True], 100) == pytest.approx(1.0)
    # only the name is known to the chat (the other word never said): almost nothing
    assert query_coverage([100, 0], [True, False], 100) < 0.001
    # two equally rare words, one left out (too common for the budget): half
    assert query_coverage([3, 3], [True, False], 100) == pytest.approx(0.5)
    assert query_coverage([], [], 100) == 0.0
    assert query_coverage([100], [True], 100) == 1.0  # all there is, however weak


def test_the_keyword_weight_scales_only_the_keyword_half() -> None:
    """Memory 1 is the best keyword hit, 2 the closest in meaning: at full keyword weight 1
    wins, at 0.1 meaning decides."""
    keyword, cosines = [(1, 8.0), (2, 1.0)], {1: 0.30, 2: 0.60}
    full = fuse(keyword, cosines, vector_weight=0.7, min_similarity=0.25)
    weak = fuse(keyword, cosines, vector_weight=0.7, min_similarity=0.25, keyword_weight=0.1)
    assert [f.memory_id for f in full] == [1, 2]
    assert [f.memory_id for f in weak] == [2, 1]
    assert weak[0].keyword == pytest.approx(0.1 * 1 / 8)


# SQLite only: PostgreSQL also stems each word in Spanish, so "adoptó" matches "adopted" there
# directly (tests/memory/store/test_pg_ranking_parity.py checks its coverage)
@sqlite_only_kw
async def test_the_keyword_search_says_how_much_of_the_query_it_covers(
    kw_store: MemoryStore,
) -> None:
    await kw_store.save_many("1", [
        NewMemory(content=f"Caroline: {text}", created_at=T0 + timedelta(hours=4 * n))
        for n, text in enumerate(["we adopted a puppy", "the concert was loud",
                                  "my sister paints", "I ran a marathon"])])
    index = kw_store.keyword_index
    english = await index.search("1", plan("Caroline puppy"), 10)
    assert [i for i, _ in english][:1] == [1] and english.coverage == pytest.approx(1.0)
    spanish = await index.search("1", plan("¿Caroline adoptó un cachorro?"), 10)
    assert len(spanish) == 4  # the name still matches every memory…
    assert spanish.coverage < 0.1  # …but it is no evidence of which one is meant
    nothing = await index.search("1", plan("cachorro"), 10)
    assert list(nothing) == [] and nothing.coverage == 0.0


async def test_a_question_sharing_only_a_name_with_the_chat_is_decided_by_meaning(
    store: MemoryStore,
) -> None:
    """Every memory starts with the speaker's name; the question's other word ("kitty") is
    never said. BM25 then ranks by length alone (the shortest memory first) and, normalised to
    1, outweighs the cosine; weighed by its coverage (0) it no longer does."""
    require_real_model()
    cat = "Caroline: my cat is called Miso, she sleeps all day on the sofa and loves tuna"
    await store.save_many("1", [
        NewMemory(content=text, created_at=T0 + timedelta(hours=4 * n)) for n, text in
        enumerate(["Caroline: I went to the gym", "Caroline: the train was late again",
                   cat, "Caroline: we painted the kitchen walls blue last weekend",
                   "Caroline: dogs bark", "Caroline: so busy"])])
    query = "Caroline kitty"
    weighed = MemoryRecall(store, model_settings())
    found = await weighed.recall("1", query, k=6, touch=False)
    assert found[0].memory.content == cat and found[0].score.keyword < 0.05
    flat = MemoryRecall(store, model_settings(recall_keyword_coverage=False))
    assert (await flat.recall("1", query, k=6, touch=False))[0].memory.content != cat

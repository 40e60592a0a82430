"""The keyword half ranks alike on both stores where the two should agree: the same corpus
(same order, so the same conversation context), English questions whose words PostgreSQL's
`english` stemmer and FTS5's Porter stemmer reduce alike, BM25 on both (k1 1.2, b 0.75, the
content counting twice the earlier turn and four times the one before it).

Scores differ in scale (token counts: PostgreSQL drops stop words from a memory's length,
FTS5 does not), so what is compared is the order of the memories found.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from rumi.config import MemorySettings
from rumi.memory.recall.query import STOPWORDS, plan
from rumi.memory.recall.translate import Translator
from rumi.memory.store.coverage import idf
from rumi.memory.store.models import MemoryType, NewMemory
from rumi.memory.store.postgres.store import PgMemoryStore
from tests.memory.conftest import open_store
from tests.memory.recall.test_translate import write_dictd

KW = MemorySettings(embeddings_enabled=False)
CHAT = "4711"

CORPUS = [
    ("I adopted a dog named Rufus last spring", MemoryType.EPISODIC),
    ("Rufus loves running on the beach every morning", MemoryType.EPISODIC),
    ("My sister Lucy moved to Boston for her new job", MemoryType.EPISODIC),
    ("Lucy works as a nurse in a children's hospital", MemoryType.FACT),
    ("We painted the kitchen green over the weekend", MemoryType.EPISODIC),
    ("The kitchen window faces the garden and the garden has roses", MemoryType.EPISODIC),
    ("I am training for a marathon in October", MemoryType.DECISION),
    ("The marathon route crosses the river twice", MemoryType.FACT),
    ("Boston has great seafood restaurants near the harbor", MemoryType.FACT),
    ("My favourite book is about a dog who travels across the country", MemoryType.PREFERENCE),
    ("I bought running shoes for the marathon training", MemoryType.EPISODIC),
    ("Lucy called to say the hospital promoted her", MemoryType.EPISODIC),
]

QUESTIONS = [
    "What is the name of my dog?",
    "Where did Lucy move?",
    "What colour did we paint the kitchen?",
    "When is the marathon?",
    "What does Lucy do at the hospital?",
    "Where does Rufus like running?",
    "Which restaurants in Boston?",
    "What shoes did I buy for training?",
]


@pytest.fixture
async def both(tmp_path: Path, memory_pg_url: str):
    sqlite = await open_store(tmp_path, KW, None)
    pg = await PgMemoryStore.open(memory_pg_url, "test", KW, None)
    try:
        for store in (sqlite, pg):
            for text, kind in CORPUS:   # one by one: each captures the same earlier turns
                await store.save(CHAT, NewMemory(text, type=kind))
        yield sqlite, pg
    finally:
        await sqlite.close()
        await pg.close()


async def ranked(store, question: str) -> list[str]:
    hits = await store.keyword_index.search(CHAT, plan(question), 10)
    rows = {m.id: m.content for m in await store.get_many(CHAT, [i for i, _ in hits])}
    return [rows[i] for i, _ in hits]


@pytest.mark.parametrize("question", QUESTIONS)
async def test_both_stores_rank_the_same_memories_in_the_same_order(both, question):
    sqlite, pg = both
    expected = await ranked(sqlite, question)
    assert expected, "the corpus answers every question by keywords"
    assert await ranked(pg, question) == expected


async def searched(store, query) -> tuple[list[str], float]:
    hits = await store.keyword_index.search(CHAT, query, 10)
    rows = {m.id: m.content for m in await store.get_many(CHAT, [i for i, _ in hits])}
    return [rows[i] for i, _ in hits], hits.coverage


async def test_a_question_sharing_only_a_name_has_the_same_low_coverage_on_both(both):
    """"Rufus" is in 4 of the 12 memories' indexed text (2 said it, the 2 after them have it as
    an earlier turn), "bark" and "night" in none: both stores rank the same memories, and
    both say the keyword half holds only the name's share of the question's evidence."""
    sqlite, pg = both
    question = plan("Does Rufus bark at night?")
    assert question.terms == ("rufus", "bark", "night")
    found, coverage = await searched(sqlite, question)
    assert found[:2] == ["I adopted a dog named Rufus last spring",
                         "Rufus loves running on the beach every morning"]
    assert coverage == pytest.approx(idf(4, 12) / (idf(4, 12) + 2 * idf(0, 12)))
    assert await searched(pg, question) == (found, pytest.approx(coverage))


async def test_a_spanish_question_is_searched_through_its_alternatives_on_both(both, tmp_path):
    """A Spanish question over these English memories shares no word with them; its
    translations (a two-entry dictionary written here) find the same memory on both stores,
    with the same coverage, and a word the chat knows is never replaced."""
    sqlite, pg = both
    words = tmp_path / "dictd"
    words.mkdir()
    write_dictd(words, "freedict-spa-eng", [("nombre", "name"), ("perro", "dog")])
    translator = Translator(words, stop=STOPWORDS)
    translator.load()
    question = plan("¿Cuál es el nombre del perro?")
    for store in (sqlite, pg):
        alone, coverage = await searched(store, question)
        assert (alone, coverage) == ([], 0.0)
    translated = replace(question, alternatives=translator.alternatives(question.terms))
    assert set(translated.alternatives.values()) == {("name",), ("dog",)}
    found, coverage = await searched(sqlite, translated)
    assert found[0] == "I adopted a dog named Rufus last spring"
    assert coverage == pytest.approx(1.0)
    assert await searched(pg, translated) == (found, pytest.approx(coverage))
    known = replace(plan("marathon"), alternatives={"marathon": ("kitchen",)})
    kept, _ = await searched(sqlite, known)
    assert kept and not any("kitchen" in text for text in kept)
    assert (await searched(pg, known))[0] == kept

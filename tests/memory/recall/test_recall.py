"""MemoryRecall on the real store: hybrid relevance, CTO decay, exclusions, access stats,
isolation, keyword-only fallback, min_score, conversational context and dates."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta

import pytest

from rumi import messages as msg
from rumi.memory.recall.retrieval import MemoryRecall
from rumi.memory.store.memories import MemoryStore
from rumi.memory.store.models import MemoryType, NewMemory
from tests.conftest import require_real_model
from tests.memory.backends import sqlite_only
from tests.memory.conftest import model_settings
from tests.memory.recall.turns import first_two

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
FACTS = [
    "Lucía trabaja como enfermera en el hospital de Valencia",
    "The user's cat is called Miso and loves tuna",
    "Rumi runs on a Raspberry Pi 4 with 4 GB of RAM",
    "The user plays the cello in an amateur orchestra on Thursdays",
]


async def save(store: MemoryStore, chat: str, text: str, **kw: object) -> int:
    return (await store.save(chat, NewMemory(content=text, **kw))).memory.id  # type: ignore[arg-type]


async def test_most_relevant_memory_first_with_components(store: MemoryStore) -> None:
    require_real_model()
    ids = [await save(store, "1", t) for t in FACTS]
    recall = MemoryRecall(store, model_settings())
    found = await recall.recall("1", "what is the name of my cat?", k=3, now=NOW)
    assert found[0].memory.id == ids[1]
    top = found[0].score
    assert top.relevance == 1.0 and top.keyword > 0 and top.vector > 0.3
    assert all(a.score.total >= b.score.total for a, b in zip(found, found[1:], strict=False))
    semantic = await recall.recall("1", "musical instrument hobby", k=1, now=NOW)
    assert semantic[0].memory.id == ids[3]


async def test_temporal_memory_decays_faster_than_preference(store: MemoryStore) -> None:
    t = await save(store, "1", "The user has a dentist appointment on Friday at noon",
                   type=MemoryType.TEMPORAL, created_at=NOW - timedelta(days=5))
    p = await save(store, "1", "The user prefers dentist appointments at noon",
                   type=MemoryType.PREFERENCE, created_at=NOW - timedelta(days=5))
    recall = MemoryRecall(store, model_settings())
    found = {s.memory.id: s.score for s in await recall.recall("1", "dentist appointment noon",
                                                               k=5, now=NOW)}
    assert found[t].recency < 0.1 < 0.9 < found[p].recency
    fresh = {s.memory.id: s.score for s in await recall.recall(
        "1", "dentist appointment noon", k=5, now=NOW - timedelta(days=5))}
    assert fresh[t].recency == pytest.approx(1.0) and fresh[p].recency == pytest.approx(1.0)
    assert found[p].total - found[t].total > fresh[p].total - fresh[t].total


async def test_superseded_deleted_and_expired_are_excluded(store: MemoryStore) -> None:
    old = await save(store, "1", "The user's favourite colour is green")
    await store.supersede("1", old, NewMemory(content="The user's favourite colour is purple"))
    gone = await save(store, "1", "The favourite colour of the neighbour is orange")
    await store.forget("1", memory_id=gone)
    await save(store, "1", "Favourite colour for this week only: yellow",
               expires_at=datetime.now(UTC) - timedelta(minutes=1))
    recall = MemoryRecall(store, model_settings())
    found = [s.memory.content for s in await recall.recall("1", "favourite colour", k=10)]
    assert found == ["The user's favourite colour is purple"]


async def test_access_stats_are_updated(store: MemoryStore) -> None:
    mid = await save(store, "1", FACTS[2])
    recall = MemoryRecall(store, model_settings())
    await recall.recall("1", "raspberry pi ram", k=2, now=NOW)
    await recall.recall("1", "raspberry pi ram", k=2, now=NOW)
    memory = await store.get("1", mid)
    assert memory is not None and memory.access_count == 2
    assert memory.last_accessed_at == NOW
    await recall.recall("1", "raspberry pi ram", k=2, touch=False)
    assert (await store.get("1", mid)).access_count == 2  # type: ignore[union-attr]


async def test_chats_are_isolated(store: MemoryStore) -> None:
    await save(store, "-100200", "Secret project codename: Bluebird")
    await save(store, "100200", "Public project codename is Sparrow")
    recall = MemoryRecall(store, model_settings())
    mine = await recall.recall("100200", "project codename Bluebird", k=10)
    assert [s.memory.chat_id for s in mine] == ["100200"]
    assert "Bluebird" not in " ".join(s.memory.content for s in mine)
    assert await recall.recall("7", "project codename", k=10) == []


async def test_keyword_only_fallback(kw_store: MemoryStore) -> None:
    ids = [await save(kw_store, "1", t) for t in FACTS]
    recall = MemoryRecall(kw_store, kw_store.settings)
    found = await recall.recall("1", "¿Dónde trabaja Lucía?", k=2)
    assert found[0].memory.id == ids[0] and found[0].score.vector == 0.0
    assert await recall.recall("1", "musical instrument hobby", k=2) == []


async def test_min_score_and_k(store: MemoryStore) -> None:
    for t in FACTS:
        await save(store, "1", t)
    recall = MemoryRecall(store, model_settings())
    everything = await recall.recall("1", "user cat cello orchestra tuna", k=10, touch=False,
                                     now=NOW)
    assert len(everything) >= 2
    cut = everything[0].score.total - 1e-9
    kept = await recall.recall("1", "user cat cello orchestra tuna", k=10, min_score=cut,
                               touch=False, now=NOW)
    assert [s.memory.id for s in kept] == [everything[0].memory.id]
    assert len(await recall.recall("1", "user cat cello orchestra tuna", k=1)) == 1
    assert await recall.recall("1", "   ", k=5) == []
    assert await recall.recall("1", "cat", k=0) == []


@pytest.mark.parametrize("query", ['"', "*", "NEAR(", "-", "cat AND OR NOT", "chat : x",
                                   "\x00\ud800", "a" * 50_000])
async def test_query_syntax_is_just_text(kw_store: MemoryStore, query: str) -> None:
    await save(kw_store, "1", FACTS[1])
    recall = MemoryRecall(kw_store, kw_store.settings)
    assert isinstance(await recall.recall("1", query, k=3), list)


async def test_reply_is_found_through_what_was_said_before_it(kw_store: MemoryStore) -> None:
    t0 = datetime(2026, 2, 1, 18, 0, tzinfo=UTC)
    ask = await save(kw_store, "1", "Ana: Which team did you sign with?",
                     type=MemoryType.EPISODIC, created_at=t0)
    reply = await save(kw_store, "1", "Tim: The Minnesota Wolves, last Friday!",
                       type=MemoryType.EPISODIC, created_at=t0 + timedelta(minutes=1))
    other_chat = await save(kw_store, "2", "Tim: Great news", type=MemoryType.EPISODIC,
                            created_at=t0 + timedelta(minutes=2))
    days_later = await save(kw_store, "1", "Tim: Sounds good to me", type=MemoryType.EPISODIC,
                            created_at=t0 + timedelta(days=3))
    recall = MemoryRecall(kw_store, kw_store.settings)
    found = [s.memory.id for s in await recall.recall("1", "which team signed?", k=5)]
    assert found[:2] == [ask, reply]
    assert days_later not in [s.memory.id for s in await recall.recall("1", "sign wolves", k=5)]
    assert await recall.recall("2", "sign", k=5) == []
    assert other_chat in [s.memory.id for s in await recall.recall("2", "great news", k=5)]


async def test_date_in_the_query_favours_memories_of_that_date(kw_store: MemoryStore) -> None:
    march = await save(kw_store, "1", "Went hiking in the mountains",
                       created_at=datetime(2025, 3, 14, 10, tzinfo=UTC))
    june = await save(kw_store, "1", "Went hiking by the coast",
                      created_at=datetime(2025, 6, 2, 10, tzinfo=UTC))
    recall = MemoryRecall(kw_store, kw_store.settings)
    assert (await recall.recall("1", "hiking in March 2025", k=2))[0].memory.id == march
    assert (await recall.recall("1", "¿adónde fui de excursión hiking el 2 de junio de 2025?",
                                k=2))[0].memory.id == june


async def test_recall_block_fits_the_budget_and_marks_only_what_it_shows(
        kw_store: MemoryStore) -> None:
    ids = [await save(kw_store, "1", f"Note {n}: the garden project needs item {n} " + "x " * 30)
           for n in range(6)]
    recall = MemoryRecall(kw_store, kw_store.settings, count_tokens=lambda s: len(s.split()))
    block = await recall.recall_block("1", "garden project", 100)
    assert block.startswith(msg.RECALL_BLOCK_HEADER)
    assert len(block.split()) <= 100
    shown = [i for i in ids if f"[#{i} " in block]
    assert 1 <= len(shown) < 6
    counts = {m.id: m.access_count for m in await kw_store.get_many("1", ids)}
    assert {i for i, c in counts.items() if c == 1} == set(shown)
    assert await recall.recall_block("1", "garden project", 0) == ""
    assert await recall.recall_block("1", "nothing matches zzzz", 500) == ""


@sqlite_only  # traces SQLite's statements
async def test_query_embedding_overlaps_the_keyword_search(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The query is embedded while BM25 runs, not after it (the two largest costs of a recall;
    issue 7 latency). The keyword table's ranking statement waits, in SQLite's thread, until the
    model has started embedding: sequential code would make it time out."""
    await store.save("77", NewMemory("Ana plays the violin in an orchestra"))
    recall = MemoryRecall(store, store.settings)
    await recall.recall("77", "violin warm-up", k=3)  # builds the chat's keyword table
    model = store.embedder._model  # fastembed's TextEmbedding (third-party)
    started = threading.Event()
    ranked_after_embedding: list[bool] = []
    real_embed = model.embed

    def embed(*args: object, **kwargs: object) -> object:
        started.set()
        return real_embed(*args, **kwargs)

    def trace(sql: str) -> None:
        if "f.rank AS score" in sql:  # the recall ranking statement
            ranked_after_embedding.append(started.wait(timeout=5))

    monkeypatch.setattr(model, "embed", embed)
    await store.connection.set_trace_callback(trace)
    try:
        found = await recall.recall("77", "who plays the violin in the orchestra?", k=3)
    finally:
        await store.connection.set_trace_callback(None)
    assert found and found[0].memory.content.startswith("Ana plays")
    assert ranked_after_embedding == [True]


@pytest.mark.parametrize(("language", "owner", "day"), [
    ("es", "de Luis", "14/03/2025"), ("en", "Luis's", "14 Mar 2025")])
async def test_recalled_memories_read_in_the_chat_language(kw_store: MemoryStore, language: str,
                                                           owner: str, day: str) -> None:
    """Issue 27: an English chat read «Recuerdos relevantes…» and `· de Luis`; the header,
    the owner's label and the date follow the chat's language."""
    await save(kw_store, "1", "Lives in Lima", created_at=datetime(2025, 3, 14, 10, tzinfo=UTC),
               owner_id="222", metadata={"owner_name": "Luis"})
    recall = MemoryRecall(kw_store, kw_store.settings)
    with msg.use_language(language):
        block = await recall.recall_block("1", "Lima", 500)
    header, line = block.splitlines()[:2]
    assert header == msg.text("RECALL_BLOCK_HEADER", language)
    assert line.endswith(f"· {owner} (id 222) · {day}] Lives in Lima"), line


async def test_the_answer_outranks_the_turn_that_asked(kw_store: MemoryStore) -> None:
    """A turn that ends asking shares the later question's words but does not answer it:
    with `recall_question_weight` (0.8) the answer comes first, on both stores; at 1.0 (off)
    the asking turn did."""
    texts = ["Mel: Which vegetables are you growing in your garden this summer, Caroline?",
             "Caroline: Tomatoes and peppers in the garden, mostly.",
             "Ana: The bus was late again today."]
    assert kw_store.settings.recall_question_weight == 0.8
    question = "Which vegetables is Caroline growing?"
    ids, weighted, off = await first_two(kw_store, texts, question,
                                         "recall_question_weight", 1.0)
    assert weighted == [ids[1], ids[0]]
    assert off == [ids[0], ids[1]]

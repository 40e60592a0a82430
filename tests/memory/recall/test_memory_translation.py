"""Memories translated when saved (`recall.memory_translation`): the background translator
with real Apertium pipelines and each store (SQLite, PostgreSQL), woken by saves, resumable,
stopped cleanly, idle without Apertium; and recall's search of the translations by a
question's own words."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from rumi.config import MemorySettings
from rumi.memory.recall.machine_translation import MachineTranslator, Translation
from rumi.memory.recall.memory_translation import (
    MemoryTranslator,
    added,
    indexed_text,
    translated_hits,
)
from rumi.memory.recall.query import plan
from rumi.memory.store.coverage import KeywordHits
from rumi.memory.store.memories import MemoryStore
from rumi.memory.store.models import NewMemory
from tests.conftest import require
from tests.memory.conftest import store_fixture
from tests.memory.recall.test_machine_translation import HAVE_APERTIUM, WHY, keyword_recall

store = store_fixture(MemorySettings(embeddings_enabled=False), model=False)
T0 = datetime(2026, 1, 1, tzinfo=UTC)
CHAT = "5"
SAID = ["My grandmother knits scarves every winter", "I bought a new tent for the camping trip",
        "The concert was loud and long"]


@pytest.fixture
async def background(store: MemoryStore) -> AsyncIterator[MemoryTranslator]:
    require(HAVE_APERTIUM, WHY)
    translator = MemoryTranslator(store.translations,
                                  MachineTranslator(senses=True, timeout=30.0), batch=2,
                                  delay=0.0)
    store.written.append(translator.wake)
    yield translator
    await translator.close()


async def _until_translated(store: MemoryStore, n: int) -> None:
    """Wait (at most 60 s: a loaded CI) until `n` memories of the chat are translated."""
    async def done() -> None:
        while await store.translations.count(CHAT) < n:
            await asyncio.sleep(0.05)
    await asyncio.wait_for(done(), 60)


async def _asked(store: MemoryStore, question: str) -> list[int]:
    """The memories a Spanish question finds through their translations, as recall asks."""
    return [i for i, _ in await translated_hits(store.translations, CHAT, plan(question), 10,
                                                2_000, False)]


async def _translation(store: MemoryStore, memory_id: int) -> tuple[str, str] | None:
    """(language, text) of the memory's stored translation, read from the store's table."""
    if store.backend == "postgres":
        async with store.pool.connection() as conn:
            cur = await conn.execute("SELECT lang, text FROM rumi.memory_translations "
                                     "WHERE memory_id = %s", (memory_id,))
            row = await cur.fetchone()
        return (row["lang"], row["text"]) if row else None
    rows = await store.connection.execute_fetchall(
        "SELECT lang, text FROM memory_translations WHERE memory_id = ?", (memory_id,))
    return (rows[0][0], rows[0][1]) if rows else None


async def _save(store: MemoryStore, texts: list[str], start: int = 0) -> list[int]:
    saved = await store.save_many(CHAT, [NewMemory(content=t, created_at=T0 + timedelta(
        minutes=start + n)) for n, t in enumerate(texts)])
    return [r.memory.id for r in saved]


async def test_saved_memories_are_translated_in_the_background_and_found_in_spanish(
        store: MemoryStore, background: MemoryTranslator) -> None:
    assert await background.start()
    ids = await _save(store, SAID)
    await _until_translated(store, 3)
    assert (await _asked(store, "¿Qué teje la abuela cada invierno?"))[0] == ids[0]
    lang, text = await _translation(store, ids[1])
    assert lang == "es" and "tienda" in text
    # an edit: the old translation goes with the old text, the new one comes after it
    await store.update(CHAT, ids[0], content="My grandmother knits gloves every winter")
    assert await _asked(store, "¿Quién teje las bufandas?") == []
    await _until_translated(store, 3)
    assert (await _asked(store, "¿Quién teje los guantes?"))[0] == ids[0]


async def test_an_upgraded_store_is_translated_at_start_and_a_stop_resumes(
        store: MemoryStore, background: MemoryTranslator) -> None:
    store.written.clear()   # memories from before the feature: nobody was told
    await _save(store, SAID)
    assert await store.translations.count(CHAT) == 0
    assert await background.start()   # the start's pass finds the chat by itself
    await _until_translated(store, 3)
    store.written.append(background.wake)
    await _save(store, ["We adopted a puppy last spring", "He loves chasing the ball"],
                start=10)
    await background.close()   # stopped at once, wherever it was
    assert background.translator.running() == {}   # its pipelines too
    left = await store.translations.missing(CHAT, 10)
    assert await store.translations.count(CHAT) + len(left) == 5   # nothing half-written
    again = MemoryTranslator(store.translations, MachineTranslator(senses=True, timeout=30.0),
                             delay=0.0)
    try:
        assert await again.start()
        await _until_translated(store, 5)
    finally:
        await again.close()


async def test_without_apertium_nothing_runs_and_nothing_is_written(
        store: MemoryStore, tmp_path: Path) -> None:
    idle = MemoryTranslator(store.translations, MachineTranslator(modes_dir=tmp_path))
    store.written.append(idle.wake)
    try:
        assert not await idle.start()
        await _save(store, SAID)
        assert await idle.translate_chat(CHAT) == 0
        assert await store.translations.count(CHAT) == 0
        assert len(await store.translations.missing(CHAT, 10)) == 3
    finally:
        await idle.close()


def test_the_setting_and_the_store_decide_whether_there_is_a_translator() -> None:
    class NoTranslations:
        translations = None

    class Translations:
        translations = object()

    on = MemorySettings()
    assert MemoryTranslator.of(NoTranslations(), on) is None   # a store that keeps none
    assert MemoryTranslator.of(Translations(), on) is not None
    for off in ("recall_translated_memories", "recall_machine_translation"):
        assert MemoryTranslator.of(Translations(), on.model_copy(update={off: False})) is None


def test_indexed_text_appends_the_senses_not_already_said() -> None:
    done = Translation(text="Mi abuela teje bufandas", senses=("abuelo", "teje", "bufanda"))
    assert indexed_text(done) == "Mi abuela teje bufandas\nabuelo bufanda"
    assert indexed_text(Translation(text="Sí", senses=())) == "Sí"


def test_the_translations_search_adds_to_the_others() -> None:
    base = KeywordHits([(1, 4.0), (2, 2.0)], coverage=0.5)
    extra = KeywordHits([(2, 3.0), (3, 1.5)], coverage=1.0)
    merged = added(base, extra, 10)
    assert [i for i, _ in merged] == [2, 1, 3]   # 2: 0.25 + 1.0; 1: 0.5; 3: 0.5 (stable)
    assert merged.coverage == 1.0
    assert added(base, KeywordHits(coverage=0.0), 10) is base


async def test_recall_searches_the_translations_only_for_a_question_in_the_other_language(
        store: MemoryStore, background: MemoryTranslator) -> None:
    """Apertium says "carrera" is "career", so the question's translation misses the race;
    the race memory's own translation ("Fuimos a la carrera…") holds the question's word."""
    ids = await _save(store, ["I bought a new tent for the camping trip",
                              "The shop on the corner sells camping gear", SAID[0],
                              "We went to the race on Sunday", "She wants a career in nursing",
                              SAID[2]])
    await background.translate_chat(CHAT)
    mt = MachineTranslator(timeout=30.0, senses=True)
    keyword: dict[bool, dict[int, float]] = {}
    english: dict[bool, list[tuple[int, float]]] = {}
    try:
        for on in (True, False):
            recall = keyword_recall(store, mt, recall_translated_memories=on)
            found = await recall.recall(CHAT, "¿Fueron a la carrera?", k=6)
            keyword[on] = {s.memory.id: s.score.keyword for s in found}
            found = await recall.recall(CHAT, "What does grandma knit?", k=3)
            english[on] = [(s.memory.id, s.score.keyword) for s in found]
    finally:
        await mt.close()
    race = ids[3]
    assert keyword[True][race] > 0.1 and keyword[False].get(race, 0.0) < 0.001
    assert english[True] == english[False] and english[True][0][0] == ids[2]


async def test_doctor_says_both_stores_keep_translations(tmp_path: Path) -> None:
    from rumi.config import Settings, StoreSettings
    from rumi.memory.checks import check_translation

    require(HAVE_APERTIUM, WHY)
    pg = StoreSettings(backend="postgres", url="postgresql://rumi@127.0.0.1:1/rumi")
    for settings in (Settings(data_dir=tmp_path, store=pg), Settings(data_dir=tmp_path)):
        result = await check_translation(settings)
        assert result.ok and result.detail == "Apertium English <-> Spanish"

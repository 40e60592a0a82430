"""Machine translation of recall questions: real Apertium pipelines (null-flush mode), and
recall using a question's translation only when the chat holds little of the question."""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from rumi.memory.recall.machine_translation import (
    MODES_DIR,
    MachineTranslator,
    escape,
    language,
    unescape,
)
from rumi.memory.recall.retrieval import MemoryRecall
from rumi.memory.recall.translate import Translator
from rumi.memory.store.memories import MemoryStore
from rumi.memory.store.models import NewMemory
from tests.conftest import require
from tests.memory.conftest import model_settings

T0 = datetime(2026, 1, 1, tzinfo=UTC)
HAVE_APERTIUM = (shutil.which("apertium-wblank-mode") is not None
                 and (MODES_DIR / "spa-eng.mode").is_file()
                 and (MODES_DIR / "eng-spa.mode").is_file())
WHY = "Apertium's English–Spanish pair not installed (apt install apertium apertium-eng-spa)"


@pytest.fixture
async def translator() -> AsyncIterator[MachineTranslator]:
    require(HAVE_APERTIUM, WHY)
    mt = MachineTranslator(timeout=30.0)   # a loaded CI machine may start the pipeline slowly
    yield mt
    await mt.close()


def keyword_recall(store: MemoryStore, mt: MachineTranslator | None, **settings: object
                   ) -> MemoryRecall:
    """Keyword-only recall (no model) without FreeDict's word lists, so that only the
    machine translation can reach another language."""
    return MemoryRecall(store, model_settings(embeddings_enabled=False, **settings),
                        translator=Translator(Path("/nonexistent")),
                        machine_translator=mt)


ENGLISH_CHAT = ["The concert was loud and long", "I painted a dawn over the lake",
                "My sister runs marathons", "We adopted a puppy last spring"]


async def save_chat(store: MemoryStore, chat: str, texts: list[str]) -> None:
    await store.save_many(chat, [NewMemory(content=t, created_at=T0 + timedelta(hours=4 * n))
                                 for n, t in enumerate(texts)])


def test_the_question_language_is_told_by_its_function_words_and_accents() -> None:
    assert language("¿Cuándo pintó Melanie un amanecer?") == "es"
    assert language("que hizo el perro") == "es"
    assert language("When did Melanie paint a sunrise?") == "en"
    assert language("Melanie sunrise") is None


def test_reserved_characters_are_escaped_and_come_back() -> None:
    text = "a[b]c^d$e/f\\g@h<i>j{k}"
    assert unescape(escape(text)).text == text
    assert "\0" not in escape("a\0b") and "\n" not in escape("a\nb")
    marked = unescape("When it painted #Melanie a *cachorro in @Sevilla?")
    assert marked.text == "When it painted Melanie a cachorro in Sevilla?"
    assert marked.unknown == ("cachorro", "Sevilla")


async def test_a_spanish_question_comes_out_in_english(translator: MachineTranslator) -> None:
    out = await translator.translate("¿Cuándo pintó Melanie un amanecer?", "es", "en")
    assert out is not None and out.text == "When it painted Melanie a dawn?"
    back = await translator.translate("When did Melanie paint a sunrise?", "en", "es")
    assert back is not None and "Melanie pinta" in back.text and back.unknown == ("sunrise",)
    # reserved characters neither break nor hang the pipeline, which goes on answering
    odd = await translator.translate("¿Qué [hizo] Caroline a/b $5 <el> fin de semana?",
                                     "es", "en")
    assert odd is not None and "[did]" in odd.text and "weekend" in odd.text
    again = await translator.translate("¿Dónde vive Jon?", "es", "en")
    assert again is not None and "Jon" in again.text and "lives" in again.text


async def test_the_cache_answers_again_without_the_pipeline(
        translator: MachineTranslator) -> None:
    translator.cache_size = 2
    first = await translator.translate("¿Dónde vive Jon?", "es", "en")
    assert translator.calls == 1
    assert await translator.translate("¿Dónde vive Jon?", "es", "en") == first
    assert translator.calls == 1
    await translator.translate("¿Qué come Jon?", "es", "en")
    await translator.translate("¿Quién es Jon?", "es", "en")
    assert translator.cached("¿Dónde vive Jon?", "en") is None   # least recently used, gone
    assert await translator.translate("¿Dónde vive Jon?", "es", "en") == first
    assert translator.calls == 4
    # the same question asked twice at once runs once
    both = await asyncio.gather(*(translator.translate("¿Qué bebe Jon?", "es", "en")
                                  for _ in range(2)))
    assert both[0] == both[1] and translator.calls == 5


async def test_without_apertium_there_is_no_translation_and_one_info_line(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))   # nothing of Apertium (nor bash) on it
    mt = MachineTranslator()
    with caplog.at_level(logging.INFO, logger="rumi.memory.recall.machine_translation"):
        assert await mt.translate("¿Dónde vive Jon?", "es", "en") is None
        assert await mt.translate("¿Qué come Jon?", "es", "en") is None
    assert not mt.available and "not on PATH" in (mt.unavailable() or "")
    assert len([r for r in caplog.records if "machine translation off" in r.message]) == 1
    no_data = MachineTranslator(modes_dir=tmp_path / "none")
    monkeypatch.undo()
    assert "apertium-eng-spa" in (no_data.unavailable() or "") or not HAVE_APERTIUM


async def test_an_idle_pipeline_stops_and_starts_again_when_needed() -> None:
    require(HAVE_APERTIUM, WHY)
    mt = MachineTranslator(timeout=30.0, idle_seconds=0.3)
    try:
        first = await mt.translate("¿Dónde vive Jon?", "es", "en")
        assert first is not None
        pid = mt.running()["spa-eng"]
        for _ in range(100):
            await asyncio.sleep(0.1)
            if "spa-eng" not in mt.running():
                break
        with pytest.raises(ProcessLookupError):
            for _ in range(50):
                os.kill(pid, 0)
                await asyncio.sleep(0.1)
        again = await mt.translate("¿Qué come Jon?", "es", "en")
        assert again is not None and "Jon" in again.text and mt.calls == 2
    finally:
        await mt.close()


def hanging_modes(tmp_path: Path) -> Path:
    """A "pair" whose pipeline reads and never answers, and the PID file it leaves."""
    script = tmp_path / "hang.sh"
    script.write_text(f"#!/bin/sh\necho $$ > {tmp_path}/pid\nexec sleep 600\n")
    script.chmod(0o755)
    modes = tmp_path / "modes"
    modes.mkdir()
    for pair in ("spa-eng", "eng-spa"):
        (modes / f"{pair}.mode").write_text(f"{script}\n")
    return modes


async def test_a_hanging_translator_is_given_up_and_then_killed(tmp_path: Path) -> None:
    require(shutil.which("apertium-wblank-mode") is not None, WHY)
    # the hard limit is well above the caller's 0.2 s, so "still there" holds on a slow CI
    mt = MachineTranslator(timeout=0.2, hard_limit=5.0, modes_dir=hanging_modes(tmp_path))
    try:
        assert await mt.translate("¿Dónde vive Jon?", "es", "en") is None  # after 0.2 s
        pid_file = tmp_path / "pid"
        for _ in range(100):   # a loaded machine may start the script after the caller gave up
            if pid_file.is_file() and pid_file.read_text().strip():
                break
            await asyncio.sleep(0.05)
        pid = int(pid_file.read_text())
        os.kill(pid, 0)   # still there: the caller gave up, the pipeline had not yet
        for _ in range(300):
            await asyncio.sleep(0.1)
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                break
        else:
            pytest.fail("the silent pipeline was never stopped")
    finally:
        await mt.close()


async def test_a_spanish_question_finds_what_only_its_translation_matches(
        kw_store: MemoryStore, translator: MachineTranslator) -> None:
    await save_chat(kw_store, "1", ENGLISH_CHAT)
    off = keyword_recall(kw_store, None, recall_machine_translation=False)
    assert off.machine_translator is None
    assert await off.recall("1", "¿Cuándo pintó un amanecer?", k=3, touch=False) == []
    recall = keyword_recall(kw_store, translator)
    found = await recall.recall("1", "¿Cuándo pintó un amanecer?", k=3, touch=False)
    assert [s.memory.content for s in found][:1] == ["I painted a dawn over the lake"]
    # and the reverse: an English question over a Spanish chat
    await save_chat(kw_store, "2", ["El concierto fue largo", "Pinté un amanecer en el lago",
                                    "Adoptamos un cachorro en primavera"])
    found = await recall.recall("2", "When did we adopt a puppy?", k=3, touch=False)
    assert [s.memory.content for s in found][:1] == ["Adoptamos un cachorro en primavera"]


async def test_an_english_question_over_an_english_chat_is_never_translated(
        kw_store: MemoryStore, translator: MachineTranslator) -> None:
    await save_chat(kw_store, "1", ENGLISH_CHAT)
    recall = keyword_recall(kw_store, translator)
    off = keyword_recall(kw_store, None, recall_machine_translation=False)
    for question in ("When did I paint the dawn?", "Which puppy did we adopt?",
                     "How loud was the concert?"):
        with_mt = await recall.recall("1", question, k=4, touch=False)
        without = await off.recall("1", question, k=4, touch=False)
        assert with_mt and [s.memory.id for s in with_mt] == [s.memory.id for s in without]
        prefetch = recall.prefetch("1", question)
        assert prefetch is not None
        await prefetch
    assert translator.calls == 0
    # the same recall does translate a Spanish question over this chat: it could
    spanish = recall.prefetch("1", "¿Cuándo pinté el amanecer?")
    assert spanish is not None
    await spanish
    assert translator.calls == 1


async def test_recall_answers_when_the_translator_hangs_or_is_missing(
        kw_store: MemoryStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    require(shutil.which("apertium-wblank-mode") is not None, WHY)
    await save_chat(kw_store, "1", ["Melanie painted a dawn over the lake",
                                    "Melanie ran a marathon"])
    hanging = MachineTranslator(timeout=0.2, hard_limit=1.0, modes_dir=hanging_modes(tmp_path))
    try:
        found = await keyword_recall(kw_store, hanging).recall(
            "1", "¿Cuándo pintó Melanie un amanecer?", k=3, touch=False)
        assert len(found) == 2   # the name alone, as without translation
    finally:
        await hanging.close()
    monkeypatch.setenv("PATH", str(tmp_path))
    missing = MachineTranslator()
    found = await keyword_recall(kw_store, missing).recall(
        "1", "¿Cuándo pintó Melanie un amanecer?", k=3, touch=False)
    assert len(found) == 2 and not missing.available


async def test_a_question_in_the_chats_other_language_is_translated_as_it_arrives(
        kw_store: MemoryStore, translator: MachineTranslator) -> None:
    await save_chat(kw_store, "1", ENGLISH_CHAT)
    recall = keyword_recall(kw_store, translator)
    task = recall.prefetch("1", "¿Adoptamos un cachorro?")   # keyword-only: nothing to embed
    assert task is not None
    await task   # done when the translation is
    assert translator.cached("¿Adoptamos un cachorro?", "en") is not None
    assert translator.calls == 1
    found = await recall.recall("1", "¿Adoptamos un cachorro?", k=3, touch=False)
    assert translator.calls == 1   # the recall used the prefetched translation
    assert [s.memory.content for s in found][:1] == ["We adopted a puppy last spring"]


async def test_a_spanish_question_over_a_spanish_chat_is_never_translated(
        kw_store: MemoryStore, translator: MachineTranslator) -> None:
    """Its words may be few in the chat (low coverage), but English words would be fewer."""
    await save_chat(kw_store, "1", ["El concierto fue largo y ruidoso",
                                    "Pinté un amanecer en el lago",
                                    "Adoptamos un cachorro en primavera"])
    recall = keyword_recall(kw_store, translator)
    for question in ("¿Qué raza de perro tienen?", "¿Cuándo pintaste el lago?"):
        prefetch = recall.prefetch("1", question)
        assert prefetch is not None
        await prefetch
        await recall.recall("1", question, k=3, touch=False)
    assert translator.calls == 0


async def test_doctor_says_whether_recall_can_translate(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from rumi.config import MemorySettings, Settings
    from rumi.memory.checks import check_translation

    settings = Settings(data_dir=tmp_path)
    if HAVE_APERTIUM:
        result = await check_translation(settings)
        assert result.ok and not result.warning and "Apertium" in result.detail
    off = await check_translation(Settings(
        data_dir=tmp_path, memory=MemorySettings(recall_machine_translation=False)))
    assert off.ok and not off.warning and "off" in off.detail
    monkeypatch.setenv("PATH", str(tmp_path))
    missing = await check_translation(settings)
    assert missing.ok and missing.warning and "apt install apertium" in missing.fix


async def test_what_the_question_and_its_translation_each_find_is_kept(
        kw_store: MemoryStore, translator: MachineTranslator) -> None:
    """"Sevilla" is in the chat as the Spanish say it, the translation says "Seville": the
    question's own words find that memory, the translation's the painting; both rank."""
    await save_chat(kw_store, "1", [*ENGLISH_CHAT, "The trip to Sevilla was hot"])
    recall = keyword_recall(kw_store, translator)
    found = await recall.recall("1", "¿Cuándo pintó un amanecer en Sevilla?", k=3, touch=False)
    assert {s.memory.content for s in found[:2]} == {"I painted a dawn over the lake",
                                                     "The trip to Sevilla was hot"}
    assert translator.calls == 1

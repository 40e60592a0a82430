"""Step 11 (Spanish): Apertium writes British English; a chat that writes American still
matches its words (`recall_translation_spelling`). Real Apertium pipelines, real stores."""

from __future__ import annotations

import pytest

from rumi.memory.recall.machine_translation import MachineTranslator
from rumi.memory.recall.spelling import alternatives, american
from rumi.memory.store.memories import MemoryStore
from tests.conftest import require
from tests.memory.recall.test_machine_translation import (
    HAVE_APERTIUM,
    WHY,
    keyword_recall,
    save_chat,
)


@pytest.mark.parametrize(("british", "us"), [
    ("favourite", "favorite"), ("colours", "colors"), ("neighbourhood", "neighborhood"),
    ("honourable", "honorable"), ("organised", "organized"), ("organisation", "organization"),
    ("recognise", "recognize"), ("analyse", "analyze"), ("travelled", "traveled"),
    ("counsellor", "counselor"), ("centre", "center"), ("centred", "centered"),
    ("theatres", "theaters"), ("grey", "gray"), ("jewellery", "jewelry"),
    ("mamma", "mom")])
def test_british_words_get_their_american_spelling(british: str, us: str) -> None:
    assert american(british) == us


@pytest.mark.parametrize("word", [
    "hour", "four", "your", "tour", "exercise", "surprise", "advise", "emphasis",
    "socialist", "characteristic", "criticism", "realist", "favorite", "color", "travel",
    "center", "tienda", "favorito", "organizar"])
def test_other_words_are_left_alone(word: str) -> None:
    assert american(word) is None


def test_alternatives_are_stand_ins_for_the_british_words_only() -> None:
    assert alternatives(("which", "favourite", "flavour", "mango")) == {
        "favourite": ("favorite",), "flavour": ("flavor",)}
    assert alternatives(()) == {}


AMERICAN_CHAT = ["Our neighbor is Tom, a retired pilot", "The concert was loud and long",
                 "My sister runs marathons"]
QUESTION = "¿Cómo se llama mi vecino?"   # Apertium: "How it calls my neighbour?"


async def test_a_spanish_question_finds_the_american_spelling(kw_store: MemoryStore) -> None:
    require(HAVE_APERTIUM, WHY)
    await save_chat(kw_store, "1", AMERICAN_CHAT)
    mt = MachineTranslator(timeout=30.0)
    try:
        translation = await mt.translate(QUESTION, "es", "en")
        assert translation is not None and "neighbour" in translation.text.lower()
        on = keyword_recall(kw_store, mt)
        assert on.settings.recall_translation_spelling   # the default
        found = await on.recall("1", QUESTION, k=3, touch=False)
        assert [s.memory.content for s in found] == ["Our neighbor is Tom, a retired pilot"]
        off = keyword_recall(kw_store, mt, recall_translation_spelling=False)
        assert await off.recall("1", QUESTION, k=3, touch=False) == []
        # an English question is never translated: the setting cannot move it
        english = "Who is our neighbor?"
        assert [s.memory.id for s in await on.recall("1", english, k=3, touch=False)] == \
            [s.memory.id for s in await off.recall("1", english, k=3, touch=False)]
    finally:
        await mt.close()


async def test_a_british_chat_is_searched_with_its_own_words(kw_store: MemoryStore) -> None:
    """The American spelling is a stand-in: where the chat wrote the British word, the
    search is the one it was."""
    require(HAVE_APERTIUM, WHY)
    await save_chat(kw_store, "1", ["Our neighbour is Tom, a retired pilot",
                                    "The shop's neighbor is a bakery",
                                    "My sister runs marathons"])
    mt = MachineTranslator(timeout=30.0)
    try:
        on = await keyword_recall(kw_store, mt).recall("1", QUESTION, k=3, touch=False)
        off = await keyword_recall(kw_store, mt, recall_translation_spelling=False).recall(
            "1", QUESTION, k=3, touch=False)
        assert [s.memory.content for s in on] == [s.memory.content for s in off] == [
            "Our neighbour is Tom, a retired pilot"]
    finally:
        await mt.close()

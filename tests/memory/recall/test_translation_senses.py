"""Step 9 (Spanish): every sense Apertium's bilingual dictionary gives a question's words
(`recall_translation_senses`), and the query vector with the translation's
(`recall_translation_vector`: joined or mean). Real Apertium pipelines, real stores and model."""

from __future__ import annotations

from collections.abc import AsyncIterator

import numpy as np
import pytest

from rumi.memory.recall.machine_translation import MachineTranslator, senses
from rumi.memory.recall.retrieval import MemoryRecall
from rumi.memory.store.api import MemoryStoreAPI
from rumi.memory.store.memories import MemoryStore
from tests.conftest import require
from tests.memory.conftest import model_settings
from tests.memory.recall.test_machine_translation import (
    HAVE_APERTIUM,
    WHY,
    keyword_recall,
    save_chat,
)


@pytest.fixture
async def sensing() -> AsyncIterator[MachineTranslator]:
    require(HAVE_APERTIUM, WHY)
    mt = MachineTranslator(timeout=30.0, senses=True)
    yield mt
    await mt.close()


def test_senses_are_every_translation_the_dictionary_gives_once_in_order() -> None:
    stream = ("^¿<lquest>/$^Qué<prn><itg>/What<prn><itg>$ ^*donó/*donó$ "
              "^darse# cuenta<vblex>/@darse# cuenta<vblex>$ ^volver<vblex>/go# back<vblex>/"
              "return<vblex>$ ^carrera<n><f>/career<n>/race<n>$ ^la<det>/the<det>$ "
              "^carrera<n><f>/career<n>/race<n>$^?<sent>/?<sent>$")
    assert senses(stream) == ("What", "go back", "return", "career", "race", "the", "?")
    assert senses("") == ()


async def test_the_senses_pipeline_keeps_what_lexical_selection_drops(
        sensing: MachineTranslator) -> None:
    out = await sensing.translate("¿Qué compró Jon en la tienda?", "es", "en")
    assert out is not None and "tent" in out.text and "shop" not in out.text
    assert {"buy", "tent", "shop"} <= set(out.senses)
    assert sensing.calls == 1
    assert set(sensing.running()) == {"spa-eng"}   # the senses come from the same pipeline
    again = await sensing.translate("¿Dónde está la tienda?", "es", "en")   # in step
    assert again is not None and "shop" in again.senses and "buy" not in again.senses
    back = await sensing.translate("Where did Ana run the race?", "en", "es")
    assert back is not None and "carrera" in back.senses


async def test_without_senses_the_translation_has_none() -> None:
    require(HAVE_APERTIUM, WHY)
    mt = MachineTranslator(timeout=30.0)
    try:
        out = await mt.translate("¿Qué compró Jon en la tienda?", "es", "en")
        assert out is not None and out.senses == () and set(mt.running()) == {"spa-eng"}
    finally:
        await mt.close()


async def test_a_spanish_question_finds_what_only_another_sense_matches(
        kw_store: MemoryStore, sensing: MachineTranslator) -> None:
    """"tienda" comes out "tent"; the chat says "shop": only the senses' search finds it."""
    await save_chat(kw_store, "1", ["I opened a shop downtown", "The concert was loud and long",
                                    "My sister runs marathons"])
    question = "¿Dónde está la tienda?"
    plain = MachineTranslator(timeout=30.0)
    try:
        assert await keyword_recall(kw_store, plain).recall("1", question, k=3,
                                                            touch=False) == []
    finally:
        await plain.close()
    for mode in ("search", "replace"):
        recall = keyword_recall(kw_store, sensing, recall_translation_senses=mode)
        found = await recall.recall("1", question, k=3, touch=False)
        assert [s.memory.content for s in found] == ["I opened a shop downtown"]


async def test_the_query_vector_carries_the_translation_mean_or_joined(
        store: MemoryStoreAPI) -> None:
    require(HAVE_APERTIUM, WHY)
    await save_chat(store, "1", ["I painted a dawn over the lake",
                                 "The concert was loud and long",
                                 "My sister runs marathons", "We adopted a puppy last spring"])
    question = "¿Cuándo pinté el amanecer?"
    mt = MachineTranslator(timeout=30.0)
    try:
        recall = MemoryRecall(store, model_settings(recall_translation_vector="mean"),
                              mode="vector", machine_translator=mt)
        translation = await mt.translate(question, "es", "en")
        assert translation is not None
        mine = np.asarray(await store.embed_query(question))
        theirs = np.asarray(await store.embed_query(translation.text))
        mean = (mine + theirs) / np.linalg.norm(mine + theirs)
        found = await recall.recall("1", question, k=4, touch=False)
        by_content = {s.memory.content: s.score.vector for s in found}
        stored = await store.list("1", limit=10)
        painted = next(m for m in stored if m.content.startswith("I painted"))
        vectors = await store.get_many_with_vectors("1", [painted.id])
        cosine = float(np.dot(vectors[1][painted.id], mean))
        assert by_content["I painted a dawn over the lake"] == pytest.approx(cosine, abs=1e-3)
        assert found[0].memory.content == "I painted a dawn over the lake"
        # "joined" (the default): the question and its translation embedded as one text
        joined = MemoryRecall(store, model_settings(), mode="vector", machine_translator=mt)
        assert joined.settings.recall_translation_vector == "joined"
        one = np.asarray(await store.embed_query(f"{question}\n{translation.text}"))
        found = await joined.recall("1", question, k=4, touch=False)
        by_content = {s.memory.content: s.score.vector for s in found}
        assert by_content["I painted a dawn over the lake"] == pytest.approx(
            float(np.dot(vectors[1][painted.id], one)), abs=1e-3)
        # an English question over the English chat keeps its own vector
        off = MemoryRecall(store, model_settings(), mode="vector")
        english = "When did I paint the dawn?"
        assert [s.score.vector for s in await recall.recall("1", english, k=4, touch=False)] \
            == [s.score.vector for s in await off.recall("1", english, k=4, touch=False)]
    finally:
        await mt.close()

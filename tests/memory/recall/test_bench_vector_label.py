"""The benchmarks build their vector index the way the bot does (`VectorIndex.of_data_dir`,
through `benchmarks/_store.bot_index`): a database kept by `benchmarks/recall_latency.py
--data` opens in the bot with every vector current, and one kept from before (vectors
labelled with the bare model name) is refused instead of re-embedded inside timed recalls."""

from __future__ import annotations

import argparse
import sqlite3
import sys

import pytest

from rumi.memory.factory import open_memory_store
from rumi.memory.store.codec import vector_label
from rumi.memory.vectors.index import VectorIndex
from tests.conftest import MODEL_DIR, REPO, require
from tests.memory.conftest import model_settings

sys.path.insert(0, str(REPO / "benchmarks"))
import recall_latency as bench  # noqa: E402


async def test_a_kept_benchmark_database_is_current_for_the_bot(data_dir, make_settings) -> None:
    require((MODEL_DIR / "model.onnx").exists(), "shared embedding model missing")
    args = argparse.Namespace(model_path=MODEL_DIR, model_name=None, sizes="30", queries=2,
                              warmup=1, k=3, pool=6, query_model="fp32", data=data_dir)
    result = await bench.measure(args)
    label = vector_label(result["model"], True)   # recall_vector_context is on by default

    bot = make_settings(f'[memory]\nembedding_model = "{MODEL_DIR.name}"\n'
                        f'embedding_model_path = "{MODEL_DIR}"\n'
                        "recall_machine_translation = false\n")
    store = await open_memory_store(bot)
    try:
        assert await store.vector_models() == {label: 30}
        assert await store.chats_missing_vectors() == []   # nothing to re-embed at start
    finally:
        await store.close()

    # the same database as the benchmarks kept it before they labelled vectors like the bot
    with sqlite3.connect(data_dir / "rumi.db") as conn:
        conn.execute("UPDATE memory_embeddings SET model = ?", (result["model"],))
    conn.close()
    with pytest.raises(SystemExit, match=r"labelled local/all-MiniLM-L6-v2-onnx, not .*"
                                         r"\+asked-before-1 as the bot writes them"):
        await bench.measure(args)
    with sqlite3.connect(data_dir / "rumi.db") as conn:   # and nothing was re-embedded
        assert conn.execute("SELECT DISTINCT model FROM memory_embeddings").fetchall() == [
            (result["model"],)]
    conn.close()


def test_the_index_is_labelled_with_the_recipe_only_when_it_is_on(tmp_path) -> None:
    require((MODEL_DIR / "model.onnx").exists(), "shared embedding model missing")
    from rumi.memory.vectors.embeddings import Embedder

    for on in (True, False):
        settings = model_settings(recall_vector_context=on, vector_save_interval_seconds=7)
        index = VectorIndex.of_data_dir(tmp_path, Embedder(settings), settings)
        assert index.directory == tmp_path / "vectors" and index.save_interval == 7
        assert index.model_name == vector_label(Embedder(settings).model_name, on)
        assert index.model_name.endswith("+asked-before-1") is on

"""The int8 query twin: made from the real shared model, trusted only when it agrees with it,
and never a reason for recall to fail."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

from rumi.config import Settings
from rumi.memory.factory import query_model_dir
from rumi.memory.store.models import NewMemory
from rumi.memory.vectors.embeddings import Embedder, vector_model_name
from rumi.memory.vectors.query_twin import (
    MANIFEST,
    AlreadyQuantized,
    QuantizeError,
    default_query_model_dir,
    is_quantized,
    quantize_model,
)
from tests.conftest import MODEL_DIR
from tests.memory.conftest import model_settings, open_store

LABEL = vector_model_name(model_settings())


def copy_twin(twin_dir: Path, where: Path, **manifest: str) -> Path:
    target = where / "twin"
    shutil.copytree(twin_dir, target)
    if manifest:
        data = json.loads((target / MANIFEST).read_text(encoding="utf-8"))
        data.update(manifest)
        (target / MANIFEST).write_text(json.dumps(data), encoding="utf-8")
    return target


def loaded(path: Path | None) -> Embedder:
    embedder = Embedder(model_settings(), query_model_path=path)
    assert embedder._ensure_loaded()  # noqa: SLF001 - load now, in this thread
    return embedder


def test_the_twin_is_an_int8_copy_with_a_manifest(twin_dir: Path) -> None:
    source = MODEL_DIR / "model.onnx"
    assert is_quantized(twin_dir / "model.onnx") and not is_quantized(source)
    assert (twin_dir / "model.onnx").stat().st_size < source.stat().st_size / 3
    for name in ("tokenizer.json", "config.json", "vocab.txt"):
        assert (twin_dir / name).read_bytes() == (MODEL_DIR / name).read_bytes()
    manifest = json.loads((twin_dir / MANIFEST).read_text(encoding="utf-8"))
    assert manifest["source_model"] == LABEL and manifest["source_file"] == "model.onnx"
    assert len(manifest["source_sha256"]) == 64
    assert not list(twin_dir.parent.glob(".*")), "no temporary directory left behind"


def test_a_quantized_model_is_not_quantized_again(twin_dir: Path, tmp_path: Path) -> None:
    with pytest.raises(AlreadyQuantized):
        quantize_model(twin_dir, "model.onnx", tmp_path / "again", LABEL)
    with pytest.raises(QuantizeError, match="no model.onnx"):
        quantize_model(tmp_path, "model.onnx", tmp_path / "none", LABEL)
    assert not (tmp_path / "again").exists() and not (tmp_path / "none").exists()


def test_remaking_replaces_the_twin_in_place(twin_dir: Path, tmp_path: Path) -> None:
    target = copy_twin(twin_dir, tmp_path, created_at="old")
    (target / "stale.txt").write_text("from the old twin", encoding="utf-8")
    quantize_model(MODEL_DIR, "model.onnx", target, LABEL)
    assert not (target / "stale.txt").exists()
    assert json.loads((target / MANIFEST).read_text(encoding="utf-8"))["created_at"] != "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["twin"]


async def test_queries_use_the_twin_and_agree_with_the_model(twin_dir: Path) -> None:
    plain, fast = loaded(None), loaded(twin_dir)
    assert fast.query_twin.model is not None and fast.query_twin.agreement >= 0.9
    assert fast.status()["query_model"]["loaded"] is True
    assert plain.status()["query_model"]["loaded"] is False
    question = "¿Cuándo es la cita con el dentista?"
    full = await plain.embed_query(question)
    quick = await fast.embed_query(question)
    assert full.shape == quick.shape == (384,)
    assert np.allclose(full, (await plain.embed([question]))[0], atol=1e-6)
    assert np.isclose(np.linalg.norm(quick), 1.0, atol=1e-5)
    assert 0.9 < float(full @ quick) < 0.9999  # the twin's own vector, close to the model's
    documents = await fast.embed([question])  # memories keep full-precision vectors
    assert np.allclose(documents[0], full, atol=1e-6)


async def test_a_query_does_not_wait_for_a_batch_of_memories(twin_dir: Path) -> None:
    embedder = loaded(twin_dir)
    with embedder._run_lock:  # noqa: SLF001 - as if a long backfill batch held the model
        vector = await asyncio.wait_for(embedder.embed_query("dentista"), timeout=30)
    assert vector is not None
    plain = loaded(None)
    with plain._run_lock:  # noqa: SLF001 - without a twin the query does wait for the batch
        waiting = asyncio.ensure_future(plain.embed_query("dentista"))
        await asyncio.sleep(0.3)
        assert not waiting.done()
    assert (await waiting) is not None


async def test_a_twin_of_another_model_is_refused(twin_dir: Path, tmp_path: Path) -> None:
    embedder = loaded(copy_twin(twin_dir, tmp_path, source_model="local/some-other-model"))
    assert embedder.query_twin.model is None
    assert "made from local/some-other-model" in embedder.query_twin.reason
    question = "where is the violin lesson"
    assert np.array_equal(await embedder.embed_query(question),
                          (await embedder.embed([question]))[0])


async def test_a_twin_that_disagrees_is_refused(twin_dir: Path, tmp_path: Path) -> None:
    """A twin whose weights were scrambled still loads and embeds, but ranks by noise."""
    target = copy_twin(twin_dir, tmp_path)
    graph = onnx.load(str(MODEL_DIR / "model.onnx"))
    rng = np.random.default_rng(3)
    for init in graph.graph.initializer:
        weights = numpy_helper.to_array(init)
        if weights.dtype == np.float32 and weights.ndim == 2:
            init.CopyFrom(numpy_helper.from_array(rng.permutation(weights.ravel()).reshape(
                weights.shape), init.name))
    onnx.save(graph, str(target / "model.onnx"))
    embedder = loaded(target)
    assert embedder.query_twin.model is None and embedder.available
    assert "disagree" in embedder.query_twin.reason


async def test_a_broken_twin_leaves_recall_working(
    twin_dir: Path, tmp_path: Path, data_dir: Path
) -> None:
    target = copy_twin(twin_dir, tmp_path)
    (target / "model.onnx").write_bytes(b"not a model")
    embedder = loaded(target)
    assert embedder.available and embedder.query_twin.model is None
    assert embedder.query_twin.reason.startswith("query model not used")
    store = await open_store(data_dir, model_settings(), embedder)
    try:
        saved = await store.save("70", NewMemory("The violin lesson is on Tuesday"))
        hits = await store.vector_search("70", "music class schedule", 1)
        assert [i for i, _ in hits] == [saved.memory.id]
    finally:
        await store.close()


async def test_the_store_ranks_with_the_twin(twin_dir: Path, data_dir: Path) -> None:
    store = await open_store(data_dir, model_settings(), loaded(twin_dir))
    try:
        ids = {}
        for text in ("The violin lesson is on Tuesday", "Stock markets fell today",
                     "My sister loves spicy ramen"):
            ids[text] = (await store.save("71", NewMemory(text))).memory.id
        hits = await store.vector_search("71", "what food does my sister like", 3)
        assert hits[0][0] == ids["My sister loves spicy ramen"]
        assert store.embeddings_status()["query_model"]["loaded"] is True
    finally:
        await store.close()


def test_where_the_bot_looks_for_the_twin(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path, memory=model_settings())
    default = default_query_model_dir(tmp_path, LABEL)
    assert default == tmp_path / "models" / "all-MiniLM-L6-v2-int8"
    assert query_model_dir(settings) is None  # nothing made yet
    default.mkdir(parents=True)
    assert query_model_dir(settings) is None  # a directory without a manifest is not a twin
    (default / MANIFEST).write_text("{}", encoding="utf-8")
    assert query_model_dir(settings) == default
    off = Settings(data_dir=tmp_path, memory=model_settings(quantized_queries=False))
    assert query_model_dir(off) is None
    elsewhere = Settings(data_dir=tmp_path, memory=model_settings(
        query_model_path=tmp_path / "mine"))
    assert query_model_dir(elsewhere) == tmp_path / "mine"

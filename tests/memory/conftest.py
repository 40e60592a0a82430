"""Memory fixtures: a real rumi.db in the test's data dir, with or without the shared model."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from rumi.config import MemorySettings
from rumi.memory.store.memories import MemoryStore
from rumi.memory.vectors.embeddings import Embedder, vector_model_name
from rumi.memory.vectors.index import VectorIndex
from rumi.memory.vectors.query_twin import quantize_model
from tests.conftest import MODEL_DIR, require

TEST_MODEL = "sentence-transformers/all-MiniLM-L6-v2"


def model_settings(**overrides: object) -> MemorySettings:
    values: dict[str, object] = {"embedding_model": TEST_MODEL,
                                 "embedding_model_path": MODEL_DIR, "embedding_threads": 2,
                                 "embedding_load_wait_seconds": None}  # a loaded CI may be slow
    values.update(overrides)
    return MemorySettings(**values)


@pytest.fixture(scope="session")
def _loaded_embedder() -> Embedder:
    """One loaded model for the whole run (loading costs ~1 s); the Embedder is loop-agnostic."""
    embedder = Embedder(model_settings())
    if (MODEL_DIR / "model.onnx").exists():
        embedder._ensure_loaded()
    return embedder


@pytest.fixture
def embedder(_loaded_embedder: Embedder) -> Embedder:
    require(_loaded_embedder.loaded, f"shared embedding model not usable at {MODEL_DIR}")
    return _loaded_embedder


@pytest.fixture(scope="session")
def twin_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One int8 query twin of the shared model for the whole run (quantizing takes ~2 s)."""
    require((MODEL_DIR / "model.onnx").is_file(), f"shared embedding model missing at {MODEL_DIR}")
    out = tmp_path_factory.mktemp("twin") / "all-MiniLM-L6-v2-int8"
    quantize_model(MODEL_DIR, "model.onnx", out, vector_model_name(model_settings()))
    return out


async def open_store(data_dir: Path, settings: MemorySettings,
                     embedder: Embedder | None) -> MemoryStore:
    vectors = None
    if embedder is not None:
        vectors = VectorIndex(data_dir / "vectors", embedder.dim, embedder.model_name,
                              save_interval=settings.vector_save_interval_seconds)
    return await MemoryStore.open(data_dir / "rumi.db", settings, embedder, vectors)


@pytest.fixture
async def store(data_dir: Path, embedder: Embedder) -> AsyncIterator[MemoryStore]:
    """A store with real embeddings and a real usearch index."""
    st = await open_store(data_dir, model_settings(), embedder)
    try:
        yield st
    finally:
        await st.close()


@pytest.fixture
async def kw_store(data_dir: Path) -> AsyncIterator[MemoryStore]:
    """A keyword-only store (no embedder, no vector index)."""
    st = await open_store(data_dir, MemorySettings(embeddings_enabled=False), None)
    try:
        yield st
    finally:
        await st.close()

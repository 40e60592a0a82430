"""Forgetting removes a memory's vector from its chat's index without rebuilding the index,
leaves no copy of the vector in the saved file, and a crash at any point of it leaves nothing
that recall can find."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np

from rumi.memory.recall.retrieval import MemoryRecall
from rumi.memory.store.models import NewMemory
from rumi.memory.vectors.embeddings import Embedder
from rumi.memory.vectors.index import PLACEHOLDER_KEYS, VectorIndex
from tests.memory.conftest import model_settings, open_store

CHAT = "777"
TEXTS = ["Mi contraseña del router es girasol-42", "Le gusta el ajedrez los domingos",
         "La reunión con Ana es el jueves", "Compró un coche rojo en marzo",
         "Su perro se llama Toby", "Prefiere el té verde al café"]


def _unit(rng: np.random.Generator, n: int, dim: int = 16) -> np.ndarray:
    m = rng.standard_normal((n, dim)).astype(np.float32)
    return m / np.linalg.norm(m, axis=1, keepdims=True)


def _holds(path: Path, vector: np.ndarray) -> bool:
    return np.asarray(vector, dtype=np.float32).tobytes() in path.read_bytes()


async def test_erase_leaves_no_copy_and_keeps_the_rest_searchable(tmp_path: Path) -> None:
    rng = np.random.default_rng(5)
    vecs = _unit(rng, 300)
    index = VectorIndex(tmp_path / "v", 16, "m1", save_interval=3600)
    await index.add("a", list(range(1, 301)), vecs)
    await index.flush()
    path = tmp_path / "v" / "a.usearch"
    assert _holds(path, vecs[9])
    erased: list[int] = []
    for batch in ([10], [20, 21, 22], [300], [5, 999]):   # 999 was never there
        assert await index.erase("a", batch)
        erased += [i for i in batch if i <= 300]
        data = path.read_bytes()   # saved at once: no debounce for an erase
        for i in erased:
            assert vecs[i - 1].tobytes() not in data, i
        for i in erased:
            hits = await index.search("a", vecs[i - 1], 300)
            assert all(k not in erased and k < PLACEHOLDER_KEYS for k, _ in hits)
        # the rest is all there (exactly: asking HNSW for every vector may miss one or two)
        assert await index.verify("a", [i for i in range(1, 301) if i not in erased])
    assert index.removed("a") == len(erased)   # only marked: the graph was not rebuilt
    kept = [i for i in range(1, 301) if i not in erased]
    assert (await index.search("a", vecs[41], 1))[0][0] == 42
    await index.close()
    again = VectorIndex(tmp_path / "v", 16, "m1")
    assert await again.verify("a", kept)   # the placeholders are not keys of the index
    assert await again.erase("a", [kept[0]])   # free slots found again after a load
    assert vecs[kept[0] - 1].tobytes() not in path.read_bytes()
    assert await again.verify("a", kept[1:])
    await again.close()


async def test_forget_erases_the_vector_without_a_rebuild(data_dir: Path,
                                                          embedder: Embedder) -> None:
    st = await open_store(data_dir, model_settings(), embedder)
    try:
        ids = [r.memory.id for r in await st.save_many(CHAT, [NewMemory(t) for t in TEXTS])]
        recall = MemoryRecall(st, model_settings())
        assert (await recall.recall(CHAT, "contraseña del router", k=1))[0].memory.id == ids[0]
        vector = (await st.get_embeddings(CHAT, [ids[0]]))[ids[0]].copy()
        await st.vectors.flush()
        path = data_dir / "vectors" / f"{CHAT}.usearch"
        assert _holds(path, vector)
        gone = await st.forget(CHAT, memory_id=ids[0])
        assert [m.id for m in gone] == [ids[0]]
        assert st.vectors.removed(CHAT) == 1   # erased in place, not rebuilt
        assert not _holds(path, vector)
        assert ids[0] not in [i for i, _ in await st.nearest(CHAT, vector, 10)]
        found = await recall.recall(CHAT, "contraseña del router girasol", k=6)
        assert ids[0] not in [s.memory.id for s in found] and found
        assert await st.vectors.verify(CHAT, ids[1:])
    finally:
        await st.close()


_CHILD = """
import asyncio, json, os, signal, sys
from pathlib import Path
from rumi.memory.store.models import NewMemory
from rumi.memory.vectors import index as index_module
from tests.memory.conftest import model_settings, open_store
from rumi.memory.vectors.embeddings import Embedder

data_dir, point = Path(sys.argv[1]), sys.argv[2]
TEXTS = {texts!r}

def die(*args, **kwargs):
    os.kill(os.getpid(), signal.SIGKILL)

async def main():
    embedder = Embedder(model_settings())
    st = await open_store(data_dir, model_settings(), embedder)
    ids = [r.memory.id for r in await st.save_many("{chat}", [NewMemory(t) for t in TEXTS])]
    await st.prepare_vectors("{chat}")
    await st.vectors.flush()   # the file on disk holds every vector, the forgotten one too
    vector = (await st.get_embeddings("{chat}", [ids[0]]))[ids[0]]
    print(json.dumps({{"ids": ids, "vector": vector.tobytes().hex()}}), flush=True)
    if point == "after_commit":      # SQLite committed the forget, the index untouched
        index_module.VectorIndex.erase = die
    elif point == "before_save":     # removed in memory, the file not yet replaced
        index_module.VectorIndex._save_sync = die
    else:                            # the file replaced, its sidecar not yet written
        index_module.atomic_write_bytes = die
    await st.forget("{chat}", memory_id=ids[0])
    print("not killed", flush=True)

asyncio.run(main())
"""


async def _killed_forget(data_dir: Path, point: str) -> tuple[list[int], bytes]:
    code = textwrap.dedent(_CHILD.format(texts=TEXTS, chat=CHAT))
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[3])}
    proc = subprocess.run([sys.executable, "-c", code, str(data_dir), point], env=env,  # noqa: S603
                          capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == -signal.SIGKILL, proc.stderr[-2000:]
    said = json.loads(proc.stdout.splitlines()[0])
    return said["ids"], bytes.fromhex(said["vector"])


async def test_a_crash_during_a_forget_never_lets_the_memory_be_recalled(
        data_dir: Path, embedder: Embedder) -> None:
    for point in ("after_commit", "before_save", "mid_save"):
        where = data_dir / point
        where.mkdir()
        ids, vector = await _killed_forget(where, point)
        forgotten = ids[0]
        path = where / "vectors" / f"{CHAT}.usearch"
        st = await open_store(where, model_settings(), embedder)
        try:
            assert await st.get(CHAT, forgotten) is None, point   # SQLite had committed
            recall = MemoryRecall(st, model_settings())
            found = await recall.recall(CHAT, "la contraseña del router girasol-42", k=6)
            assert found and forgotten not in [s.memory.id for s in found], point
            assert await st.vectors.verify(CHAT, ids[1:])
            assert vector not in path.read_bytes(), point   # rebuilt before the search
            hits = await st.nearest(CHAT, np.frombuffer(vector, dtype=np.float32), 10)
            assert hits and forgotten not in [i for i, _ in hits], point
        finally:
            await st.close()

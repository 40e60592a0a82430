"""VectorIndex (usearch) on its own, and the store's self-healing of damaged index files."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from rumi.memory.store.codec import vector_label
from rumi.memory.store.models import MemoryInputError, NewMemory
from rumi.memory.vectors.embeddings import Embedder
from rumi.memory.vectors.index import VectorIndex
from tests.memory.conftest import model_settings, open_store


def _unit(rng: np.random.Generator, n: int, dim: int = 8) -> np.ndarray:
    m = rng.standard_normal((n, dim)).astype(np.float32)
    return m / np.linalg.norm(m, axis=1, keepdims=True)


async def test_stored_gives_the_very_vectors_added(tmp_path: Path) -> None:
    """Recall reads keyword-only candidates' vectors from the index instead of SQLite: they
    must be the float32 values added, bit for bit (not normalised), and an index this
    process has not loaded is never loaded for it."""
    rng = np.random.default_rng(4)
    vecs = rng.standard_normal((5, 8)).astype(np.float32) * 3   # not unit length
    index = VectorIndex(tmp_path / "v", 8, "m1", save_interval=0)
    assert await index.stored("a", [1]) == {}                   # nothing loaded yet
    await index.add("a", [1, 2, 3, 4, 5], vecs)
    got = await index.stored("a", [4, 999, 2])
    assert sorted(got) == [2, 4]
    assert got[4].tobytes() == vecs[3].tobytes() and got[2].tobytes() == vecs[1].tobytes()
    await index.add("a", [2], vecs[0])                          # replaced: the new one
    assert (await index.stored("a", [2]))[2].tobytes() == vecs[0].tobytes()
    await index.close()
    again = VectorIndex(tmp_path / "v", 8, "m1")
    assert await again.stored("a", [4]) == {}                   # saved, but not loaded here
    await again.search("a", vecs[3], 1)                         # a search loads it
    assert (await again.stored("a", [4]))[4].tobytes() == vecs[3].tobytes()
    await again.close()


async def test_add_search_remove_persist(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    vecs = _unit(rng, 50)
    index = VectorIndex(tmp_path / "v", 8, "m1", save_interval=3600)
    await index.add("a", list(range(1, 51)), vecs)
    hits = await index.search("a", vecs[9], 3)
    assert hits[0][0] == 10 and hits[0][1] == pytest.approx(1.0, abs=1e-5)
    assert len(hits) == 3 and hits[0][1] >= hits[1][1] >= hits[2][1]
    # re-adding an id replaces its vector instead of failing on a duplicate key
    await index.add("a", [10], vecs[20])
    assert (await index.search("a", vecs[20], 2))[0][0] in {10, 21}
    assert await index.remove("a", [10, 11, 999]) == 2
    assert all(k not in (10, 11) for k, _ in await index.search("a", vecs[10], 50))
    assert index.removed("a") == 3
    assert await index.search("b", vecs[0], 5) == []  # another chat sees nothing
    await index.close()
    assert (tmp_path / "v" / "a.usearch").exists() and not (tmp_path / "v" / "b.usearch").exists()
    meta = json.loads((tmp_path / "v" / "a.json").read_text())
    assert meta["model"] == "m1" and meta["count"] == 48
    again = VectorIndex(tmp_path / "v", 8, "m1")
    assert await again.verify("a", [i for i in range(1, 51) if i not in (10, 11)])
    assert not await again.verify("a", range(1, 51))
    assert (await again.search("a", vecs[30], 1))[0][0] == 31


async def test_rebuild_compacts_and_verify_detects_model_change(tmp_path: Path) -> None:
    rng = np.random.default_rng(2)
    vecs = _unit(rng, 10)
    index = VectorIndex(tmp_path, 8, "m1", save_interval=0)
    await index.add("c", list(range(1, 11)), vecs)
    await index.remove("c", [1, 2, 3])
    await index.rebuild("c", [4, 5], vecs[3:5])
    assert index.removed("c") == 0 and index.count("c") == 2
    assert json.loads((tmp_path / "c.json").read_text())["count"] == 2
    other_model = VectorIndex(tmp_path, 8, "m2")
    assert not await other_model.verify("c", [4, 5])  # built for m1: not trusted
    await index.rebuild("c", [], np.zeros((0, 8), np.float32))
    assert await index.search("c", vecs[0], 3) == []
    await index.drop("c")
    assert not (tmp_path / "c.usearch").exists()


async def test_verify_compares_the_exact_key_set(tmp_path: Path) -> None:
    """Same size is not enough, order does not matter, and a big index is read as a whole
    (its keys come out as one slice, not one lookup per key)."""
    rng = np.random.default_rng(2)
    index = VectorIndex(tmp_path / "v", 8, "m1", save_interval=3600)
    ids = list(range(1, 20_001))
    await index.add("big", ids, _unit(rng, len(ids)))
    await index.close()
    again = VectorIndex(tmp_path / "v", 8, "m1")
    assert await again.verify("big", reversed(ids))
    assert not await again.verify("big", [*ids[:-1], 20_002])  # one key differs, same count
    assert not await again.verify("big", ids[:-1])
    assert not await again.verify("big", [*ids, 20_001])  # a duplicate does not make it equal
    await again.close()


@pytest.mark.parametrize("damage", ["truncate", "empty", "garbage", "flip", "meta"])
async def test_damaged_index_file_self_heals(data_dir: Path, embedder: Embedder,
                                             damage: str) -> None:
    st = await open_store(data_dir, model_settings(), embedder)
    texts = ["The cat sleeps on the sofa", "Paris is the capital of France",
             "She plays tennis on Sundays", "The invoice is due on Friday"]
    ids = [r.memory.id for r in await st.save_many("50", [NewMemory(t) for t in texts])]
    await st.close()
    path = data_dir / "vectors" / "50.usearch"
    data = path.read_bytes()
    if damage == "truncate":
        path.write_bytes(data[: len(data) // 2])
    elif damage == "empty":
        path.write_bytes(b"")
    elif damage == "garbage":
        path.write_bytes(b"not an index at all" * 100)
    elif damage == "flip":
        path.write_bytes(data[:-64] + bytes(64))
    else:
        (data_dir / "vectors" / "50.json").write_text("{broken")
    st = await open_store(data_dir, model_settings(), embedder)
    try:
        hits = await st.vector_search("50", "where the cat sleeps", 2)  # healing, not meaning
        assert hits[0][0] == ids[0]
        assert await st.vectors.verify("50", ids)
        assert await st.integrity_check() == "ok"
    finally:
        await st.close()
    meta = json.loads((data_dir / "vectors" / "50.json").read_text())
    assert meta["count"] == 4 and path.stat().st_size == meta["size"]


async def test_missing_or_stale_index_is_rebuilt_from_sqlite(data_dir: Path,
                                                             embedder: Embedder) -> None:
    st = await open_store(data_dir, model_settings(), embedder)
    a = (await st.save("51", NewMemory("Green tea every morning"))).memory
    await st.close()
    stale = (data_dir / "vectors" / "51.usearch").read_bytes()
    stale_meta = (data_dir / "vectors" / "51.json").read_text()
    st = await open_store(data_dir, model_settings(), embedder)
    b = (await st.save("51", NewMemory("Bitcoin price went up"))).memory
    await st.close()
    # an older (valid) index file that lacks memory b: the id set differs, so it is rebuilt
    (data_dir / "vectors" / "51.usearch").write_bytes(stale)
    (data_dir / "vectors" / "51.json").write_text(stale_meta)
    st = await open_store(data_dir, model_settings(), embedder)
    try:
        assert (await st.vector_search("51", "the Bitcoin price", 1))[0][0] == b.id
        (data_dir / "vectors" / "51.usearch").unlink()
        st.index.invalidate("51")
        st.vectors._chats.clear()
        assert (await st.vector_search("51", "green tea", 1))[0][0] == a.id
    finally:
        await st.close()


async def test_chat_id_cannot_escape_the_vectors_dir(tmp_path: Path) -> None:
    index = VectorIndex(tmp_path / "v", 8, "m")
    for bad in ("../x", "a/b", "..", ""):
        with pytest.raises(MemoryInputError):
            await index.add(bad, [1], np.ones(8, np.float32))
    assert not any(tmp_path.rglob("*.usearch"))


async def test_unwritable_vectors_dir_never_loses_a_save(data_dir: Path,
                                                         embedder: Embedder) -> None:
    (data_dir / "vectors").write_text("a file where the directory should be")
    st = await open_store(data_dir, model_settings(vector_save_interval_seconds=0), embedder)
    try:
        saved = await st.save("52", NewMemory("The garden needs watering"))
        assert saved.created and saved.memory.embedding_model == vector_label(
            embedder.model_name, st.settings.recall_vector_context)
        assert isinstance(await st.vector_search("52", "plants", 1), list)
        assert [i for i, _ in await st.keyword_search("52", "garden", 1)] == [saved.memory.id]
        assert await st.integrity_check() == "ok"
    finally:
        await st.close()
    (data_dir / "vectors").unlink()
    st = await open_store(data_dir, model_settings(), embedder)
    try:  # once the directory is usable again the index is rebuilt from SQLite
        assert (await st.vector_search("52", "plants", 1))[0][0] == saved.memory.id
    finally:
        await st.close()

"""With the model preloaded at start, every chat's vector index is loaded and verified in the
background too, so a chat's first message after a restart does not wait for it."""

from __future__ import annotations

from pathlib import Path

from rumi.memory.install import WARM_QUERY, MemoryRuntime
from rumi.memory.store.models import NewMemory
from rumi.memory.vectors.embeddings import Embedder
from tests.memory.conftest import model_settings, open_store


def _runtime(store: object, preload: bool) -> MemoryRuntime:
    return MemoryRuntime(lifecycle=None, commands=None, journal=None, sync=None,  # type: ignore[arg-type]
                         watch=False, store=store, preload=preload)


async def test_preload_loads_every_chats_index_and_lazy_loads_none(
        data_dir: Path, embedder: Embedder) -> None:
    st = await open_store(data_dir, model_settings(), embedder)
    await st.save_many("1", [NewMemory("Le gusta el ajedrez"), NewMemory("Vive en Cádiz")])
    await st.save_many("2", [NewMemory("Plays the cello on Thursdays")])
    await st.close()
    st = await open_store(data_dir, model_settings(), embedder)   # a restart
    try:
        assert await _runtime(st, preload=False).warm_recall() == 0
        assert st.vectors.count("1") is None and st.vectors.count("2") is None
        assert await _runtime(st, preload=True).warm_recall() == 2
        assert st.vectors.count("1") == 2 and st.vectors.count("2") == 1
        assert {"1", "2"} <= st.index._verified   # noqa: SLF001 - the first recall skips the check
        assert WARM_QUERY in st._query_cache   # noqa: SLF001 - the model's first query is done
        hits = await st.vector_search("2", "cello", 1)
        assert hits and (await st.get("2", hits[0][0])).content.startswith("Plays the cello")
    finally:
        await st.close()


async def test_a_damaged_index_is_rebuilt_by_the_warm_up(data_dir: Path,
                                                         embedder: Embedder) -> None:
    st = await open_store(data_dir, model_settings(), embedder)
    ids = [r.memory.id for r in await st.save_many("3", [NewMemory("Su perro se llama Toby")])]
    await st.close()
    (data_dir / "vectors" / "3.usearch").write_bytes(b"not an index")
    st = await open_store(data_dir, model_settings(), embedder)
    try:
        assert await _runtime(st, preload=True).warm_recall() == 1
        assert await st.vectors.verify("3", ids)
    finally:
        await st.close()

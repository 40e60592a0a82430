"""Build the memory store from Settings, the way `rumi/app.py` and the CLI both need it."""

from __future__ import annotations

import asyncio
from pathlib import Path

from rumi.caches import cache_dirs
from rumi.config import Settings
from rumi.memory.files.healing import (
    Recovery,
    rebuild_from_markdown,
    set_aside_derived,
)
from rumi.memory.files.markdown_sync import MarkdownSync
from rumi.memory.files.reconcile import highest_seen, restore_lost
from rumi.memory.store.api import MemoryStoreAPI
from rumi.memory.store.backend import open_store
from rumi.memory.store.health import DbHealth
from rumi.memory.store.tape_index import TapeIndex
from rumi.memory.vectors.embeddings import Embedder, vector_model_name
from rumi.memory.vectors.index import VectorIndex
from rumi.memory.vectors.query_twin import MANIFEST, default_query_model_dir


def query_model_location(settings: Settings) -> Path:
    """Where the query twin is (or `rumi models quantize` puts it): `memory.query_model_path`,
    else its place in data_dir."""
    memory = settings.memory
    return memory.query_model_path or default_query_model_dir(settings.data_dir,
                                                              vector_model_name(memory))


def query_model_dir(settings: Settings) -> Path | None:
    """The query twin the Embedder should try: a configured one always (so a wrong path is
    reported), the data_dir one if it was made; None when quantized queries are off."""
    memory = settings.memory
    if not memory.quantized_queries or not memory.embeddings_enabled:
        return None
    where = query_model_location(settings)
    if memory.query_model_path is not None or (where / MANIFEST).is_file():
        return where
    return None


async def open_memory_store(settings: Settings) -> MemoryStoreAPI:
    """The configured store (`store.backend`, see `store.backend.open_store`); the embedding
    model loads lazily on first use.

    With `memory.embeddings_enabled = false` there is no vector index at all (keyword only).
    On SQLite a damaged `rumi.db` is moved aside; a new one is filled from the chats'
    MEMORY.md files (`store.recovery` says what happened, for the notices).
    """
    memory = settings.memory
    # In a thread: for a model name not in KNOWN_DIMS, learning its dimension imports fastembed
    # and reads its model registry (~1 s on a Pi), which must not stall the event loop (nor
    # the look for the query twin's files).
    cache = cache_dirs(settings.data_dir).fastembed   # under data_dir: survives a reboot
    embedder = await asyncio.to_thread(lambda: Embedder(memory, query_model_dir(settings),
                                                        cache_dir=cache))

    async def make_vectors(health: DbHealth) -> VectorIndex | None:
        if Recovery(health).fresh:   # the vector files name rows of the lost database
            await asyncio.to_thread(set_aside_derived, settings.data_dir / "vectors")
        if not memory.embeddings_enabled:
            return None
        return VectorIndex.of_data_dir(settings.data_dir, embedder, memory)

    opened = await open_store(settings, embedder, make_vectors=make_vectors)
    store = opened.store
    recovery = Recovery(opened.health) if opened.health is not None else None
    try:   # before anything renders MEMORY.md from a store that lost some of it
        if recovery is not None and recovery.fresh:
            await store.reserve_ids(await asyncio.to_thread(highest_seen, settings.data_dir))
            await rebuild_from_markdown(settings.data_dir, store, recovery)
            # and the conversation search, from the tapes (recall_original reads them as is)
            recovery.tapes = await TapeIndex(settings.data_dir, store.tape_db).sync_all()
        else:
            await restore_lost(settings.data_dir, store, MarkdownSync(settings.data_dir, store))
    except BaseException:
        await store.close()
        raise
    store.recovery = recovery
    return store

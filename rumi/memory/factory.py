"""Build the memory store from Settings, the way `rumi/app.py` and the CLI both need it."""

from __future__ import annotations

import asyncio

from rumi.config import Settings
from rumi.memory.embeddings import Embedder
from rumi.memory.store import MemoryStore
from rumi.memory.vectors import VectorIndex


async def open_memory_store(settings: Settings) -> MemoryStore:
    """`data_dir/rumi.db` + `data_dir/vectors/`; the embedding model loads lazily on first use.

    With `memory.embeddings_enabled = false` there is no vector index at all (keyword only).
    """
    memory = settings.memory
    # In a thread: for a model name not in KNOWN_DIMS, learning its dimension imports fastembed
    # and reads its model registry (~1 s on a Pi), which must not stall the event loop.
    embedder = await asyncio.to_thread(Embedder, memory)
    vectors: VectorIndex | None = None
    if memory.embeddings_enabled:
        vectors = VectorIndex(settings.data_dir / "vectors", embedder.dim, embedder.model_name,
                              save_interval=memory.vector_save_interval_seconds)
    return await MemoryStore.open(settings.data_dir / "rumi.db", memory, embedder, vectors)

"""The vector half of the PostgreSQL store: embedding (with a small query cache) and the
nearest neighbours of one chat from `cto.memory`'s HNSW index (`PgMemoryStore` mixes it in).

pgvector's HNSW scan stops after `hnsw.ef_search` candidates; with a per-owner filter most of
them may be other people's, leaving fewer than k. `hnsw.iterative_scan = relaxed_order` (set
for the one transaction) keeps scanning until k rows pass the filter; the outer query puts
the relaxed order back in exact distance order.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import Any

import numpy as np

from rumi.memory.store.codec import check_chat_id
from rumi.memory.store.postgres.rows import owner

log = logging.getLogger(__name__)

_QUERY_CACHE = 256


class PgVectors:
    pool: Any
    settings: Any
    embedder: Any
    dim: int
    model: Any
    can_embed: bool
    has_vectors: bool
    _query_cache: OrderedDict[str, np.ndarray]
    _backfilled: set[str]
    # PgMemoryStore's (annotations only: a stub here would shadow them in the MRO)
    fetch: Callable[..., Awaitable[list[dict[str, Any]]]]
    embed_missing: Callable[[str, int | None], Awaitable[int]]

    async def embed(self, texts: list[str]) -> np.ndarray | None:
        if not self.can_embed or not texts or self.embedder is None:
            return None
        matrix = await self.embedder.embed(texts)
        if matrix is None or matrix.shape[1] != self.dim:
            if matrix is not None:
                log.error("embedding dim %s does not match the store (%s)", matrix.shape[1],
                          self.dim)
            return None
        return np.asarray(matrix, dtype=np.float32)

    async def embed_query(self, text: str) -> np.ndarray | None:
        if not isinstance(text, str) or not text.strip() or not self.can_embed:
            return None
        text = text[: self.settings.max_content_chars]
        cached = self._query_cache.get(text)
        if cached is not None:
            self._query_cache.move_to_end(text)
            return cached
        assert self.embedder is not None
        embedded = await self.embedder.embed_query(text)
        if embedded is None or len(embedded) != self.dim:
            return None
        vector = np.array(embedded, dtype=np.float32)
        vector.setflags(write=False)
        self._query_cache[text] = vector
        while len(self._query_cache) > _QUERY_CACHE:
            self._query_cache.popitem(last=False)
        return vector

    async def prepare_vectors(self, chat_id: str) -> bool:
        """True when vectors can be searched; a chat's first use embeds what lacks a vector
        (a migrated or rebuilt store), one batch."""
        chat = check_chat_id(chat_id)
        if not self.can_embed:
            return False
        if chat not in self._backfilled:
            self._backfilled.add(chat)
            try:
                await self.embed_missing(chat, self.settings.backfill_batch)
            except Exception:  # noqa: BLE001 - searching what has vectors still works
                log.exception("embedding the missing vectors of chat %s failed", chat)
        return True

    async def nearest(self, chat_id: str, vector: np.ndarray,
                      limit: int) -> list[tuple[int, float]]:
        """(id, cosine) of the chat's nearest active memories, from the HNSW index with an
        iterative scan: the owner filter still leaves `limit` rows when it exists."""
        chat = check_chat_id(chat_id)
        if limit <= 0 or not self.has_vectors:
            return []
        query = np.asarray(vector, dtype=np.float32)
        async with self.pool.connection() as conn, conn.transaction():
            await conn.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
            await conn.execute(f"SET LOCAL hnsw.ef_search = {max(40, min(1000, int(limit)))}")
            cur = await conn.execute(
                "WITH near AS MATERIALIZED (SELECT id, embedding <=> %s AS distance "
                "FROM cto.memory WHERE owner_type = %s AND owner_id = %s "
                "AND status = 'active' AND embedding IS NOT NULL AND embedding_model = %s "
                "ORDER BY embedding <=> %s LIMIT %s) "
                "SELECT id, 1 - distance AS cosine FROM near ORDER BY distance, id",
                (query, *owner(chat), self.model, query, int(limit)))
            rows = await cur.fetchall()
        return [(int(row["id"]), float(row["cosine"])) for row in rows]

    async def vector_search(self, chat_id: str, query: str | np.ndarray,
                            limit: int = 20) -> list[tuple[int, float]]:
        chat = check_chat_id(chat_id)
        vector = await self.embed_query(query) if isinstance(query, str) else query
        if vector is None or not await self.prepare_vectors(chat):
            return []
        hits = await self.nearest(chat, vector, limit)
        if not hits:
            return []
        alive = {int(r["id"]) for r in await self.fetch(
            "SELECT id FROM cto.memory WHERE owner_type = %s AND owner_id = %s "
            "AND id = ANY(%s::bigint[]) AND (expires_at IS NULL OR expires_at > now())",
            (*owner(chat), [i for i, _ in hits]))}
        return [(i, s) for i, s in hits if i in alive]


"""Keeps each chat's vector index a faithful cache of the vectors stored in SQLite.

SQLite is the source of truth (`memory_embeddings` holds every vector as float32 BLOB); the
usearch file only makes search fast. The first time a chat is touched in a process its index is
verified against SQLite (same ids, same model, intact file) and rebuilt without re-embedding
on any mismatch. Memories saved while the model was unavailable are embedded later in small
batches (`backfill`), or all at once by `reindex`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence

import aiosqlite
import numpy as np

from rumi.memory.store.codec import VECTOR_CONTEXT_GAP, asked_in, embedding_text
from rumi.memory.store.ports import ChatVectors, TextEmbedder

log = logging.getLogger(__name__)

_CHUNK = 500


def to_blob(vector: np.ndarray) -> bytes:
    return np.ascontiguousarray(vector, dtype=np.float32).tobytes()


def from_blob(blob: bytes, dim: int) -> np.ndarray:
    return np.frombuffer(blob, dtype=np.float32, count=dim)


# The memory said just before `m`, if within the gap (codec.vector_contexts' rule).
_BEFORE = (
    "(SELECT CASE WHEN abs(julianday(p.created_at) - julianday(m.created_at)) * 24 <= "  # noqa: S608 (constants)
    f"{VECTOR_CONTEXT_GAP.total_seconds() / 3600:g} THEN p.content END FROM memories p "
    "WHERE p.chat_id = m.chat_id AND p.type = m.type AND p.status = 'active' AND p.id < m.id "
    "ORDER BY p.id DESC LIMIT 1)"
)


class IndexKeeper:
    def __init__(
        self,
        conn: aiosqlite.Connection,
        write_lock: asyncio.Lock,
        embedder: TextEmbedder | None,
        vectors: ChatVectors | None,
        backfill_batch: int,
        vector_context: bool = False,
    ) -> None:
        self._conn = conn
        self.vector_context = vector_context   # `recall_vector_context`: backfill embeds it
        self._write_lock = write_lock
        self.embedder = embedder
        self.vectors = vectors
        self.backfill_batch = backfill_batch
        self._verified: set[str] = set()
        self._locks: dict[str, asyncio.Lock] = {}
        self._data_version: int | None = None

    @property
    def model(self) -> str | None:
        return self.vectors.model_name if self.vectors is not None else None

    @property
    def can_embed(self) -> bool:
        return self.embedder is not None and self.embedder.available and self.vectors is not None

    async def embed(self, texts: list[str]) -> np.ndarray | None:
        if not self.can_embed or not texts:
            return None
        assert self.embedder is not None
        matrix = await self.embedder.embed(texts)
        if matrix is None or self.vectors is None or matrix.shape[1] != self.vectors.ndim:
            if matrix is not None:
                log.error("embedding dim %s does not match the index (%s)",
                          matrix.shape[1], self.vectors and self.vectors.ndim)
            return None
        return matrix

    async def embed_query(self, text: str) -> np.ndarray | None:
        if not self.can_embed:
            return None
        assert self.embedder is not None and self.vectors is not None
        vector = await self.embedder.embed_query(text)
        if vector is None or vector.shape != (self.vectors.ndim,):
            return None
        return vector

    async def write_vectors(
        self, ids: Sequence[int], matrix: np.ndarray
    ) -> None:
        """Store vectors for memories (caller holds the write transaction)."""
        assert self.vectors is not None
        rows = [
            (int(mid), self.vectors.model_name, int(matrix.shape[1]), to_blob(matrix[i]))
            for i, mid in enumerate(ids)
        ]
        await self._conn.executemany(
            "INSERT OR REPLACE INTO memory_embeddings(memory_id, model, dim, vector) "
            "VALUES (?, ?, ?, ?)",
            rows,
        )
        for start in range(0, len(ids), _CHUNK):
            chunk = [int(i) for i in ids[start : start + _CHUNK]]
            marks = ",".join("?" * len(chunk))
            await self._conn.execute(
                f"UPDATE memories SET embedding_model = ? WHERE id IN ({marks})",  # noqa: S608
                (self.vectors.model_name, *chunk),
            )

    async def index_ids(self, chat_id: str) -> list[int]:
        """Ids that belong in the chat's index: active memories with a current-model vector."""
        async with self._conn.execute(
            "SELECT m.id FROM memories m JOIN memory_embeddings e ON e.memory_id = m.id "
            "WHERE m.chat_id = ? AND m.status = 'active' AND e.model = ? ORDER BY m.id",
            (chat_id, self.model),
        ) as cur:
            return [row[0] for row in await cur.fetchall()]

    async def load_vectors(self, chat_id: str) -> tuple[list[int], np.ndarray]:
        assert self.vectors is not None
        dim = self.vectors.ndim
        ids: list[int] = []
        blobs: list[bytes] = []
        async with self._conn.execute(
            "SELECT m.id, e.vector FROM memories m JOIN memory_embeddings e ON e.memory_id = m.id "
            "WHERE m.chat_id = ? AND m.status = 'active' AND e.model = ? AND e.dim = ? "
            "ORDER BY m.id",
            (chat_id, self.model, dim),
        ) as cur:
            async for row in cur:
                ids.append(row[0])
                blobs.append(row[1])
        matrix = np.frombuffer(b"".join(blobs), dtype=np.float32).reshape(len(ids), dim)
        return ids, matrix

    def _lock(self, chat_id: str) -> asyncio.Lock:
        return self._locks.setdefault(chat_id, asyncio.Lock())

    async def _others_wrote(self) -> bool:
        """True when another connection (e.g. `rumi memory` in a shell) committed since the
        last look; their changes are not in our in-memory indexes."""
        rows = await self._conn.execute_fetchall("PRAGMA data_version")
        version = int(rows[0][0]) if rows else 0
        changed = self._data_version is not None and version != self._data_version
        self._data_version = version
        return changed

    async def ensure(self, chat_id: str) -> bool:
        """Make the chat's index trustworthy before it is used; False if there is no index."""
        if self.vectors is None:
            return False
        if await self._others_wrote():
            self._verified.clear()
        if chat_id in self._verified:
            return True
        async with self._lock(chat_id):
            if chat_id not in self._verified:
                if not await self.vectors.verify(chat_id, await self.index_ids(chat_id)):
                    await self.rebuild(chat_id)
                self._verified.add(chat_id)
        if self.backfill_batch and self.can_embed:
            await self.backfill(chat_id, self.backfill_batch)
        return True

    async def rebuild(self, chat_id: str) -> int:
        """Rebuild from stored vectors (no re-embedding); compacts usearch's marked deletions."""
        if self.vectors is None:
            return 0
        ids, matrix = await self.load_vectors(chat_id)
        await self.vectors.rebuild(chat_id, ids, matrix)
        return len(ids)

    def mark_verified(self, chat_id: str) -> None:
        self._verified.add(chat_id)

    def verified(self, chat_id: str) -> bool:
        """Whether the chat's index was checked against SQLite since the last change by
        another process (what `ensure` last found), and so holds SQLite's vectors."""
        return chat_id in self._verified

    def invalidate(self, chat_id: str) -> None:
        self._verified.discard(chat_id)

    async def backfill(self, chat_id: str, limit: int | None = None) -> int:
        """Embed active memories that have no vector for the current model; returns how many."""
        if not self.can_embed:
            return 0
        async with self._lock(chat_id):   # a use's backfill and a background one never race
            done = await self._backfill(chat_id, limit)
        if done:
            log.info("embedded %d memories of chat %s that had no vector", done, chat_id)
        return done

    async def chats_missing(self) -> list[str]:
        """Chats with active memories that have no vector of the current model (after the
        model changed, or memories saved while it was unavailable)."""
        if not self.can_embed:
            return []
        async with self._conn.execute(
            "SELECT DISTINCT m.chat_id FROM memories m "
            "LEFT JOIN memory_embeddings e ON e.memory_id = m.id AND e.model = ? "
            "WHERE m.status = 'active' AND e.memory_id IS NULL ORDER BY m.chat_id",
            (self.model,),
        ) as cur:
            return [str(row[0]) for row in await cur.fetchall()]

    async def _backfill(self, chat_id: str, limit: int | None) -> int:
        done = 0
        while limit is None or done < limit:
            batch = 256 if limit is None else min(256, limit - done)
            async with self._conn.execute(
                f"SELECT m.id, m.content, m.key, {_BEFORE if self.vector_context else 'NULL'} "  # noqa: S608
                "AS before FROM memories m "
                "LEFT JOIN memory_embeddings e ON e.memory_id = m.id AND e.model = ? "
                "WHERE m.chat_id = ? AND m.status = 'active' AND e.memory_id IS NULL "
                "ORDER BY m.id LIMIT ?",
                (self.model, chat_id, batch),
            ) as cur:
                rows = list(await cur.fetchall())
            if not rows:
                break
            matrix = await self.embed([
                embedding_text(r["content"], r["key"], asked_in(r["before"] or ""))
                for r in rows])
            if matrix is None:
                break
            ids = [r["id"] for r in rows]
            async with self._write_lock:
                await self._conn.execute("BEGIN IMMEDIATE")
                try:
                    await self.write_vectors(ids, matrix)
                except BaseException:
                    await self._conn.execute("ROLLBACK")
                    raise
                await self._conn.execute("COMMIT")
            assert self.vectors is not None
            await self.vectors.add(chat_id, ids, matrix)
            done += len(ids)
        return done

    async def add(self, chat_id: str, ids: Sequence[int], matrix: np.ndarray) -> None:
        """Mirror committed rows into the index. Never raises: SQLite already has the truth,
        so a failure only marks the chat for re-verification (and a rebuild) on next use."""
        if self.vectors is None or not len(ids):
            return
        try:
            if chat_id not in self._verified:
                await self.ensure(chat_id)  # verification already includes these rows
                return
            await self.vectors.add(chat_id, ids, matrix)
        except Exception:  # noqa: BLE001
            log.exception("vector index %s: add failed; will rebuild", chat_id)
            self.invalidate(chat_id)

    async def erase(self, chat_id: str, ids: Sequence[int]) -> None:
        """After a forget committed: drop these vectors from the chat's index leaving no copy
        (`VectorIndex.erase`), else rebuild the index from SQLite, which no longer has them.

        A crash before this ends is safe: the file on disk then still names the forgotten
        ids, so the next use's verification (SQLite's ids against the file's) rebuilds it
        before any search."""
        if self.vectors is None or not ids:
            return
        try:
            if chat_id not in self._verified:
                await self.ensure(chat_id)  # verifies against SQLite: rebuilds without them
                return
            if not await self.vectors.erase(chat_id, ids):
                log.warning("vector index %s: erased vectors still in the file; rebuilding",
                            chat_id)
                await self.rebuild(chat_id)
        except Exception:  # noqa: BLE001 - the next use verifies the index and rebuilds it
            log.exception("vector index %s: erase failed; will rebuild", chat_id)
            self.invalidate(chat_id)

    async def remove(self, chat_id: str, ids: Sequence[int]) -> None:
        if self.vectors is None or not ids:
            return
        try:
            if chat_id not in self._verified:
                await self.ensure(chat_id)
                return
            await self.vectors.remove(chat_id, ids)
        except Exception:  # noqa: BLE001
            log.exception("vector index %s: remove failed; will rebuild", chat_id)
            self.invalidate(chat_id)

"""`MemoryStore`: Rumi's long-term memory in `rumi.db`, scoped to one chat per call.

Every method takes the chat id first and every SQL statement filters on it: one chat never
sees another's memories (the vector index is per chat too). Input is validated in
`codec.clean_new_memory` and refused with `MemoryInputError` (Spanish, user-safe); queries
never raise on odd text; an unknown chat simply has no memories.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import aiosqlite
import numpy as np

from rumi.config import MemorySettings
from rumi.memory.store import editing, fts, transfer
from rumi.memory.store.blocks import SqliteBlockRows
from rumi.memory.store.codec import (
    VECTOR_CONTEXT_RECIPE,
    SaveResult,
    check_chat_id,
    clean_ids,
    to_utc,
    ts,
    utcnow,
)
from rumi.memory.store.editing import UNSET, MemoryNotFoundError
from rumi.memory.store.models import (
    Memory,
    MemoryStatus,
    MemoryType,
    NewMemory,
    RecallRow,
)
from rumi.memory.store.ports import ChatVectors, TextEmbedder
from rumi.memory.store.rows import MemoryRows
from rumi.memory.store.schema import connect
from rumi.memory.store.tape_rows import SqliteTapeRows

log = logging.getLogger(__name__)

_QUERY_CACHE = 256

__all__ = ["MemoryNotFoundError", "MemoryStore", "SaveResult"]


class MemoryStore(MemoryRows):
    """Rows plus what is built on them: keyword and vector search, editing, expiry, export."""

    def __init__(
        self,
        conn: aiosqlite.Connection,
        settings: MemorySettings,
        embedder: TextEmbedder | None,
        vectors: ChatVectors | None,
        db_path: Path,
    ) -> None:
        super().__init__(conn, settings, embedder, vectors, db_path)
        # the same query is often embedded several times per turn (recall, /status, tools)
        self._query_cache: OrderedDict[str, np.ndarray] = OrderedDict()

    @classmethod
    async def open(
        cls,
        db_path: Path,
        settings: MemorySettings,
        embedder: TextEmbedder | None = None,
        vectors: ChatVectors | None = None,
    ) -> MemoryStore:
        """Open (creating and migrating) the database; the model is NOT loaded here."""
        if embedder is not None and vectors is not None and embedder.dim != vectors.ndim:
            raise ValueError(f"embedder dim {embedder.dim} != vector index dim {vectors.ndim}")
        conn = await connect(db_path, busy_timeout_ms=settings.db_busy_timeout_ms)
        return cls(conn, settings, embedder, vectors, db_path)

    @property
    def backend(self) -> str:
        return "sqlite"

    @property
    def where(self) -> str:
        return str(self.db_path)

    async def sharing(self) -> list[str]:
        return []

    async def watch(self, on_change: Callable[[str], Awaitable[None]]) -> None:
        """Nothing to hear: one rumi.db belongs to one Rumi."""

    @property
    def block_rows(self) -> SqliteBlockRows:
        """Where `blocks.BlockStore` keeps context blocks: `rumi.db`'s `blocks` table."""
        return SqliteBlockRows(self)

    @property
    def tape_db(self) -> SqliteTapeRows:
        """Where `TapeIndex` keeps its rows: `rumi.db` itself."""
        return SqliteTapeRows(self)

    @property
    def has_vectors(self) -> bool:
        """Whether semantic search is configured at all (memory.embeddings_enabled)."""
        return self.vectors is not None

    @property
    def can_embed(self) -> bool:
        return self.index.can_embed

    async def switch_state(self, chat_id: str) -> bool | None:
        """The chat's stored memory switch (None: never switched, so on)."""
        async with self.connection.execute(
            "SELECT enabled FROM memory_switch WHERE chat_id = ?", (chat_id,)
        ) as cur:
            row = await cur.fetchone()
        return None if row is None else bool(row[0])

    async def set_switch(self, chat_id: str, enabled: bool, by: str | None) -> None:
        async with self.transaction() as conn:
            await conn.execute(
                "INSERT INTO memory_switch(chat_id, enabled, changed_by, changed_at) "
                "VALUES (?, ?, ?, ?) ON CONFLICT(chat_id) DO UPDATE SET "
                "enabled = excluded.enabled, changed_by = excluded.changed_by, "
                "changed_at = excluded.changed_at",
                (chat_id, int(enabled), by, datetime.now(UTC).isoformat(timespec="seconds")),
            )

    async def get_many_with_vectors(
        self, chat_id: str, ids: Iterable[int]
    ) -> tuple[list[Memory], dict[int, np.ndarray]]:
        """`get_many` and `get_embeddings` in one trip to SQLite's thread: recall needs both
        for its keyword hits, and under load each trip costs a thread hop or more."""
        return await self.rows_by_id(check_chat_id(chat_id), ids, model=self.index.model)

    async def recall_rows_with_vectors(
        self, chat_id: str, ids: Iterable[int]
    ) -> tuple[list[RecallRow], dict[int, np.ndarray]]:
        """`get_many_with_vectors` as recall reads its candidates (`RecallRow`).

        With the chat's vector index loaded and verified, the rows load without their
        vectors and the vectors come from the index, which holds the same float32 bytes
        (`VectorIndex.stored`): ~95 blobs of 1.5 KB per recall at 100k memories were a
        third of that statement's time, and turning them into arrays was work on the
        event loop (docs/benchmarks.md, "Less work per recall"). SQLite's vector is read
        for a row the index lacks, and for every row while the index is not verified."""
        chat = check_chat_id(chat_id)
        model = self.index.model
        if model is None or self.vectors is None or not self.index.verified(chat):
            return await self.recall_rows_by_id(chat, ids, model=model)
        rows, _ = await self.recall_rows_by_id(chat, ids, model=None)
        vectors = await self.vectors.stored(chat, [row.id for row in rows])
        missing = [row.id for row in rows if row.id not in vectors]
        if missing:
            vectors.update(await self.get_embeddings(chat, missing))
        return rows, vectors

    async def get_embeddings(self, chat_id: str, ids: Iterable[int]) -> dict[int, np.ndarray]:
        """Stored current-model vectors of these memories (for scoring keyword-only hits)."""
        chat = check_chat_id(chat_id)
        model = self.index.model
        if model is None:
            return {}
        rows = await self.in_chunks(
            "SELECT e.memory_id, e.vector, e.dim FROM memory_embeddings e "
            "JOIN memories m ON m.id = e.memory_id "
            "WHERE +m.chat_id = ? AND e.model = ? AND e.memory_id IN ({marks})",
            (chat, model), list(clean_ids(ids)))
        return {row[0]: np.frombuffer(row[1], dtype=np.float32, count=row[2]) for row in rows}

    async def keyword_search(
        self, chat_id: str, query: str, limit: int = 20, *, match_all: bool = False
    ) -> list[tuple[int, float]]:
        """Active, unexpired memories matching words of `query` in their content, key or
        summary: (id, BM25 score > 0), best first, ranked with this chat's statistics only
        (`RecallIndex.search_text`). The query is reduced to word tokens, so FTS5 syntax in it
        is just text."""
        chat = check_chat_id(chat_id)
        expr = fts.all_of(query) if match_all else fts.any_of(query)
        return await self.keyword_index.search_text(chat, expr, limit)

    async def embed_query(self, text: str) -> np.ndarray | None:
        if not isinstance(text, str) or not text.strip():
            return None
        text = text[: self.settings.max_content_chars]
        cached = self._query_cache.get(text)
        if cached is not None:
            self._query_cache.move_to_end(text)
            return cached
        embedded = await self.index.embed_query(text)
        if embedded is None:
            return None
        vector = embedded.copy()
        vector.setflags(write=False)
        self._query_cache[text] = vector
        while len(self._query_cache) > _QUERY_CACHE:
            self._query_cache.popitem(last=False)
        return vector

    async def vector_search(
        self, chat_id: str, query: str | np.ndarray, limit: int = 20
    ) -> list[tuple[int, float]]:
        """(id, cosine similarity) of active, unexpired memories; [] without embeddings."""
        chat = check_chat_id(chat_id)
        vector = await self.embed_query(query) if isinstance(query, str) else query
        if vector is None or not await self.prepare_vectors(chat):
            return []
        hits = await self.nearest(chat, vector, limit)
        if not hits:
            return []
        alive = set(await self._alive_ids(chat, [i for i, _ in hits]))
        return [(i, s) for i, s in hits if i in alive]

    async def prepare_vectors(self, chat_id: str) -> bool:
        """Make the chat's vector index trustworthy (another process may have written; a
        first use verifies and backfills); False when there is none to search."""
        chat = check_chat_id(chat_id)
        if self.vectors is None:
            return False
        try:
            return await self.index.ensure(chat)
        except Exception:  # noqa: BLE001 - e.g. vectors/ unwritable: degrade to keyword-only
            log.exception("vector index of chat %s unusable", chat)
            self.index.invalidate(chat)
            return False

    async def nearest(
        self, chat_id: str, vector: np.ndarray, limit: int
    ) -> list[tuple[int, float]]:
        """(id, cosine) straight from the chat's vector index, which may still hold memories
        that expired since; for callers that load the rows anyway and check them there
        (recall), saving the liveness query `vector_search` runs. Call `prepare_vectors`
        first: recall does that while the query is being embedded."""
        chat = check_chat_id(chat_id)
        if limit <= 0 or self.vectors is None:
            return []
        try:
            return await self.vectors.search(chat, vector, int(limit))
        except Exception:  # noqa: BLE001 - e.g. vectors/ unwritable: degrade to keyword-only
            log.exception("vector search failed for chat %s", chat)
            self.index.invalidate(chat)
            return []

    async def _alive_ids(self, chat: str, ids: Sequence[int]) -> list[int]:
        marks = ",".join("?" * len(ids))
        async with self.connection.execute(
            f"SELECT id FROM memories WHERE +chat_id = ? AND id IN ({marks}) "  # noqa: S608
            "AND status = 'active' AND (expires_at IS NULL OR expires_at > ?)",
            (chat, *ids, ts(utcnow())),
        ) as cur:
            return [row[0] for row in await cur.fetchall()]

    async def update(
        self,
        chat_id: str,
        memory_id: int,
        *,
        content: str | None = None,
        summary: str | None = UNSET,
        key: str | None = UNSET,
        type: MemoryType | str | None = None,  # noqa: A002 - mirrors the column name
        importance: float | None = None,
        confidence: float | None = None,
        expires_at: datetime | None = UNSET,
        metadata: dict[str, Any] | None = None,
        related_ids: Iterable[int] | None = None,
    ) -> Memory:
        """Change fields in place; a new content (or key) is re-hashed and re-embedded.

        Raises MemoryNotFoundError for an id that is not this chat's (or was forgotten)."""
        updated = await editing.update(
            self, chat_id, memory_id, content=content, summary=summary, key=key, type=type,
            importance=importance, confidence=confidence, expires_at=expires_at,
            metadata=metadata, related_ids=related_ids,
        )
        if content is not None or type is not None:   # its translation was dropped
            self.tell_written(updated.chat_id)
        return updated

    async def supersede(self, chat_id: str, old_id: int, new: NewMemory) -> Memory:
        """Replace an active memory: old → superseded (kept as history) pointing at the new."""
        replaced = await editing.supersede(self, chat_id, old_id, new)
        self.tell_written(replaced.chat_id)
        return replaced

    async def forget(
        self,
        chat_id: str,
        *,
        memory_id: int | None = None,
        key: str | None = None,
        text: str | None = None,
    ) -> editing.Forgotten:
        """Erase active memories by id, by key (every fact under it) or by phrase match, with
        their superseded history and pre-edit texts, from every table and index.

        Exactly one selector; returns what was forgotten (`.history`: earlier versions gone)."""
        return await editing.forget(self, chat_id, memory_id=memory_id, key=key, text=text)

    async def erase(self, chat_id: str, ids: Sequence[int]) -> int:
        """Erase memories `ids` of any status like a forget does (a redaction uses it for
        every row holding the redacted text); returns how many history rows went too."""
        if not ids:
            return 0
        return await editing.purge(self, check_chat_id(chat_id), ids)

    async def forgotten(self, chat_id: str, hashes: Iterable[str]) -> set[str]:
        """Which content hashes (`codec.content_hash`) this chat has forgotten: extraction
        and import skip those, so a forgotten text is not learned again by itself."""
        return await editing.forgotten(self, check_chat_id(chat_id), hashes)

    async def mark_forgotten(self, chat_id: str, hashes: Iterable[str]) -> None:
        """Add `hashes` to the chat's forgotten texts (see `forgotten`)."""
        await editing.mark_forgotten(self, check_chat_id(chat_id), hashes)

    async def forgotten_list(self) -> list[tuple[str, str, datetime]]:
        """Every chat's forgotten texts as (chat, hash, when): `rumi store migrate` carries
        them, so a forgotten memory never comes back in the other store."""
        async with self.connection.execute(
            "SELECT chat_id, content_hash, forgotten_at FROM forgotten_hashes ORDER BY 1, 2"
        ) as cur:
            return [(row[0], row[1], to_utc(datetime.fromisoformat(row[2])))
                    for row in await cur.fetchall()]

    async def switch_list(self) -> dict[str, bool]:
        """Every stored memory switch (also of chats without memories), for the migration."""
        async with self.connection.execute("SELECT chat_id, enabled FROM memory_switch") as cur:
            return {row[0]: bool(row[1]) for row in await cur.fetchall()}

    async def vector_models(self) -> dict[str, int]:
        """How many stored vectors each embedding model made (every model, not only the
        configured one): the migration copies vectors only into a store of the same model."""
        async with self.connection.execute(
            "SELECT model, count(*) FROM memory_embeddings GROUP BY model") as cur:
            return {row[0]: int(row[1]) for row in await cur.fetchall()}

    async def stored_vectors(self, chat_id: str, ids: Iterable[int]) -> dict[int, np.ndarray]:
        """The stored vectors of these memories, whichever model made them (a migration
        copies them as they are after `vector_models` showed one model)."""
        rows = await self.in_chunks(
            "SELECT e.memory_id, e.vector, e.dim FROM memory_embeddings e "
            "JOIN memories m ON m.id = e.memory_id "
            "WHERE +m.chat_id = ? AND e.memory_id IN ({marks})",
            (check_chat_id(chat_id),), list(clean_ids(ids)))
        return {row[0]: np.frombuffer(row[1], dtype=np.float32, count=row[2]) for row in rows}

    async def purge_expired(
        self, now: datetime | None = None, *, chat_id: str | None = None
    ) -> int:
        """Mark memories past their expiry as expired (every chat, or one) and compact the
        touched vector indexes (usearch only marks deletions; a rebuild really drops them)."""
        when = ts(to_utc(now) if now else utcnow())
        where, params = "", [when, when]
        if chat_id is not None:
            where = " AND chat_id = ?"
            params.append(check_chat_id(chat_id))
        async with self.transaction() as conn, conn.execute(
            "UPDATE memories SET status = 'expired', updated_at = ? WHERE status = 'active' "  # noqa: S608
            f"AND expires_at IS NOT NULL AND expires_at <= ?{where} RETURNING id, chat_id",
            params,
        ) as cur:
            rows = list(await cur.fetchall())
        touched = {row[1] for row in rows}
        if self.vectors is not None:
            candidates = [chat_id] if chat_id is not None else await self.chats()
            touched |= {c for c in candidates if self.vectors.removed(c) > 0}
            for chat in sorted(touched):
                try:
                    await self.index.rebuild(chat)
                    self.index.mark_verified(chat)
                except Exception:  # noqa: BLE001 - the next use verifies and rebuilds again
                    log.exception("could not rebuild vector index %s after purge", chat)
                    self.index.invalidate(chat)
        if rows:
            log.info("expired %d memories in %d chats", len(rows), len({r[1] for r in rows}))
        return len(rows)

    async def embed_missing(self, chat_id: str, limit: int) -> int:
        """Embed up to `limit` memories that have no vector yet (a rebuilt database); 0 when
        none is left or the model is unavailable."""
        return await self.index.backfill(check_chat_id(chat_id), limit)

    async def chats_missing_vectors(self) -> list[str]:
        """Chats that have memories without a vector of the current model (for the start-up
        re-embedding after a model change)."""
        return await self.index.chats_missing()

    async def reindex(self, chat_id: str) -> dict[str, int]:
        """Embed every memory lacking a current vector, then rebuild the chat's index."""
        chat = check_chat_id(chat_id)
        embedded = await self.index.backfill(chat, None)
        count = await self.index.rebuild(chat)
        self.index.mark_verified(chat)
        return {"embedded": embedded, "indexed": count}

    async def mark_accessed(
        self, chat_id: str, ids: Iterable[int], when: datetime | None = None, *,
        wait: bool = True,
    ) -> None:
        """Count one access of each memory (once per id) at `when` (now). Every read of the
        rows sees it at once; `wait=False` (recall's own touch) leaves the write to the
        background (`access.AccessLog`: written a moment later, and on close), so the answer
        does not wait for a commit."""
        chat = check_chat_id(chat_id)
        wanted = list(clean_ids(ids))
        if not wanted:
            return
        self.access.touch(chat, wanted, to_utc(when) if when else utcnow())
        if wait:
            await self.access.flush()

    async def stats(self, chat_id: str) -> dict[str, Any]:
        chat = check_chat_id(chat_id)
        by_status: dict[str, int] = {}
        by_type: dict[str, int] = {}
        async with self.connection.execute(
            "SELECT status, type, COUNT(*) FROM memories WHERE chat_id = ? GROUP BY 1, 2", (chat,)
        ) as cur:
            for status, kind, n in await cur.fetchall():
                by_status[status] = by_status.get(status, 0) + n
                if status == MemoryStatus.ACTIVE.value:
                    by_type[kind] = by_type.get(kind, 0) + n
        async with self.connection.execute(
            "SELECT COUNT(*) FROM memories m JOIN memory_embeddings e ON e.memory_id = m.id "
            "WHERE m.chat_id = ? AND m.status = 'active' AND e.model = ?",
            (chat, self.index.model),
        ) as cur:
            row = await cur.fetchone()
        return {
            "chat_id": chat,
            "total": sum(by_status.values()),
            "active": by_status.get(MemoryStatus.ACTIVE.value, 0),
            "by_status": by_status,
            "by_type": by_type,
            "embedded": int(row[0]) if row else 0,
            "embeddings": self.embeddings_status(),
        }

    def embeddings_status(self) -> dict[str, Any]:
        """For /status: whether semantic search works, and if not, why."""
        if self.embedder is None:
            return {"available": False, "model": None, "reason": "embeddings not configured"}
        status = self.embedder.status()
        if self.vectors is None and status["available"]:
            status.update(available=False, reason="no vector index configured")
        status["recipe"] = VECTOR_CONTEXT_RECIPE if self.settings.recall_vector_context else None
        return status

    async def integrity_check(self) -> str:
        async with self.connection.execute("PRAGMA integrity_check") as cur:
            row = await cur.fetchone()
        return str(row[0]) if row else "no answer"

    async def export_jsonl(self, chat_id: str) -> list[str]:
        """The chat's memories (not the deleted ones) as JSON lines, oldest first."""
        return await transfer.export_lines(self, check_chat_id(chat_id))

    async def import_report(self, chat_id: str, lines: Iterable[str], *,
                            vectors: Mapping[int, np.ndarray] | None = None,
                            keep_source: bool = False) -> transfer.ImportReport:
        report = await transfer.import_lines(self, check_chat_id(chat_id), lines,
                                             vectors=vectors, keep_source=keep_source)
        self.tell_written(check_chat_id(chat_id))
        return report

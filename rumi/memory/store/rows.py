"""`MemoryRows`: the rows of `memories` in `rumi.db`, scoped to one chat per call.

The core the rest of the store builds on: the connection and its write lock, saving (validated,
embedded in one batch, inserted in one transaction) and reading rows back. `MemoryStore`
adds search and the lifecycle on top; `editing` and `transfer` write through the public row
helpers here (`insert_row`, `refresh_row`, `active_id`) rather than the store's insides.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import logging
from collections.abc import AsyncIterator, Iterable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import aiosqlite
import numpy as np

from rumi.config import MemorySettings
from rumi.memory.store.access import AccessLog
from rumi.memory.store.codec import (
    MEMORY_COLUMNS,
    SaveResult,
    check_chat_id,
    clean_ids,
    clean_key,
    clean_new_memory,
    clean_status,
    clean_type,
    content_hash,
    embedding_text,
    expiry_for,
    parse_ts,
    row_to_memory,
    row_to_recall_row,
    said_near,
    ts,
    utcnow,
    vector_contexts,
)
from rumi.memory.store.indexing import IndexKeeper
from rumi.memory.store.keyword_memory import KeywordMemory
from rumi.memory.store.models import (
    Memory,
    MemoryInputError,
    MemorySource,
    MemoryStatus,
    MemoryType,
    NewMemory,
    RecallRow,
)
from rumi.memory.store.ports import ChatVectors, TextEmbedder
from rumi.memory.store.recall_index import TOKENIZER, RecallIndex
from rumi.memory.store.translations import SqliteTranslations
from rumi.memory.store.written import WriteListeners

CHUNK = 500
log = logging.getLogger(__name__)

# Lookups by id write `+chat_id = ?`: the unary plus keeps SQLite from answering "chat_id = ?
# AND id IN (…100 ids…)" by scanning the chat's whole (chat_id, status, type) index — it did,
# without ANALYZE statistics, and that made recall grow with the chat (~25 ms per lookup at
# 100k memories instead of ~0.3 ms). The chat filter still applies, row by row.
_MEMORY_COLUMNS_OF_M = ", ".join(f"m.{name.strip()}" for name in MEMORY_COLUMNS.split(","))
_VECTOR_AT = len(MEMORY_COLUMNS.split(","))   # e.vector, then e.dim, in recall's rows


class MemoryRows:
    def __init__(
        self,
        conn: aiosqlite.Connection,
        settings: MemorySettings,
        embedder: TextEmbedder | None,
        vectors: ChatVectors | None,
        db_path: Path,
    ) -> None:
        self._conn = conn
        self.settings = settings
        self.embedder = embedder
        self.vectors = vectors
        self.db_path = db_path
        self.recovery: Any = None   # healing.Recovery when opened by open_memory_store
        self._write_lock = asyncio.Lock()
        memory = (KeywordMemory(conn, self._write_lock, db_path, TOKENIZER,
                                settings.recall_keyword_memory_min)
                  if settings.recall_keyword_engine == "memory" else None)
        self.keyword_index = RecallIndex(conn, self._write_lock, memory)
        self.translations = SqliteTranslations(conn, self._write_lock, self.transaction)
        # called with the chat id after its memories were written (saved, edited, imported):
        # the background translator (`recall.memory_translation`) wakes up
        self.written = WriteListeners()
        self.index = IndexKeeper(conn, self._write_lock, embedder, vectors,
                                 settings.backfill_batch, settings.recall_vector_context)
        self.access = AccessLog(self._run_alone)

    async def _run_alone(self, sql: str, params: tuple[Any, ...]) -> None:
        """One statement, committing by itself, never inside another task's transaction."""
        async with self._write_lock:
            await self._conn.execute_fetchall(sql, params)

    async def close(self) -> None:
        """Write the access stats not yet written and save dirty vector indexes, then close
        the database (even if either failed)."""
        if self.keyword_index.memory is not None:
            await self.keyword_index.memory.close()
        try:
            try:
                await self.access.close()
            finally:
                if self.vectors is not None:
                    await self.vectors.close()
        finally:
            await self._conn.close()

    @property
    def connection(self) -> aiosqlite.Connection:
        """Shared with `BlockStore` and the other memory modules (same write lock)."""
        return self._conn

    @property
    def write_lock(self) -> asyncio.Lock:
        return self._write_lock

    @contextlib.asynccontextmanager
    async def transaction(self) -> AsyncIterator[aiosqlite.Connection]:
        async with self._write_lock:
            await self._conn.execute("BEGIN IMMEDIATE")
            try:
                yield self._conn
            except BaseException:
                await self._conn.execute("ROLLBACK")
                raise
            await self._conn.execute("COMMIT")

    async def save(self, chat_id: str, new: NewMemory) -> SaveResult:
        """Store `new`; saving the same (key, content) again returns the existing memory."""
        return (await self.save_many(chat_id, [new]))[0]

    async def save_many(self, chat_id: str, items: Sequence[NewMemory], *,
                        embed: bool = True) -> list[SaveResult]:
        """Validate all, embed the new ones in one batch, insert in one transaction.

        `embed=False` stores them without vectors (a rebuild at start: the bot answers first,
        `reindex` or the first use's backfill embeds them later)."""
        chat = check_chat_id(chat_id)
        cleaned = self._clean_all(items)
        if not cleaned:
            return []
        hashes = [content_hash(m.content, m.key) for m in cleaned]
        existing = await self._active_by_hash(chat, hashes)
        fresh: dict[str, int] = {}
        for n, digest in enumerate(hashes):
            if digest not in existing and digest not in fresh:
                fresh[digest] = n
        order = list(fresh.values())
        contexts = await self.vector_contexts(chat, [cleaned[n] for n in order]) \
            if embed and self.index.can_embed else [""] * len(order)
        matrix = await self.index.embed(
            [embedding_text(cleaned[n].content, cleaned[n].key, c)
             for n, c in zip(order, contexts, strict=True)]
        ) if embed else None
        ids, created = await self._write_new(chat, cleaned, hashes, order, matrix)
        if matrix is not None:
            rows = [(ids[hashes[n]], row) for row, n in enumerate(order) if hashes[n] in created]
            if rows:
                await self.index.add(chat, [i for i, _ in rows], matrix[[r for _, r in rows]])
        memories = {m.id: m for m in await self.get_many(chat, list(ids.values()))}
        results: list[SaveResult] = []
        reported: set[str] = set()
        for digest in hashes:
            results.append(SaveResult(memories[ids[digest]],
                                      digest in created and digest not in reported))
            reported.add(digest)
        if created:
            self.tell_written(chat)
        return results

    def tell_written(self, chat: str) -> None:
        """Tell the `written` listeners (never raises: they only schedule work)."""
        self.written.tell(chat)

    async def vector_contexts(self, chat: str, items: Sequence[NewMemory]) -> list[str]:
        """Each item's vector context (`codec.vector_contexts`)."""
        return await vector_contexts(items, functools.partial(self.content_before, chat),
                                     self.settings.recall_vector_context)

    async def content_before(self, chat: str, kind: MemoryType, when: datetime,
                             below: int | None = None) -> str | None:
        """The content of the chat's latest active memory of type `kind` (with an id below
        `below`, when given), if it was said within `VECTOR_CONTEXT_GAP` of `when`."""
        async with self._conn.execute(
            "SELECT content, created_at FROM memories WHERE chat_id = ? AND type = ? "
            "AND status = 'active' AND id < ? ORDER BY id DESC LIMIT 1",
            (chat, kind.value, below if below is not None else 2**62),
        ) as cur:
            row = await cur.fetchone()
        return said_near(str(row[0]), parse_ts(row[1]), when) if row is not None else None

    def _clean_all(self, items: Sequence[NewMemory]) -> list[NewMemory]:
        """Every item validated; with several, the refusal says which one (1-based)."""
        cleaned: list[NewMemory] = []
        for n, item in enumerate(items):
            try:
                cleaned.append(clean_new_memory(item, self.settings.max_content_chars))
            except MemoryInputError as exc:
                if len(items) == 1:
                    raise
                raise MemoryInputError(f"Recuerdo {n + 1}: {exc}") from exc
        return cleaned

    async def _write_new(
        self, chat: str, cleaned: list[NewMemory], hashes: list[str], order: list[int],
        matrix: np.ndarray | None,
    ) -> tuple[dict[str, int], set[str]]:
        """One transaction: refresh the ones already active, insert the rest with their
        vectors; returns each hash's id and the hashes inserted now."""
        now = utcnow()
        ids: dict[str, int] = {}
        created: set[str] = set()
        async with self.transaction() as conn:
            told = sorted({hashes[n] for n, m in enumerate(cleaned)
                           if m.source == MemorySource.EXPLICIT})
            if told:  # the person says it again, on purpose: it may be learned again
                await conn.execute(
                    "DELETE FROM forgotten_hashes WHERE chat_id = ? "  # noqa: S608
                    f"AND content_hash IN ({','.join('?' * len(told))})", (chat, *told))
            for n, digest in enumerate(hashes):
                if digest in ids:
                    continue
                mem = cleaned[n]
                found = await self.active_id(chat, digest)
                if found is not None:
                    await self.refresh_row(found, mem, now)
                    ids[digest] = found
                    continue
                ids[digest] = await self.insert_row(conn, chat, mem, digest, now)
                created.add(digest)
            if matrix is not None:
                embedded = [(ids[hashes[n]], row) for row, n in enumerate(order)
                            if hashes[n] in created]
                if embedded:
                    await self.index.write_vectors([i for i, _ in embedded],
                                                   matrix[[r for _, r in embedded]])
        return ids, created

    async def insert_row(
        self, conn: aiosqlite.Connection, chat: str, mem: NewMemory, digest: str, now: datetime,
        status: MemoryStatus = MemoryStatus.ACTIVE,
    ) -> int:
        """Insert one row. History rows (import) go in with their final `status`: inserting
        them as active first would collide with an active memory of the same content."""
        expires = mem.expires_at or expiry_for(mem.type, self.settings.ttl_days, now)
        async with conn.execute(
            "INSERT INTO memories(chat_id, type, content, summary, key, source, importance, "
            "confidence, created_at, updated_at, expires_at, status, related_ids, content_hash, "
            "metadata, owner_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
            "RETURNING id",
            (chat, mem.type.value, mem.content, mem.summary, mem.key, mem.source.value,
             mem.importance, mem.confidence, ts(mem.created_at or now), ts(now), ts(expires),
             status.value, json.dumps(list(mem.related_ids)), digest,
             json.dumps(mem.metadata, ensure_ascii=False), mem.owner_id),
        ) as cur:
            row = await cur.fetchone()
        assert row is not None
        return int(row[0])

    async def refresh_row(self, memory_id: int, mem: NewMemory, now: datetime) -> None:
        """Saying it again keeps it: max importance/confidence, later expiry, explicit wins."""
        expires = mem.expires_at or expiry_for(mem.type, self.settings.ttl_days, now)
        await self._conn.execute(
            "UPDATE memories SET importance = MAX(importance, ?), confidence = MAX(confidence, ?),"
            " updated_at = ?, source = CASE WHEN ? = 'explicit' THEN 'explicit' ELSE source END,"
            " expires_at = CASE WHEN expires_at IS NULL OR ? IS NULL THEN NULL"
            " ELSE MAX(expires_at, ?) END WHERE id = ?",
            (mem.importance, mem.confidence, ts(now), mem.source.value, ts(expires), ts(expires),
             memory_id),
        )

    async def active_id(self, chat: str, digest: str) -> int | None:
        async with self._conn.execute(
            "SELECT id FROM memories WHERE chat_id = ? AND content_hash = ? AND status = 'active'",
            (chat, digest),
        ) as cur:
            row = await cur.fetchone()
        return None if row is None else int(row[0])

    async def _active_by_hash(self, chat: str, hashes: Sequence[str]) -> dict[str, int]:
        rows = await self.in_chunks(
            "SELECT id, content_hash FROM memories WHERE chat_id = ? AND status = 'active' "
            "AND content_hash IN ({marks})", (chat,), list(dict.fromkeys(hashes)))
        return {row[1]: row[0] for row in rows}

    async def in_chunks(
        self, sql: str, params: tuple[Any, ...], values: Sequence[Any]
    ) -> list[Any]:
        """Rows of `sql` for `values` bound `CHUNK` at a time after `params` (its `{marks}`
        becomes their placeholders): SQLite caps the parameters of one statement."""
        rows: list[Any] = []
        for start in range(0, len(values), CHUNK):
            chunk = values[start : start + CHUNK]
            rows.extend(await self._conn.execute_fetchall(
                sql.format(marks=",".join("?" * len(chunk))), (*params, *chunk)))
        return rows

    async def get(self, chat_id: str, memory_id: int) -> Memory | None:
        found = await self.get_many(chat_id, [memory_id])
        return found[0] if found else None

    async def get_many(self, chat_id: str, ids: Iterable[int]) -> list[Memory]:
        """Memories of this chat with these ids, in the order given (unknown ids skipped)."""
        rows, _ = await self.rows_by_id(check_chat_id(chat_id), ids, model=None)
        return rows

    async def recall_rows(self, chat_id: str, ids: Iterable[int]) -> list[RecallRow]:
        """`get_many` as recall reads its candidates (`RecallRow`: the whole memory built
        only for those it returns)."""
        rows, _ = await self.recall_rows_by_id(check_chat_id(chat_id), ids, model=None)
        return rows

    async def list(
        self,
        chat_id: str,
        *,
        types: Iterable[MemoryType | str] | None = None,
        status: MemoryStatus | str | None = MemoryStatus.ACTIVE,
        key: str | None = None,
        limit: int = 100,
        offset: int = 0,
    ) -> list[Memory]:
        """Newest first. `status=None` lists every status."""
        chat = check_chat_id(chat_id)
        where, params = ["chat_id = ?"], [chat]
        if status is not None:
            where.append("status = ?")
            params.append(clean_status(status).value)
        if types:
            kinds = [clean_type(t).value for t in types]
            where.append(f"type IN ({','.join('?' * len(kinds))})")
            params.extend(kinds)
        if key is not None:
            where.append("key = ?")
            params.append(clean_key(key) or "")
        params.extend([max(0, int(limit)), max(0, int(offset))])
        async with self._conn.execute(
            f"SELECT {MEMORY_COLUMNS} FROM memories WHERE {' AND '.join(where)} "  # noqa: S608
            "ORDER BY updated_at DESC, id DESC LIMIT ? OFFSET ?",
            params,
        ) as cur:
            return [self.access.apply(row_to_memory(row)) for row in await cur.fetchall()]

    async def ids_between(
        self, chat_id: str, spans: Iterable[tuple[datetime, datetime]], limit: int,
        now: datetime | None = None,
    ) -> list[int]:
        """Ids of active, unexpired memories of the chat whose time (`created_at`) falls in
        any [start, end) span, newest first: recall's candidates for "ayer", "last week"."""
        chat = check_chat_id(chat_id)
        bounds = [(ts(a), ts(b)) for a, b in spans]
        if not bounds or limit <= 0:
            return []
        when = " OR ".join("(created_at >= ? AND created_at < ?)" for _ in bounds)
        params: list[Any] = [chat, ts(now or datetime.now(UTC))]
        for start, end in bounds:
            params += [start, end]
        params.append(int(limit))
        async with self._conn.execute(
            "SELECT id FROM memories WHERE chat_id = ? AND status = 'active' "  # noqa: S608
            f"AND (expires_at IS NULL OR expires_at > ?) AND ({when}) "
            "ORDER BY created_at DESC, id DESC LIMIT ?", params,
        ) as cur:
            return [row[0] for row in await cur.fetchall()]

    async def reserve_ids(self, past: int) -> None:
        """Never hand out a memory id up to `past` again: ids MEMORY.md (or its write history)
        showed may belong to rows a lost WAL took with it, and a reused id would name two
        different memories (in the file's history, the vectors, a person's `/forget #3`)."""
        async with self.transaction() as conn:
            await conn.execute(
                "UPDATE sqlite_sequence SET seq = MAX(seq, ?) WHERE name = 'memories'", (past,))
            await conn.execute(
                "INSERT INTO sqlite_sequence(name, seq) SELECT 'memories', ? WHERE NOT EXISTS "
                "(SELECT 1 FROM sqlite_sequence WHERE name = 'memories')", (past,))

    async def chats(self) -> list[str]:
        async with self._conn.execute("SELECT DISTINCT chat_id FROM memories ORDER BY 1") as cur:
            return [row[0] for row in await cur.fetchall()]

    async def rows_by_id(
        self, chat: str, ids: Iterable[int], *, model: str | None
    ) -> tuple[list[Memory], dict[int, np.ndarray]]:
        """Rows in the order asked (unknown ids skipped) and, when `model` is given, their
        stored vectors of that model."""
        wanted, found = await self._fetch_by_id(chat, ids, model)
        apply = self.access.apply
        by_id = {row[0]: apply(row_to_memory(row)) for row in found}   # row[0]: the id
        return [by_id[i] for i in dict.fromkeys(wanted) if i in by_id], _vectors(found, model)

    async def recall_rows_by_id(
        self, chat: str, ids: Iterable[int], *, model: str | None
    ) -> tuple[list[RecallRow], dict[int, np.ndarray]]:
        """`rows_by_id` as recall reads its candidates: each row's `Memory` is built only
        when asked for. A memory with access touches not written yet is built now, with
        them (what `rows_by_id` gives); the others' rows hold every touch already."""
        wanted, found = await self._fetch_by_id(chat, ids, model)
        touched, apply = self.access.touched, self.access.apply
        by_id = {row[0]: (RecallRow.of(apply(row_to_memory(row))) if touched(row[0])
                          else row_to_recall_row(row)) for row in found}
        return [by_id[i] for i in dict.fromkeys(wanted) if i in by_id], _vectors(found, model)

    async def _fetch_by_id(
        self, chat: str, ids: Iterable[int], model: str | None
    ) -> tuple[list[int], list[Any]]:
        wanted = list(clean_ids(ids))
        if model is None:
            sql = (f"SELECT {MEMORY_COLUMNS} FROM memories "  # noqa: S608
                   "WHERE +chat_id = ? AND id IN ({marks})")
            return wanted, await self.in_chunks(sql, (chat,), wanted)
        sql = (f"SELECT {_MEMORY_COLUMNS_OF_M}, e.vector AS vector, e.dim AS dim "  # noqa: S608
               "FROM memories m LEFT JOIN memory_embeddings e "
               "ON e.memory_id = m.id AND e.model = ? "
               "WHERE +m.chat_id = ? AND m.id IN ({marks})")
        return wanted, await self.in_chunks(sql, (model, chat), wanted)


def _vectors(found: list[Any], model: str | None) -> dict[int, np.ndarray]:
    """The stored vectors of `_fetch_by_id`'s rows (they follow the memory's columns)."""
    vectors: dict[int, np.ndarray] = {}
    if model is not None:
        for row in found:
            vector, dim = row[_VECTOR_AT], row[_VECTOR_AT + 1]
            if vector is not None:
                vectors[row[0]] = np.frombuffer(vector, dtype=np.float32, count=dim)
    return vectors

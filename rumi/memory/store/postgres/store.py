"""`PgMemoryStore`: Rumi's long-term memory in PostgreSQL (seed 001's `cto.memory`).

The same public API as the SQLite store (`api.MemoryStoreAPI`); the vectors live in the rows
(pgvector, HNSW cosine), the keyword half of recall is PostgreSQL full-text search in Spanish
and English (`search.PgKeywords`), and the scoring weights come from the active row of
`cto.algorithms`. psycopg 3's `AsyncConnectionPool` (a pool checked before each use, so a
restarted server is reconnected to) with pgvector's adapters: numpy vectors in and out.
Writes that two Rumis may race on are single statements (`ON CONFLICT`, `x = x + 1`) or take
row locks, so no update is lost.
"""

from __future__ import annotations

import functools
import logging
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterable, Sequence
from datetime import UTC, datetime
from typing import Any

import numpy as np
from pgvector.psycopg import register_vector_async
from psycopg import AsyncConnection
from psycopg.rows import dict_row
from psycopg_pool import AsyncConnectionPool

from rumi.base.store_url import endpoint
from rumi.config import MemorySettings
from rumi.memory.store import days, fts
from rumi.memory.store.codec import (
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
    said_near,
    to_utc,
    utcnow,
    vector_contexts,
    vector_label,
)
from rumi.memory.store.editing import Forgotten
from rumi.memory.store.models import (
    Memory,
    MemoryInputError,
    MemorySource,
    MemoryStatus,
    MemoryType,
    NewMemory,
    RecallRow,
)
from rumi.memory.store.ports import TextEmbedder
from rumi.memory.store.postgres import editing, schema
from rumi.memory.store.postgres.algorithms import read_scoring
from rumi.memory.store.postgres.blocks import PgBlockRows
from rumi.memory.store.postgres.changes import ChangeListener, announce
from rumi.memory.store.postgres.rows import COLUMNS, owner, to_memory
from rumi.memory.store.postgres.search import PgKeywords, tsquery
from rumi.memory.store.postgres.semantic import PgVectors
from rumi.memory.store.postgres.tape_rows import PgTapeRows
from rumi.memory.store.postgres.translations import PgTranslations
from rumi.memory.store.postgres.upkeep import PgUpkeep
from rumi.memory.store.written import WriteListeners

log = logging.getLogger(__name__)

DEFAULT_DIM = 384


def _array(value: Any) -> np.ndarray:
    """pgvector's text loader gives numpy arrays, its binary loader `Vector` objects."""
    found = value.to_numpy() if hasattr(value, "to_numpy") else value
    return np.asarray(found, dtype=np.float32)


def redacted(url: str) -> str:
    """host:port/db of a PostgreSQL URL, never its user or password (logs, /status)."""
    rest = url.partition("://")[2].rpartition("@")[2]
    database = rest.partition("/")[2].split("?", 1)[0]
    return f"{endpoint(url)}/{database}" if database else endpoint(url)


class PgMemoryStore(PgVectors, PgUpkeep):
    """Memories in `cto.memory`, scoped to one chat's owner per call."""

    backend = "postgres"
    vectors = None   # the vectors are in the rows, not in a separate index

    def __init__(self, pool: AsyncConnectionPool, name: str, settings: MemorySettings,
                 embedder: TextEmbedder | None, dim: int, where: str, url: str) -> None:
        self.pool = pool
        self.name = name
        self.where = where
        self.settings = settings
        self.embedder = embedder
        self.dim = dim
        self.recovery: Any = None
        self.keyword_index = PgKeywords(pool)
        # memories translated when saved (`translations`): the background translator reads
        # and writes them, woken by `written`
        self.translations = PgTranslations(pool)
        self.written = WriteListeners()
        self._query_cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._backfilled: set[str] = set()
        self.tape_rows = PgTapeRows(pool, name)
        self.block_rows = PgBlockRows(pool, name)
        self._url = url
        self._listener: ChangeListener | None = None

    @classmethod
    async def open(cls, url: str, name: str, settings: MemorySettings,
                   embedder: TextEmbedder | None, *, dim: int | None = None,
                   max_size: int = 4) -> PgMemoryStore:
        """Migrate (creating the schemas on a new database), then open the pool; the scoring
        weights and decay rates are read from the active `cto.algorithms` row."""
        dim = int(dim or (embedder.dim if embedder is not None else DEFAULT_DIM))
        where = redacted(url)
        async with await AsyncConnection.connect(url, autocommit=True) as conn:
            await schema.migrate(conn, dim)

        async def configure(conn: AsyncConnection) -> None:
            await register_vector_async(conn)

        pool = AsyncConnectionPool(
            url, min_size=1, max_size=max_size, open=False, configure=configure,
            check=AsyncConnectionPool.check_connection,
            kwargs={"autocommit": True, "row_factory": dict_row,
                    "options": "-c TimeZone=UTC"})
        await pool.open(wait=True, timeout=30)
        try:
            async with pool.connection() as conn:
                settings = await read_scoring(conn, settings)
                await conn.execute(
                    "INSERT INTO rumi.stores(name) VALUES (%s) ON CONFLICT (name) "
                    "DO UPDATE SET last_seen = now()", (name,))
        except BaseException:
            await pool.close()
            raise
        log.info("memory store: PostgreSQL at %s as %r", where, name)
        return cls(pool, name, settings, embedder, dim, where, url)

    async def watch(self, on_change: Callable[[str], Awaitable[None]]) -> None:
        """Call `on_change(chat)` whenever another Rumi changes that chat's memories."""
        if self._listener is None:
            self._listener = ChangeListener(self._url, self.name, self.where, on_change)
            self._listener.start()

    async def changed(self, chat: str) -> None:
        """Tell the other Rumis (after a write that committed)."""
        async with self.pool.connection() as conn:
            await announce(conn, self.name, chat)

    def tell_written(self, chat: str) -> None:
        """Tell the `written` listeners (the translator's wake) that this Rumi saved or
        changed the chat's memories (never raises: they only schedule work)."""
        self.written.tell(chat)

    async def close(self) -> None:
        if self._listener is not None:
            await self._listener.close()
        await self.pool.close()

    @property
    def tape_db(self) -> PgTapeRows:
        """Where `TapeIndex` keeps its rows: this Rumi's in the `rumi` schema."""
        return self.tape_rows

    @property
    def has_vectors(self) -> bool:
        return self.embedder is not None and self.settings.embeddings_enabled

    @property
    def can_embed(self) -> bool:
        return self.has_vectors and self.embedder is not None and self.embedder.available

    @property
    def model(self) -> str | None:
        """The label of this store's vectors (`codec.vector_label`)."""
        name = getattr(self.embedder, "model_name", None) if self.has_vectors else None
        return vector_label(name, self.settings.recall_vector_context) if name else None

    async def fetch(self, sql: str, params: Sequence[Any] = (), *,
                    binary: bool = False) -> list[dict[str, Any]]:
        """Rows of `sql`; `binary` for rows with vectors (pgvector's binary format: 60 rows'
        vectors read 3-6x faster than parsing their text)."""
        async with self.pool.connection() as conn:
            cur = await conn.execute(sql, params, binary=binary)
            return list(await cur.fetchall())

    async def run(self, sql: str, params: Sequence[Any] = ()) -> int:
        async with self.pool.connection() as conn:
            cur = await conn.execute(sql, params)
            return cur.rowcount

    async def vector_contexts(self, chat: str, items: Sequence[NewMemory]) -> list[str]:
        """Each item's vector context (`codec.vector_contexts`, as SQLite's)."""
        return await vector_contexts(items, functools.partial(self.content_before, chat),
                                     self.settings.recall_vector_context)

    async def content_before(self, chat: str, kind: MemoryType, when: datetime,
                             below: int | None = None) -> str | None:
        """The content of the chat's latest active memory of type `kind` (with an id below
        `below`, when given), if it was said within `VECTOR_CONTEXT_GAP` of `when`."""
        rows = await self.fetch(
            "SELECT content, created_at FROM cto.memory WHERE owner_type = %s "
            "AND owner_id = %s AND type = %s AND status = 'active' AND id < %s "
            "ORDER BY id DESC LIMIT 1",
            (*owner(chat), kind.value, below if below is not None else 2**62))
        return said_near(str(rows[0]["content"]), to_utc(rows[0]["created_at"]), when) \
            if rows else None

    # saving -------------------------------------------------------------------------------
    async def save(self, chat_id: str, new: NewMemory) -> SaveResult:
        return (await self.save_many(chat_id, [new]))[0]

    async def save_many(self, chat_id: str, items: Sequence[NewMemory], *,
                        embed: bool = True) -> list[SaveResult]:
        """Validate all, embed the new ones in one batch, upsert in one transaction: the same
        (key, content) saved again, here or by another Rumi at the same moment, is refreshed
        (`ON CONFLICT` on the active-hash index), never duplicated nor lost."""
        chat = check_chat_id(chat_id)
        cleaned = self._clean_all(items)
        if not cleaned:
            return []
        hashes = [content_hash(m.content, m.key) for m in cleaned]
        existing = await self.active_ids(chat, hashes)
        fresh: dict[str, int] = {}
        for n, digest in enumerate(hashes):
            if digest not in existing and digest not in fresh:
                fresh[digest] = n
        order = list(fresh.values())
        contexts = await self.vector_contexts(chat, [cleaned[n] for n in order]) \
            if embed and order and self.can_embed else [""] * len(order)
        matrix = await self.embed([embedding_text(cleaned[n].content, cleaned[n].key, c)
                                   for n, c in zip(order, contexts, strict=True)]
                                  ) if embed and order else None
        vector_of = {hashes[n]: matrix[row] for row, n in enumerate(order)} \
            if matrix is not None else {}
        ids: dict[str, int] = {}
        created: set[str] = set()
        now = utcnow()
        async with self.pool.connection() as conn, conn.transaction():
            told = sorted({hashes[n] for n, m in enumerate(cleaned)
                           if m.source == MemorySource.EXPLICIT})
            if told:  # the person says it again, on purpose: it may be learned again
                await conn.execute(
                    "DELETE FROM rumi.forgotten_hashes WHERE owner_type = %s AND owner_id = %s"
                    " AND hash = ANY(%s)", (*owner(chat), told))
            for n, digest in enumerate(hashes):
                if digest in ids:
                    continue
                new_id, inserted = await editing.upsert(
                    conn, self, chat, cleaned[n], digest, now, vector_of.get(digest))
                ids[digest] = new_id
                if inserted:
                    created.add(digest)
            await announce(conn, self.name, chat)
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

    def _clean_all(self, items: Sequence[NewMemory]) -> list[NewMemory]:
        cleaned: list[NewMemory] = []
        for n, item in enumerate(items):
            try:
                cleaned.append(clean_new_memory(item, self.settings.max_content_chars))
            except MemoryInputError as exc:
                if len(items) == 1:
                    raise
                raise MemoryInputError(f"Recuerdo {n + 1}: {exc}") from exc
        return cleaned

    def expiry(self, mem: NewMemory, now: datetime) -> datetime | None:
        return mem.expires_at or expiry_for(mem.type, self.settings.ttl_days, now)

    async def active_ids(self, chat: str, hashes: Sequence[str]) -> dict[str, int]:
        rows = await self.fetch(
            "SELECT id, hash FROM cto.memory WHERE owner_type = %s AND owner_id = %s "
            "AND status = 'active' AND hash = ANY(%s)", (*owner(chat), list(set(hashes))))
        return {row["hash"]: int(row["id"]) for row in rows}

    async def active_id(self, chat: str, digest: str) -> int | None:
        return (await self.active_ids(chat, [digest])).get(digest)

    # reading ------------------------------------------------------------------------------
    async def get(self, chat_id: str, memory_id: int) -> Memory | None:
        found = await self.get_many(chat_id, [memory_id])
        return found[0] if found else None

    async def get_many(self, chat_id: str, ids: Iterable[int]) -> list[Memory]:
        rows, _ = await self.rows_by_id(check_chat_id(chat_id), ids, with_vectors=False)
        return rows

    async def get_many_with_vectors(
        self, chat_id: str, ids: Iterable[int]
    ) -> tuple[list[Memory], dict[int, np.ndarray]]:
        return await self.rows_by_id(check_chat_id(chat_id), ids, with_vectors=True)

    async def recall_rows(self, chat_id: str, ids: Iterable[int]) -> list[RecallRow]:
        """`get_many` as recall reads it (each memory is built anyway here)."""
        return [RecallRow.of(m) for m in await self.get_many(chat_id, ids)]

    async def recall_rows_with_vectors(
        self, chat_id: str, ids: Iterable[int]
    ) -> tuple[list[RecallRow], dict[int, np.ndarray]]:
        found, vectors = await self.get_many_with_vectors(chat_id, ids)
        return [RecallRow.of(m) for m in found], vectors

    async def get_embeddings(self, chat_id: str, ids: Iterable[int]) -> dict[int, np.ndarray]:
        """Stored current-model vectors of these memories."""
        return (await self.get_many_with_vectors(chat_id, ids))[1]

    async def rows_by_id(self, chat: str, ids: Iterable[int], *, with_vectors: bool
                         ) -> tuple[list[Memory], dict[int, np.ndarray]]:
        wanted = list(clean_ids(ids))
        if not wanted:
            return [], {}
        extra = ", embedding" if with_vectors and self.model else ""
        rows = await self.fetch(
            f"SELECT {COLUMNS}{extra} FROM cto.memory WHERE owner_type = %s "  # noqa: S608
            "AND owner_id = %s AND id = ANY(%s::bigint[])", (*owner(chat), wanted),
            binary=bool(extra))
        by_id = {int(row["id"]): to_memory(row) for row in rows}
        vectors = {int(row["id"]): _array(row["embedding"])
                   for row in rows if extra and row["embedding"] is not None
                   and row["embedding_model"] == self.model}
        return [by_id[i] for i in dict.fromkeys(wanted) if i in by_id], vectors

    async def list(self, chat_id: str, *, types: Any = None,
                   status: MemoryStatus | str | None = MemoryStatus.ACTIVE,
                   key: str | None = None, limit: int = 100, offset: int = 0) -> list[Memory]:
        """Newest first. `status=None` lists every status."""
        chat = check_chat_id(chat_id)
        where, params = ["owner_type = %s", "owner_id = %s"], list(owner(chat))
        if status is not None:
            where.append("status = %s")
            params.append(clean_status(status).value)
        if types:
            where.append("type = ANY(%s)")
            params.append([clean_type(t).value for t in types])
        if key is not None:
            where.append("key = %s")
            params.append(clean_key(key) or "")
        params += [max(0, int(limit)), max(0, int(offset))]
        rows = await self.fetch(
            f"SELECT {COLUMNS} FROM cto.memory WHERE {' AND '.join(where)} "  # noqa: S608
            "ORDER BY updated_at DESC, id DESC LIMIT %s OFFSET %s", params)
        return [to_memory(row) for row in rows]

    async def ids_between(self, chat_id: str, spans: Iterable[tuple[datetime, datetime]],
                          limit: int, now: datetime | None = None) -> list[int]:
        chat = check_chat_id(chat_id)
        bounds = [(to_utc(a), to_utc(b)) for a, b in spans]
        if not bounds or limit <= 0:
            return []
        when = " OR ".join("(created_at >= %s AND created_at < %s)" for _ in bounds)
        params: list[Any] = [*owner(chat), now or datetime.now(UTC)]
        for start, end in bounds:
            params += [start, end]
        params.append(int(limit))
        rows = await self.fetch(
            "SELECT id FROM cto.memory WHERE owner_type = %s AND owner_id = %s "  # noqa: S608
            f"AND status = 'active' AND (expires_at IS NULL OR expires_at > %s) AND ({when}) "
            "ORDER BY created_at DESC, id DESC LIMIT %s", params)
        return [int(row["id"]) for row in rows]

    async def chats(self) -> list[str]:
        rows = await self.fetch("SELECT DISTINCT owner_id FROM cto.memory ORDER BY 1")
        return [row["owner_id"] for row in rows]

    async def reserve_ids(self, past: int) -> None:
        """Never hand out an id up to `past` again (ids MEMORY.md showed)."""
        await self.run("SELECT setval('cto.memory_id_seq', greatest(%s, "
                       "(SELECT last_value FROM cto.memory_id_seq)))", (int(past),))

    # searching ----------------------------------------------------------------------------
    async def keyword_search(self, chat_id: str, query: str, limit: int = 20, *,
                             match_all: bool = False) -> list[tuple[int, float]]:
        """Active, unexpired memories matching words of `query` (Spanish or English stems,
        accents folded), best first by `ts_rank_cd`."""
        chat = check_chat_id(chat_id)
        words = fts.terms(query)
        if not words:
            return []
        return await self.keyword_index.ranked(chat, tsquery(words, "&" if match_all else "|"),
                                               limit)

    async def mark_accessed(self, chat_id: str, ids: Iterable[int],
                            when: datetime | None = None, *, wait: bool = True) -> None:
        """Always written before returning (`wait` is SQLite's write-behind). A use counts
        as another day of use by the rule of `days.py`, decided in the statement itself."""
        chat = check_chat_id(chat_id)
        wanted = list(clean_ids(ids))
        if wanted:   # one statement: two Rumis counting at once both count
            at = to_utc(when) if when else utcnow()
            new_day = "(access_day_at IS NULL OR access_day_at <= %s)"
            await self.run(
                "UPDATE cto.memory SET access_count_v2 = access_count_v2 + 1, last_access = %s, "  # noqa: S608
                f"access_days = access_days + CASE WHEN {new_day} THEN 1 ELSE 0 END, "
                f"access_day_at = CASE WHEN {new_day} THEN %s ELSE access_day_at END "
                "WHERE owner_type = %s AND owner_id = %s AND id = ANY(%s::bigint[])",
                (at, days.since(at), days.since(at), at, *owner(chat), wanted))

    # editing (postgres/editing.py) --------------------------------------------------------
    async def update(self, chat_id: str, memory_id: int, **fields: Any) -> Memory:
        updated = await editing.update(self, chat_id, memory_id, **fields)
        await self.changed(updated.chat_id)
        if fields.get("content") is not None or fields.get("type") is not None:
            self.tell_written(updated.chat_id)   # its translation was dropped
        return updated

    async def supersede(self, chat_id: str, old_id: int, new: NewMemory) -> Memory:
        result = await editing.supersede(self, chat_id, old_id, new)
        await self.changed(result.chat_id)
        self.tell_written(result.chat_id)
        return result

    async def forget(self, chat_id: str, *, memory_id: int | None = None,
                     key: str | None = None, text: str | None = None) -> Forgotten:
        # the forget's own transaction announces it (editing.purge)
        return await editing.forget(self, chat_id, memory_id=memory_id, key=key, text=text)

    async def erase(self, chat_id: str, ids: Sequence[int]) -> int:
        if not ids:
            return 0
        return await editing.purge(self, check_chat_id(chat_id), ids)

    async def forgotten(self, chat_id: str, hashes: Iterable[str]) -> set[str]:
        rows = await self.fetch(
            "SELECT hash FROM rumi.forgotten_hashes WHERE owner_type = %s AND owner_id = %s "
            "AND hash = ANY(%s)", (*owner(check_chat_id(chat_id)), sorted(set(hashes))))
        return {row["hash"] for row in rows}

    async def mark_forgotten(self, chat_id: str, hashes: Iterable[str]) -> None:
        kind, who = owner(check_chat_id(chat_id))
        async with self.pool.connection() as conn:
            cur = conn.cursor()
            await cur.executemany(
                "INSERT INTO rumi.forgotten_hashes(owner_type, owner_id, hash) "
                "VALUES (%s, %s, %s) ON CONFLICT DO NOTHING",
                [(kind, who, h) for h in sorted(set(hashes))])


__all__ = ["PgMemoryStore", "redacted"]

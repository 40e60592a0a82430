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

import logging
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from typing import Any

import numpy as np
from pgvector.psycopg import register_vector_async
from psycopg import AsyncConnection
from psycopg.rows import dict_row
from psycopg_pool import AsyncConnectionPool

from rumi.config import MemorySettings
from rumi.memory.store import fts
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
    to_utc,
    utcnow,
)
from rumi.memory.store.editing import Forgotten
from rumi.memory.store.models import Memory, MemoryInputError, MemorySource, MemoryStatus, NewMemory
from rumi.memory.store.ports import TextEmbedder
from rumi.memory.store.postgres import editing, schema
from rumi.memory.store.postgres.algorithms import read_scoring
from rumi.memory.store.postgres.rows import COLUMNS, owner, to_memory
from rumi.memory.store.postgres.search import PgKeywords, tsquery
from rumi.memory.store.transfer import ImportReport, memory_to_line

log = logging.getLogger(__name__)

_QUERY_CACHE = 256
DEFAULT_DIM = 384


def _array(value: Any) -> np.ndarray:
    """pgvector's text loader gives numpy arrays, its binary loader `Vector` objects."""
    found = value.to_numpy() if hasattr(value, "to_numpy") else value
    return np.asarray(found, dtype=np.float32)


def redacted(url: str) -> str:
    """host:port/db of a PostgreSQL URL, without user or password (for logs and errors)."""
    from psycopg.conninfo import conninfo_to_dict

    try:
        info = conninfo_to_dict(url)
    except Exception:  # noqa: BLE001 - a malformed URL is named without its text
        return "(malformed store.url)"
    return f"{info.get('host', 'localhost')}:{info.get('port', 5432)}/{info.get('dbname', '')}"


class PgMemoryStore:
    """Memories in `cto.memory`, scoped to one chat's owner per call."""

    backend = "postgres"
    vectors = None   # the vectors are in the rows, not in a separate index

    def __init__(self, pool: AsyncConnectionPool, name: str, settings: MemorySettings,
                 embedder: TextEmbedder | None, dim: int, where: str) -> None:
        self.pool = pool
        self.name = name
        self.where = where
        self.settings = settings
        self.embedder = embedder
        self.dim = dim
        self.recovery: Any = None
        self.keyword_index = PgKeywords(pool)
        self._query_cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._backfilled: set[str] = set()
        self.local: Any = None   # LocalIndexDb: the tape index of this machine's tapes

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
        return cls(pool, name, settings, embedder, dim, where)

    async def close(self) -> None:
        try:
            await self.pool.close()
        finally:
            if self.local is not None:
                await self.local.close()

    @property
    def tape_db(self) -> Any:
        """Where `TapeIndex` keeps its rows (a local file: the tapes are local)."""
        if self.local is None:
            raise RuntimeError("no local index database was opened for this store")
        return self.local

    @property
    def has_vectors(self) -> bool:
        return self.embedder is not None and self.settings.embeddings_enabled

    @property
    def can_embed(self) -> bool:
        return self.has_vectors and self.embedder is not None and self.embedder.available

    @property
    def model(self) -> str | None:
        return getattr(self.embedder, "model_name", None) if self.has_vectors else None

    async def fetch(self, sql: str, params: Sequence[Any] = ()) -> list[dict[str, Any]]:
        async with self.pool.connection() as conn:
            cur = await conn.execute(sql, params)
            return list(await cur.fetchall())

    async def run(self, sql: str, params: Sequence[Any] = ()) -> int:
        async with self.pool.connection() as conn:
            cur = await conn.execute(sql, params)
            return cur.rowcount

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
        matrix = await self.embed([embedding_text(cleaned[n].content, cleaned[n].key)
                                   for n in order]) if embed and order else None
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
        memories = {m.id: m for m in await self.get_many(chat, list(ids.values()))}
        results: list[SaveResult] = []
        reported: set[str] = set()
        for digest in hashes:
            results.append(SaveResult(memories[ids[digest]],
                                      digest in created and digest not in reported))
            reported.add(digest)
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
            "AND owner_id = %s AND id = ANY(%s::bigint[])", (*owner(chat), wanted))
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

    async def mark_accessed(self, chat_id: str, ids: Iterable[int],
                            when: datetime | None = None) -> None:
        chat = check_chat_id(chat_id)
        wanted = list(clean_ids(ids))
        if wanted:   # one statement: two Rumis counting at once both count
            await self.run(
                "UPDATE cto.memory SET access_count_v2 = access_count_v2 + 1, last_access = %s "
                "WHERE owner_type = %s AND owner_id = %s AND id = ANY(%s::bigint[])",
                (to_utc(when) if when else utcnow(), *owner(chat), wanted))

    # editing (postgres/editing.py) --------------------------------------------------------
    async def update(self, chat_id: str, memory_id: int, **fields: Any) -> Memory:
        return await editing.update(self, chat_id, memory_id, **fields)

    async def supersede(self, chat_id: str, old_id: int, new: NewMemory) -> Memory:
        return await editing.supersede(self, chat_id, old_id, new)

    async def forget(self, chat_id: str, *, memory_id: int | None = None,
                     key: str | None = None, text: str | None = None) -> Forgotten:
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

    # lifecycle ----------------------------------------------------------------------------
    async def purge_expired(self, now: datetime | None = None, *,
                            chat_id: str | None = None) -> int:
        when = to_utc(now) if now else utcnow()
        params: list[Any] = [when, when]
        where = ""
        if chat_id is not None:
            where = " AND owner_type = %s AND owner_id = %s"
            params += list(owner(check_chat_id(chat_id)))
        return await self.run(
            "UPDATE cto.memory SET status = 'expired', updated_at = %s "  # noqa: S608
            f"WHERE status = 'active' AND expires_at IS NOT NULL AND expires_at <= %s{where}",
            params)

    async def embed_missing(self, chat_id: str, limit: int | None) -> int:
        """Embed up to `limit` (None: all) active memories lacking a current-model vector."""
        chat = check_chat_id(chat_id)
        if not self.can_embed:
            return 0
        done = 0
        while limit is None or done < limit:
            batch = 64 if limit is None else min(64, limit - done)
            rows = await self.fetch(
                "SELECT id, content, key FROM cto.memory WHERE owner_type = %s "
                "AND owner_id = %s AND status = 'active' AND (embedding IS NULL OR "
                "embedding_model IS DISTINCT FROM %s) ORDER BY id LIMIT %s",
                (*owner(chat), self.model, batch))
            if not rows:
                break
            matrix = await self.embed([embedding_text(r["content"], r["key"]) for r in rows])
            if matrix is None:
                break
            async with self.pool.connection() as conn:
                cur = conn.cursor()
                await cur.executemany(
                    "UPDATE cto.memory SET embedding = %s, embedding_model = %s WHERE id = %s",
                    [(matrix[n], self.model, int(r["id"])) for n, r in enumerate(rows)])
            done += len(rows)
        return done

    async def reindex(self, chat_id: str) -> dict[str, int]:
        embedded = await self.embed_missing(chat_id, None)
        rows = await self.fetch(
            "SELECT count(*) AS n FROM cto.memory WHERE owner_type = %s AND owner_id = %s "
            "AND status = 'active' AND embedding_model = %s",
            (*owner(check_chat_id(chat_id)), self.model))
        return {"embedded": embedded, "indexed": int(rows[0]["n"])}

    async def stats(self, chat_id: str) -> dict[str, Any]:
        chat = check_chat_id(chat_id)
        by_status: dict[str, int] = {}
        by_type: dict[str, int] = {}
        embedded = 0
        for row in await self.fetch(
                "SELECT status, type, count(*) AS n, count(*) FILTER (WHERE embedding_model = %s)"
                " AS e FROM cto.memory WHERE owner_type = %s AND owner_id = %s GROUP BY 1, 2",
                (self.model, *owner(chat))):
            by_status[row["status"]] = by_status.get(row["status"], 0) + int(row["n"])
            if row["status"] == MemoryStatus.ACTIVE.value:
                by_type[row["type"]] = by_type.get(row["type"], 0) + int(row["n"])
                embedded += int(row["e"])
        return {"chat_id": chat, "total": sum(by_status.values()),
                "active": by_status.get(MemoryStatus.ACTIVE.value, 0), "by_status": by_status,
                "by_type": by_type, "embedded": embedded, "embeddings": self.embeddings_status()}

    def embeddings_status(self) -> dict[str, Any]:
        if self.embedder is None:
            return {"available": False, "model": None, "reason": "embeddings not configured"}
        status = self.embedder.status()
        if not self.has_vectors and status["available"]:
            status.update(available=False, reason="no vector index configured")
        return status

    async def integrity_check(self) -> str:
        await self.fetch("SELECT 1 FROM cto.memory LIMIT 1")
        return "ok"

    async def export_jsonl(self, chat_id: str) -> list[str]:
        rows = await self.fetch(
            f"SELECT {COLUMNS} FROM cto.memory WHERE owner_type = %s AND owner_id = %s "  # noqa: S608
            "AND status <> 'deleted' ORDER BY id", owner(check_chat_id(chat_id)))
        return [memory_to_line(to_memory(row)) for row in rows]

    async def import_report(self, chat_id: str, lines: Iterable[str]) -> ImportReport:
        return await editing.import_lines(self, check_chat_id(chat_id), lines)

    # the per-chat memory switch -------------------------------------------------------------
    async def switch_state(self, chat_id: str) -> bool | None:
        rows = await self.fetch("SELECT enabled FROM rumi.memory_switch WHERE chat_id = %s",
                                (chat_id,))
        return None if not rows else bool(rows[0]["enabled"])

    async def set_switch(self, chat_id: str, enabled: bool, by: str | None) -> None:
        await self.run(
            "INSERT INTO rumi.memory_switch(chat_id, enabled, changed_by) VALUES (%s, %s, %s) "
            "ON CONFLICT (chat_id) DO UPDATE SET enabled = excluded.enabled, "
            "changed_by = excluded.changed_by, changed_at = now()", (chat_id, enabled, by))

    async def sharing(self) -> list[str]:
        """The names of the Rumis that opened this store, this one first."""
        rows = await self.fetch("SELECT name FROM rumi.stores ORDER BY name")
        return [self.name] + [r["name"] for r in rows if r["name"] != self.name]


__all__ = ["PgMemoryStore", "redacted"]

"""The PostgreSQL store's upkeep: expiry, embedding what lacks a vector, counts, export and
import, the per-chat memory switch and the Rumis sharing the store (`PgMemoryStore` mixes it
in; it uses the store's `fetch`/`run`/`pool` and its embedding helpers)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping
from datetime import datetime
from typing import Any

import numpy as np

from rumi.memory.store.codec import (
    VECTOR_CONTEXT_GAP,
    VECTOR_CONTEXT_RECIPE,
    asked_in,
    check_chat_id,
    embedding_text,
    to_utc,
    utcnow,
)
from rumi.memory.store.models import MemoryStatus
from rumi.memory.store.postgres import editing, schema
from rumi.memory.store.postgres.changes import announce
from rumi.memory.store.postgres.rows import COLUMNS, owner, to_memory
from rumi.memory.store.transfer import ImportReport, memory_to_line

# The memory said just before `m`, if within the gap (codec.vector_contexts' rule).
_BEFORE = (
    "(SELECT CASE WHEN abs(extract(epoch FROM p.created_at - m.created_at)) <= "  # noqa: S608
    f"{VECTOR_CONTEXT_GAP.total_seconds():g} THEN p.content END FROM cto.memory p "
    "WHERE p.owner_type = m.owner_type AND p.owner_id = m.owner_id AND p.type = m.type "
    "AND p.status = 'active' AND p.id < m.id ORDER BY p.id DESC LIMIT 1)"
)


def _vector(value: Any) -> np.ndarray:
    """pgvector's text loader gives numpy arrays, its binary loader `Vector` objects."""
    found = value.to_numpy() if hasattr(value, "to_numpy") else value
    return np.asarray(found, dtype=np.float32)


class PgUpkeep:
    pool: Any
    name: str
    embedder: Any
    model: Any
    can_embed: bool
    has_vectors: bool
    # PgMemoryStore's (annotations only: a stub here would shadow them in the MRO)
    fetch: Callable[..., Awaitable[list[dict[str, Any]]]]
    run: Callable[..., Awaitable[int]]
    embed: Callable[[list[str]], Awaitable[Any]]
    tell_written: Callable[[str], None]

    async def purge_expired(self, now: datetime | None = None, *,
                            chat_id: str | None = None) -> int:
        """Mark what is past its expiry `expired`, and tell the other Rumis which chats lost
        a line (the same NOTIFY as a forget, sent when this transaction commits): their
        MEMORY.md files drop it too, whichever Rumi's upkeep ran first."""
        when = to_utc(now) if now else utcnow()
        params: list[Any] = [when, when]
        where = ""
        if chat_id is not None:
            where = " AND owner_type = %s AND owner_id = %s"
            params += list(owner(check_chat_id(chat_id)))
        async with self.pool.connection() as conn, conn.transaction():
            cur = await conn.execute(
                "WITH gone AS (UPDATE cto.memory SET status = 'expired', updated_at = %s "  # noqa: S608
                "WHERE status = 'active' AND expires_at IS NOT NULL AND expires_at <= %s"
                f"{where} RETURNING owner_id) "
                "SELECT owner_id, count(*) AS n FROM gone GROUP BY owner_id ORDER BY owner_id",
                params)
            chats = [(str(row["owner_id"]), int(row["n"])) for row in await cur.fetchall()]
            for chat, _ in chats:
                await announce(conn, self.name, chat)
        return sum(n for _, n in chats)

    async def embed_missing(self, chat_id: str, limit: int | None) -> int:
        """Embed up to `limit` (None: all) active memories lacking a current-model vector."""
        chat = check_chat_id(chat_id)
        if not self.can_embed:
            return 0
        done = 0
        while limit is None or done < limit:
            batch = 64 if limit is None else min(64, limit - done)
            before = _BEFORE if self.settings.recall_vector_context else "NULL"
            rows = await self.fetch(
                f"SELECT m.id, m.content, m.key, {before} AS before FROM cto.memory m "  # noqa: S608
                "WHERE m.owner_type = %s AND m.owner_id = %s AND m.status = 'active' "
                "AND (m.embedding IS NULL OR m.embedding_model IS DISTINCT FROM %s) "
                "ORDER BY m.id LIMIT %s",
                (*owner(chat), self.model, batch))
            if not rows:
                break
            matrix = await self.embed([
                embedding_text(r["content"], r["key"], asked_in(r["before"] or ""))
                for r in rows])
            if matrix is None:
                break
            async with self.pool.connection() as conn:
                cur = conn.cursor()
                await cur.executemany(
                    "UPDATE cto.memory SET embedding = %s, embedding_model = %s WHERE id = %s",
                    [(matrix[n], self.model, int(r["id"])) for n, r in enumerate(rows)])
            done += len(rows)
        return done

    async def recount_words(self, chat_id: str) -> dict[str, int]:
        """Rebuild the chat's keyword statistics (`rumi.word_stats`, `rumi.word_totals`) from
        its rows: the repair path if they were ever edited by hand; the write triggers keep
        them right otherwise. Returns {"docs", "words"} after the recount."""
        kind, who = owner(check_chat_id(chat_id))
        delete, insert, totals = schema.recount_sql()
        async with self.pool.connection() as conn, conn.transaction():
            await conn.execute(  # the chat's lock (the triggers take it first, too)
                "INSERT INTO rumi.word_totals AS t (owner_type, owner_id) VALUES (%s, %s) "
                "ON CONFLICT (owner_type, owner_id) DO UPDATE SET docs = t.docs", (kind, who))
            await conn.execute(delete, (kind, who))
            await conn.execute(insert, (kind, who, kind, who))
            await conn.execute(totals, (kind, who, kind, who))
            cur = await conn.execute(
                "SELECT (SELECT docs FROM rumi.word_totals WHERE owner_type = %s AND "
                "owner_id = %s) AS docs, (SELECT count(*) FROM rumi.word_stats WHERE "
                "owner_type = %s AND owner_id = %s) AS words", (kind, who, kind, who))
            row = await cur.fetchone()
        return {"docs": int(row["docs"]), "words": int(row["words"])}

    async def reindex(self, chat_id: str) -> dict[str, int]:
        embedded = await self.embed_missing(chat_id, None)
        await self.recount_words(chat_id)
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
        status["recipe"] = VECTOR_CONTEXT_RECIPE if self.settings.recall_vector_context else None
        return status

    async def integrity_check(self) -> str:
        await self.fetch("SELECT 1 FROM cto.memory LIMIT 1")
        return "ok"

    async def export_jsonl(self, chat_id: str) -> list[str]:
        rows = await self.fetch(
            f"SELECT {COLUMNS} FROM cto.memory WHERE owner_type = %s AND owner_id = %s "  # noqa: S608
            "AND status <> 'deleted' ORDER BY id", owner(check_chat_id(chat_id)))
        return [memory_to_line(to_memory(row)) for row in rows]

    async def import_report(self, chat_id: str, lines: Iterable[str], *,
                            vectors: Mapping[int, np.ndarray] | None = None,
                            keep_source: bool = False) -> ImportReport:
        report = await editing.import_lines(self, check_chat_id(chat_id), lines,
                                            vectors=vectors, keep_source=keep_source)
        self.tell_written(check_chat_id(chat_id))
        return report

    # what `rumi store migrate` carries besides the rows ------------------------------------
    async def forgotten_list(self) -> list[tuple[str, str, datetime]]:
        """Every owner's forgotten texts as (chat, hash, when)."""
        rows = await self.fetch("SELECT owner_id, hash, forgotten_at FROM rumi.forgotten_hashes "
                                "ORDER BY 1, 2")
        return [(r["owner_id"], r["hash"].strip(), to_utc(r["forgotten_at"])) for r in rows]

    async def switch_list(self) -> dict[str, bool]:
        rows = await self.fetch("SELECT chat_id, enabled FROM rumi.memory_switch")
        return {r["chat_id"]: bool(r["enabled"]) for r in rows}

    async def vector_models(self) -> dict[str, int]:
        rows = await self.fetch("SELECT embedding_model AS model, count(*) AS n FROM cto.memory "
                                "WHERE embedding IS NOT NULL GROUP BY 1")
        return {r["model"]: int(r["n"]) for r in rows if r["model"] is not None}

    async def stored_vectors(self, chat_id: str, ids: Iterable[int]) -> dict[int, np.ndarray]:
        rows = await self.fetch(
            "SELECT id, embedding FROM cto.memory WHERE owner_type = %s AND owner_id = %s "
            "AND id = ANY(%s) AND embedding IS NOT NULL",
            (*owner(check_chat_id(chat_id)), [int(i) for i in ids]))
        return {int(r["id"]): _vector(r["embedding"]) for r in rows}

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


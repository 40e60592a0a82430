"""The recall keyword index: each memory indexed together with what was said just before it.

A conversational memory ("Yes, I signed with them yesterday!") rarely repeats the words of the
question it answers; the turns before it do. So every memory is indexed with up to two earlier
memories of the same chat and type, saved within `NEIGHBOUR_GAP_HOURS` of it (same
conversation), as lower-weight columns. The context is captured by triggers at save time from
memories that already exist in that chat — exactly what a live chat knows — never from
anything later. The memory's own `content` is unchanged; only the index sees the context.

The table uses the Porter stemmer ("painted" finds "paint"): on the LoCoMo dev file that alone
is worth ~+2 R@5 / +4 R@10 over the store's plain `memories_fts`.

Cost control: FTS5 computes bm25 for *every* row matching an OR query, so one very common
word would make a 100k-memory chat slow. Each query term's document count is first probed with
a LIMITed scan (never more than `doc_budget` + 1 rows); terms are kept rarest first while their
summed counts stay within `doc_budget` (the rarest is always kept). Dropped words are the
frequent ones, which carry little BM25 weight anyway.
"""

from __future__ import annotations

import logging
import sqlite3

import aiosqlite

from rumi.memory.codec import ts, utcnow
from rumi.memory.query import QueryPlan
from rumi.memory.schema import apply_migrations, migration

log = logging.getLogger(__name__)

TABLE = "recall_fts"
NEIGHBOUR_GAP_HOURS = 3  # documents the constant written into the trigger SQL below
WEIGHTS = (2.0, 1.0, 0.5)  # bm25 columns: content, previous memory, the one before


# Up to two earlier active memories of the same chat and type within 3 hours (julianday · 24).
_CONTEXT_SQL = """
    {row}.id, {row}.content,
    coalesce((SELECT p.content FROM memories p WHERE p.chat_id = {row}.chat_id
              AND p.type = {row}.type AND p.status = 'active' AND p.id < {row}.id
              AND abs(julianday({row}.created_at) - julianday(p.created_at)) * 24 <= 3
              ORDER BY p.id DESC LIMIT 1 OFFSET 0), ''),
    coalesce((SELECT p.content FROM memories p WHERE p.chat_id = {row}.chat_id
              AND p.type = {row}.type AND p.status = 'active' AND p.id < {row}.id
              AND abs(julianday({row}.created_at) - julianday(p.created_at)) * 24 <= 3
              ORDER BY p.id DESC LIMIT 1 OFFSET 1), '')
"""
_INSERT_NEW = ("INSERT INTO recall_fts(rowid, content, ctx1, ctx2) VALUES ("  # noqa: S608
               + _CONTEXT_SQL.format(row="new") + ");")


@migration("010_recall_fts")
async def _m010_recall_fts(conn: aiosqlite.Connection) -> None:
    statements = [
        """CREATE VIRTUAL TABLE recall_fts USING fts5(
            content, ctx1, ctx2, tokenize='porter unicode61 remove_diacritics 2')""",
        "INSERT INTO recall_fts(recall_fts, rank) VALUES ('rank', 'bm25(2.0, 1.0, 0.5)')",
        "CREATE TRIGGER recall_fts_ai AFTER INSERT ON memories WHEN new.status = 'active' "
        "BEGIN " + _INSERT_NEW + " END",
        """CREATE TRIGGER recall_fts_ad AFTER DELETE ON memories BEGIN
            DELETE FROM recall_fts WHERE rowid = old.id; END""",
        """CREATE TRIGGER recall_fts_au_content AFTER UPDATE OF content ON memories
            WHEN new.status = 'active' BEGIN
            UPDATE recall_fts SET content = new.content WHERE rowid = new.id; END""",
        """CREATE TRIGGER recall_fts_au_gone AFTER UPDATE OF status ON memories
            WHEN new.status != 'active' AND old.status = 'active' BEGIN
            DELETE FROM recall_fts WHERE rowid = old.id; END""",
        "CREATE TRIGGER recall_fts_au_back AFTER UPDATE OF status ON memories "  # noqa: S608
        "WHEN new.status = 'active' AND old.status != 'active' BEGIN "
        "DELETE FROM recall_fts WHERE rowid = new.id; " + _INSERT_NEW + " END",
        # Backfill what was stored before this migration, with the same context rule.
        "INSERT INTO recall_fts(rowid, content, ctx1, ctx2) SELECT "  # noqa: S608
        + _CONTEXT_SQL.format(row="m") + " FROM memories m WHERE m.status = 'active' "
        "ORDER BY m.id",
    ]
    for sql in statements:
        await conn.execute(sql)


async def ensure(conn: aiosqlite.Connection, lock: object) -> None:
    """Create the index on a database opened before this module was imported (idempotent)."""
    async with conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (TABLE,)
    ) as cur:
        if await cur.fetchone() is not None:
            return
    async with lock:  # type: ignore[attr-defined]
        await apply_migrations(conn)


async def _doc_count(conn: aiosqlite.Connection, term: str, cap: int) -> int:
    async with conn.execute(
        "SELECT count(*) FROM (SELECT rowid FROM recall_fts WHERE recall_fts MATCH ? LIMIT ?)",
        (f'"{term}"', cap),
    ) as cur:
        row = await cur.fetchone()
    return int(row[0]) if row else 0


async def affordable_terms(
    conn: aiosqlite.Connection, terms: tuple[str, ...], doc_budget: int
) -> list[str]:
    """The query terms to rank with: rarest first while their document counts fit the budget."""
    counted = [(await _doc_count(conn, t, doc_budget + 1), n, t) for n, t in enumerate(terms)]
    counted = [c for c in counted if c[0] > 0]
    counted.sort()
    kept: list[str] = []
    total = 0
    for count, _, term in counted:
        if kept and total + count > doc_budget:
            break
        kept.append(term)
        total += count
    return kept


async def search(
    conn: aiosqlite.Connection, chat_id: str, query: QueryPlan, limit: int,
    doc_budget: int = 2_000,
) -> list[tuple[int, float]]:
    """(memory id, BM25 score > 0) of active, unexpired memories of the chat, best first."""
    if not query.terms or limit <= 0:
        return []
    try:
        terms = await affordable_terms(conn, query.terms, max(1, doc_budget))
        if not terms:
            return []
        async with conn.execute(
            "SELECT f.rowid, f.rank FROM recall_fts f JOIN memories m ON m.id = f.rowid "
            "WHERE recall_fts MATCH ? AND m.chat_id = ? AND m.status = 'active' "
            "AND (m.expires_at IS NULL OR m.expires_at > ?) ORDER BY f.rank LIMIT ?",
            (" OR ".join(f'"{t}"' for t in terms), chat_id, ts(utcnow()), int(limit)),
        ) as cur:
            return [(int(r[0]), -float(r[1])) for r in await cur.fetchall()]
    except sqlite3.OperationalError:
        log.warning("recall keyword search failed for a sanitised query", exc_info=True)
        return []

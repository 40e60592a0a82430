"""The recall keyword index: each memory indexed together with what was said just before it.

A conversational memory ("Yes, I signed with them yesterday!") rarely repeats the words of the
question it answers; the turns before it do. So every memory is indexed with up to two earlier
memories of the same chat and type, saved within `NEIGHBOUR_GAP_HOURS` of it (same
conversation), as lower-weight columns. The context is captured by triggers at save time from
memories that already exist in that chat — exactly what a live chat knows — never from
anything later. The memory's own `content` is unchanged; only the index sees the context.

The tables use the Porter stemmer ("painted" finds "paint"): on the LoCoMo dev file it is worth
+1.7 R@5 / +2.0 R@10, and the context columns +9.4 / +9.0 (`locomo_recall.py --ablate stemming`,
`--ablate context`; docs/benchmarks-history.md).

**One FTS5 table per chat** (`recall_fts_<n>`, listed in `recall_chats`), each kept in sync by
triggers that fire only for that chat's rows. A single shared table leaked between chats: BM25's
IDF and average document length, and the term budget below, were computed over every chat, so a
chat that stored thousands of "python" notes changed — even emptied — another chat's results,
an observable side channel. Per-chat tables make every statistic the chat's own. A chat's table
is created (and backfilled from what is stored, with the same context rule) on its first
recall, so new chats, imports and databases upgraded from the shared table (migration 011
drops it) need nothing else. A chat with no active memories gets no table, and that answer is
remembered until anything is written: by this connection (its `total_changes` moves) or by
another process (`PRAGMA data_version` moves). Every save, import or restore therefore reaches
the very next recall, and an empty chat costs one PRAGMA per recall instead of two lookups.

The same table serves `/search` and `/forget <words>` (`search_text`): it also holds each
memory's `key` and `summary`, and a column filter keeps the two uses apart — recall matches
`content` and the context columns, text search the memory's own `content`, `key` and `summary`.

Cost control: FTS5 computes bm25 for *every* row matching an OR query, so one very common
word would make a 100k-memory chat slow. Each query term's document count is first probed with
a LIMITed scan (never more than `doc_budget` + 1 rows); terms are kept rarest first while their
summed counts stay within `doc_budget` (the rarest is always kept). Dropped words are the
frequent ones, which carry little BM25 weight anyway. When even the rarest word matches more
than `doc_budget` memories, only its newest `doc_budget` matches are ranked (a rowid floor that
FTS5 applies before scoring): at 100k memories such a query took ~250 ms. The probed counts
are kept between recalls while the chat's table is unchanged (`TermCounts`): a chat is asked
about the same words again, and the probes are a third of the keyword half's SQLite work.

That floor does not bound FTS5's IDF pass, which walks the word's whole posting list (~15 ms
for a word in every one of 100k memories). When the word is also in at least half of the
memories from the floor on (the window that would be ranked), BM25 itself gives it no weight
there: its IDF, log((N − n + ½) / (n + ½)), is ≤ 0 and FTS5 clamps it to 10⁻⁶. Fusion then
divides by the best keyword score, which would blow that noise up to a full keyword match. So
when the vector half runs (`rank_common_words=False`), such a query's keyword half ranks
nothing and meaning alone decides; keyword-only recall, which has nothing else, still ranks
the window.

The hits carry their *coverage* of the query (`KeywordHits.coverage`, `query_coverage`): the
counts probed for the budget give each word's idf in this chat for free (plus the table's row
count, which FTS5 keeps), and recall weighs the keyword half by it, so BM25 scores
normalised up from words that are no evidence (names in every memory, another language's
words) do not outrank the cosine. The formula is shared with the PostgreSQL store (`coverage`).
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

import aiosqlite
import numpy as np

from rumi.memory.store.codec import ts, utcnow
from rumi.memory.store.coverage import KeywordHits, query_coverage
from rumi.memory.store.keyword_memory import ChatKeywords, KeywordMemory
from rumi.memory.store.ports import QueryTerms
from rumi.memory.store.schema import FTS_TOKENIZER, RECALL_TRIGGERS, apply_migrations
from rumi.memory.store.schema import RECALL_CONTEXT_SQL as _CONTEXT_SQL
from rumi.memory.store.schema import RECALL_REGISTRY as REGISTRY

log = logging.getLogger(__name__)

NEIGHBOUR_GAP_HOURS = 3  # documents the constant written into the trigger SQL below
_COLUMNS = "rowid, content, key, summary, ctx1, ctx2"
# Recall matches the conversation columns only; `/search` (`search_text`) the memory's own.
RECALL_COLUMNS = "{content ctx1 ctx2}"
TOKENIZER = f"porter {FTS_TOKENIZER}"
_RECALL_BM25 = "bm25(2.0, 0.0, 0.0, 1.0, 0.5)"
RECALL_BM25 = _RECALL_BM25   # the translations table (`translations`) ranks alike
TEXT_COLUMNS = "{content key summary}"
_TEXT_BM25 = "1.0, 1.0, 0.5, 0.0, 0.0"
_AVERAGES_ROWID = 1   # FTS5_AVERAGES_ROWID in SQLite's fts5_index.c
_STRUCTURE_ROWID = 10   # FTS5_STRUCTURE_ROWID



def table_name(n: int) -> str:
    return f"recall_fts_{int(n)}"


def _chat_statements(table: str, chat: str) -> tuple[dict[str, str], str]:
    """({name: CREATE statement} of one chat's table and its triggers, the statement setting
    its rank); `chat` is a validated id, quoted as a literal. SQLite keeps each CREATE
    statement verbatim in `sqlite_master`, which is how `_is_current` recognises them."""
    lit = "'" + chat.replace("'", "''") + "'"
    insert_new = (f"INSERT INTO {table}({_COLUMNS}) VALUES ("  # noqa: S608
                  + _CONTEXT_SQL.format(row="new") + ");")
    triggers = {
        "ai": f"CREATE TRIGGER {table}_ai AFTER INSERT ON memories "
              f"WHEN new.chat_id = {lit} AND new.status = 'active' BEGIN {insert_new} END",
        "ad": f"CREATE TRIGGER {table}_ad AFTER DELETE ON memories WHEN old.chat_id = {lit} "  # noqa: S608
              f"BEGIN DELETE FROM {table} WHERE rowid = old.id; END",
        "au_content": f"CREATE TRIGGER {table}_au_content AFTER UPDATE OF content, key, "  # noqa: S608
                      f"summary ON memories WHEN new.chat_id = {lit} AND new.status = 'active' "
                      f"BEGIN UPDATE {table} SET content = new.content, "
                      "key = coalesce(new.key, ''), summary = coalesce(new.summary, '') "
                      "WHERE rowid = new.id; END",
        "au_gone": f"CREATE TRIGGER {table}_au_gone AFTER UPDATE OF status ON memories "  # noqa: S608
                   f"WHEN old.chat_id = {lit} AND new.status != 'active' "
                   f"AND old.status = 'active' BEGIN DELETE FROM {table} WHERE rowid = old.id; END",
        "au_back": f"CREATE TRIGGER {table}_au_back AFTER UPDATE OF status ON memories "  # noqa: S608
                   f"WHEN new.chat_id = {lit} AND new.status = 'active' "
                   f"AND old.status != 'active' BEGIN DELETE FROM {table} WHERE rowid = new.id; "
                   f"{insert_new} END",
    }
    assert tuple(triggers) == RECALL_TRIGGERS
    created = {table: f"""CREATE VIRTUAL TABLE {table} USING fts5(
            content, key, summary, ctx1, ctx2, tokenize='{TOKENIZER}')"""}
    created.update((f"{table}_{suffix}", sql) for suffix, sql in triggers.items())
    rank = f"INSERT INTO {table}({table}, rank) VALUES ('rank', '{_RECALL_BM25}')"  # noqa: S608
    return created, rank


async def ensure(conn: aiosqlite.Connection, lock: asyncio.Lock) -> None:
    """Create the registry on a database opened before this module was imported (idempotent)."""
    async with conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (REGISTRY,)
    ) as cur:
        if await cur.fetchone() is not None:
            return
    async with lock:
        await apply_migrations(conn)


async def _is_current(conn: aiosqlite.Connection, table: str, chat: str) -> bool:
    """Whether the chat's table, triggers and bm25 weights are exactly this version's. A
    table dropped or changed by hand, or rebuilt by an older Rumi still running beside a
    migration (without the `key`/`summary` columns `/search` matches), is rebuilt instead of
    failing every search of the chat."""
    expected, _ = _chat_statements(table, chat)
    marks = ",".join("?" * len(expected))
    found = await conn.execute_fetchall(
        f"SELECT name, sql FROM sqlite_master WHERE name IN ({marks})", tuple(expected))  # noqa: S608
    if dict(found) != expected:
        return False
    rank = await conn.execute_fetchall(f"SELECT v FROM {table}_config WHERE k = 'rank'")  # noqa: S608
    return [tuple(r) for r in rank] == [(_RECALL_BM25,)]


async def _registered(conn: aiosqlite.Connection, chat: str) -> int | None:
    rows = await conn.execute_fetchall(f"SELECT n FROM {REGISTRY} WHERE chat_id = ?", (chat,))  # noqa: S608
    return int(rows[0][0]) if rows else None


async def _has_active(conn: aiosqlite.Connection, chat: str) -> tuple[bool, int]:
    """(whether the chat has an active memory, the data_version it was read at): one snapshot,
    so a commit by another process after this read always changes the version."""
    [row] = await conn.execute_fetchall(
        "SELECT EXISTS (SELECT 1 FROM memories WHERE chat_id = ? AND status = 'active'), "
        "(SELECT data_version FROM pragma_data_version)", (chat,))
    return bool(row[0]), int(row[1])


async def _data_version(conn: aiosqlite.Connection) -> int:
    [row] = await conn.execute_fetchall("PRAGMA data_version")
    return int(row[0])


async def optimize_registered(conn: Any, registry: str, name_of: Callable[[int], str],
                              chat: str | None) -> None:
    """Merge the FTS5 segments of the per-chat tables listed in `registry` (the chat's, or
    every chat's when None), so a deleted row's words leave the file: a delete only adds a
    tombstone until a merge rewrites the segment (`editing.purge`)."""
    where, params = ("WHERE chat_id = ?", (chat,)) if chat is not None else ("", ())
    rows = await conn.execute_fetchall(f"SELECT n FROM {registry} {where}", params)  # noqa: S608
    for row in rows:
        table = name_of(int(row[0]))
        exists = await conn.execute_fetchall(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (table,))
        if exists:
            await conn.execute(f"INSERT INTO {table}({table}) VALUES ('optimize')")  # noqa: S608


async def recreate(conn: aiosqlite.Connection, table: str, triggers: Sequence[str],
                   created: Mapping[str, str], rank: str) -> None:
    """Inside a write transaction: drop whatever is left of the chat table's older or
    half-dropped definition (its triggers, then it), create it anew and set its rank."""
    for name in triggers:
        await conn.execute(f"DROP TRIGGER IF EXISTS {table}_{name}")
    await conn.execute(f"DROP TABLE IF EXISTS {table}")
    for sql in created.values():
        await conn.execute(sql)
    await conn.execute(rank)


async def _build(conn: aiosqlite.Connection, chat: str, n: int | None) -> str:
    """Inside a write transaction: register the chat (unless `n`), create and backfill its table."""
    if n is None:
        async with conn.execute(
            f"INSERT INTO {REGISTRY}(chat_id, created_at) VALUES (?, ?) RETURNING n",  # noqa: S608
            (chat, ts(utcnow())),
        ) as cur:
            row = await cur.fetchone()
        assert row is not None
        n = int(row[0])
    table = table_name(n)
    await recreate(conn, table, RECALL_TRIGGERS, *_chat_statements(table, chat))
    await conn.execute(
        f"INSERT INTO {table}({_COLUMNS}) SELECT "  # noqa: S608
        + _CONTEXT_SQL.format(row="m")
        + " FROM memories m WHERE m.chat_id = ? AND m.status = 'active' ORDER BY m.id",
        (chat,),
    )
    log.info("built recall index %s for chat %s", table, chat)
    return table


class RecallIndex:
    """Finds (creating on first use) each chat's table; one per store connection."""

    def __init__(self, conn: aiosqlite.Connection, lock: asyncio.Lock,
                 memory: KeywordMemory | None = None) -> None:
        self.conn = conn
        self.lock = lock
        self._tables: dict[str, str] = {}
        # chat → (total_changes, data_version) when it was found with nothing to index
        self._empty: dict[str, tuple[int, int]] = {}
        self._ready = False
        self.term_counts = TermCounts(conn, lock)
        # `memory.recall_keyword_engine = "memory"`: the same BM25 from arrays (keyword_memory)
        self.memory = memory
        self._rows: dict[str, int] = {}   # chat → its table's rows at its last FTS5 search

    async def _still_empty(self, chat: str) -> bool:
        """True when the chat had nothing to index and nothing was written since: not by this
        connection (`total_changes`), not by another process (`data_version`)."""
        stamp = self._empty.get(chat)
        if stamp is None or stamp[0] != self.conn.total_changes:
            return False
        return stamp[1] == await _data_version(self.conn)

    async def table(self, chat: str) -> str | None:
        """The chat's table name; None when the chat has nothing to index."""
        cached = self._tables.get(chat)
        if cached is not None:
            return cached
        if await self._still_empty(chat):
            return None
        self._empty.pop(chat, None)
        changes = self.conn.total_changes  # before the reads: a write during them is seen
        if not self._ready:
            await ensure(self.conn, self.lock)
            self._ready = True
        n = await _registered(self.conn, chat)
        if n is not None and await _is_current(self.conn, table_name(n), chat):
            self._tables[chat] = table_name(n)
            return self._tables[chat]
        active, version = await _has_active(self.conn, chat)
        if not active:
            self._empty[chat] = (changes, version)
            return None
        async with self.lock:
            await self.conn.execute("BEGIN IMMEDIATE")
            try:
                n = await _registered(self.conn, chat)  # another process may have won
                if n is not None and await _is_current(self.conn, table_name(n), chat):
                    table = table_name(n)
                else:
                    table = await _build(self.conn, chat, n)
                    self.term_counts.forget(chat)
            except BaseException:
                await self.conn.execute("ROLLBACK")
                raise
            await self.conn.execute("COMMIT")
        self._tables[chat] = table
        return table

    async def prepare(self, chat: str) -> bool:
        """Read the chat's keyword arrays now, when the memory engine will rank it (a warm-up,
        so the first recall does not fall back to FTS5); whether they are held."""
        if self.memory is None:
            return False
        table = await self.table(chat)
        return table is not None and await self.memory.ready(chat, table)

    def tokenize_ahead(self, words: Sequence[str]) -> None:
        """The memory engine's tokens of a coming query's words, made now and cached (one
        batch on SQLite's tokenizer table; blocking: the prefetch calls it in a worker
        thread, so the search does not do it on the event loop)."""
        if self.memory is not None:
            self.memory.tokens.words(words)

    async def search(
        self, chat: str, query: QueryTerms, limit: int, doc_budget: int = 2_000,
        *, rank_common_words: bool = True,
    ) -> list[tuple[int, float]]:
        """(memory id, BM25 score > 0) of active, unexpired memories of the chat, best first.

        `rank_common_words=False` (the vector half runs too) returns nothing when even the
        rarest word is too common for the budget and in at least half of the ranked window."""
        if not query.terms or limit <= 0:
            return []
        try:
            table = await self.table(chat)
            if table is None:
                return []
            budget = max(1, doc_budget)
            if self._arrays_fit(chat, query):
                found = await self._search_held(chat, table, query, limit, budget,
                                                rank_common_words)
                if found is not None:
                    return found
                view = await self.memory.view(chat, table)  # type: ignore[union-attr]
                if view is not None:
                    ranked = self._rank_view(view, query, budget, rank_common_words)
                    if isinstance(ranked, KeywordHits):
                        return ranked
                    ids, scores, coverage = ranked
                    hits, _ = await _live(self.conn, chat, ids, scores, limit)
                    return KeywordHits(hits, coverage=coverage)
            counts, size = await self.term_counts.counts(chat, table, query.terms, budget + 1)
            self._rows[chat] = size
            stand_in = await self._stand_ins(chat, table, query, counts, budget + 1)
            words = {w: c for t, c in zip(query.terms, counts, strict=True)
                     for w, c in (stand_in.get(t) or [(t, c)])}
            terms, matched = _affordable(tuple(words), list(words.values()), budget)
            if not terms:
                return KeywordHits(coverage=0.0)
            coverage = _coverage(query, counts, stand_in, set(terms), size)
            expr = f"{RECALL_COLUMNS} : (" + " OR ".join(f'"{t}"' for t in terms) + ")"
            floor = 0
            if matched > budget:
                window = await _newest_window(self.conn, table, expr, budget)
                if window is not None:
                    floor, rows_from_floor = window
                    if not rank_common_words and 2 * budget >= rows_from_floor:
                        return KeywordHits(coverage=0.0)
            return KeywordHits(await _ranked(self.conn, table, chat, expr, "f.rank", limit,
                                             floor), coverage=coverage)
        except sqlite3.OperationalError:
            self._tables.pop(chat, None)  # e.g. dropped by hand: found or rebuilt next time
            self.term_counts.forget(chat)
            if self.memory is not None:
                self.memory.forget(chat)
            log.warning("recall keyword search failed for chat %s", chat, exc_info=True)
            return []

    def _arrays_fit(self, chat: str, query: QueryTerms) -> bool:
        """Whether the memory engine may rank this query: it is on, the chat is not known to
        be small, and every word of the query (and its alternatives) is one FTS5 token."""
        memory = self.memory
        if memory is None or self._rows.get(chat, memory.min_rows) < memory.min_rows:
            return False   # a small chat (as its last search found it): FTS5, no stamp to read
        alternatives = getattr(query, "alternatives", None) or {}
        words = list(query.terms) + [a for t in query.terms for a in alternatives.get(t, ())]
        return all(len(tokens) == 1 for tokens in memory.tokens.words(words).values())

    async def _search_held(self, chat: str, table: str, query: QueryTerms, limit: int,
                           budget: int, rank_common_words: bool) -> KeywordHits | None:
        """Rank on the arrays as last checked, and check they are still current in the same
        statement that re-reads the ranked ids; None when they were not (or not held)."""
        memory = self.memory
        held = memory.peek(chat, table) if memory is not None else None
        if memory is None or held is None:
            return None
        ranked = self._rank_view(held, query, budget, rank_common_words)
        check = (memory.state_sql(table), (chat, chat))
        if isinstance(ranked, KeywordHits):
            [state] = await self.conn.execute_fetchall(f"SELECT {check[0]}", check[1])  # noqa: S608
            return ranked if memory.is_current(held, state) else None
        ids, scores, coverage = ranked
        hits, state = await _live(self.conn, chat, ids, scores, limit, check)
        return KeywordHits(hits, coverage=coverage) if memory.is_current(held, state) else None

    def _rank_view(self, view: ChatKeywords, query: QueryTerms, budget: int,
                   rank_common_words: bool
                   ) -> KeywordHits | tuple[np.ndarray, np.ndarray, float]:
        """`search` on the chat's arrays: the same budget, coverage, window and BM25. Either
        the answer (nothing to rank) or (ranked ids, their scores, the coverage)."""
        tokens = self.memory.tokens  # type: ignore[union-attr]
        token = {w: tokens.word(w)[0] for w in query.terms}
        cap = budget + 1
        counts = [min(cap, view.count(token[t])) for t in query.terms]
        alternatives = getattr(query, "alternatives", None) or {}
        stand_in: dict[str, list[tuple[str, int]]] = {}
        for t, c in zip(query.terms, counts, strict=True):
            if c or not alternatives.get(t):
                continue
            found = [(a, min(cap, view.count(tokens.word(a)[0]))) for a in alternatives[t]]
            found = [(a, n) for a, n in found if n]
            if found:
                stand_in[t] = found
                token.update((a, tokens.word(a)[0]) for a, _ in found)
        words = {w: c for t, c in zip(query.terms, counts, strict=True)
                 for w, c in (stand_in.get(t) or [(t, c)])}
        terms, matched = _affordable(tuple(words), list(words.values()), budget)
        if not terms:
            return KeywordHits(coverage=0.0)
        coverage = _coverage(query, counts, stand_in, set(terms), view.rows)
        phrases = [token[t] for t in terms]
        floor = 0
        if matched > budget:
            matches = view.matches(phrases)
            if matches.size >= budget:
                floor = int(matches[-budget])
                if not rank_common_words and 2 * budget >= view.rows_from(floor,
                                                                          2 * budget + 1):
                    return KeywordHits(coverage=0.0)
        ids, scores = view.rank(phrases, floor)
        return ids, scores, coverage

    async def _stand_ins(self, chat: str, table: str, query: QueryTerms, counts: list[int],
                         cap: int) -> dict[str, list[tuple[str, int]]]:
        """term → [(alternative, its count)] for the query's terms the chat never said whose
        alternatives (`QueryTerms.alternatives`: the same word in the other language) it
        did; one more probe, only when such a term has alternatives."""
        alternatives = getattr(query, "alternatives", None) or {}
        unknown = [t for t, c in zip(query.terms, counts, strict=True)
                   if not c and alternatives.get(t)]
        probe = list(dict.fromkeys(a for t in unknown for a in alternatives[t]
                                   if a not in query.terms))
        if not probe:
            return {}
        found, _ = await self.term_counts.counts(chat, table, tuple(probe), cap)
        count = dict(zip(probe, found, strict=True))
        out = {t: [(a, count[a]) for a in alternatives[t] if count.get(a)] for t in unknown}
        return {t: pairs for t, pairs in out.items() if pairs}

    async def search_text(
        self, chat: str, expr: str | None, limit: int
    ) -> list[tuple[int, float]]:
        """(memory id, BM25 score > 0) of active, unexpired memories of the chat whose content,
        key or summary match `expr`, best first — for `/search` and `/forget`.

        Ranked on the chat's own table, so neither the order nor the cost depends on what
        other chats stored (the store's shared `memories_fts` would mix their statistics in).
        `expr` comes from `fts.any_of` / `fts.all_of` (quoted word tokens), so FTS5 syntax in
        what a person typed stays text.
        """
        if not expr or limit <= 0:
            return []
        expr = f"{TEXT_COLUMNS} : ({expr})"
        try:
            table = await self.table(chat)
            if table is None:
                return []
            return await _ranked(self.conn, table, chat, expr, f"bm25({table}, {_TEXT_BM25})",
                                 limit)
        except sqlite3.OperationalError:
            self._tables.pop(chat, None)
            log.warning("text search failed for chat %s", chat, exc_info=True)
            return []


def _coverage(query: QueryTerms, counts: list[int], stand_in: dict[str, list[tuple[str, int]]],
              kept: set[str], size: int) -> float:
    return query_coverage(
        [min((c for _, c in stand_in[t]), default=0) if t in stand_in else c
         for t, c in zip(query.terms, counts, strict=True)],
        [any(w in kept for w, _ in stand_in.get(t) or [(t, 0)]) for t in query.terms],
        size)


async def _live(conn: aiosqlite.Connection, chat: str, ids: np.ndarray, scores: np.ndarray,
                limit: int, check: tuple[str, tuple[object, ...]] | None = None,
                ) -> tuple[list[tuple[int, float]], tuple[object, ...]]:
    """The first `limit` of `ids` (ranked) that are still the chat's active, unexpired
    memories, with their scores: the filter FTS5's join with `memories` applied. `check`
    (columns, parameters) is read in the first statement too; its values come back."""
    out: list[tuple[int, float]] = []
    state: tuple[object, ...] = ()
    start = 0
    while not start or (len(out) < limit and start < ids.size):
        chunk = [int(i) for i in ids[start:start + limit + 16]]
        marks = ",".join("?" * len(chunk))
        extra, params = check if check is not None and not start else ("NULL", ())
        [row] = await conn.execute_fetchall(
            f"SELECT (SELECT group_concat(id) FROM memories WHERE id IN ({marks}) "  # noqa: S608
            "AND +chat_id = ? AND +status = 'active' "
            f"AND (+expires_at IS NULL OR +expires_at > ?)), {extra}",
            (*chunk, chat, ts(utcnow()), *params))
        if not start:
            state = tuple(row[1:])
        live = {int(i) for i in row[0].split(",")} if row[0] else set()
        out += [(i, float(s)) for i, s in zip(chunk, scores[start:start + len(chunk)],
                                               strict=True) if i in live]
        start += max(1, len(chunk))
    return out[:limit], state


async def _ranked(
    conn: aiosqlite.Connection, table: str, chat: str, expr: str, score: str, limit: int,
    floor: int = 0,
) -> list[tuple[int, float]]:
    """(id, BM25 > 0) of the chat's active, unexpired rows matching `expr` at or above rowid
    `floor`, best first; `score` is the FTS5 rank expression (lower is better)."""
    rows = await conn.execute_fetchall(
        f"SELECT f.rowid, {score} AS score FROM {table} f "  # noqa: S608
        f"JOIN memories m ON m.id = f.rowid WHERE {table} MATCH ? AND f.rowid >= ? "
        "AND m.chat_id = ? AND m.status = 'active' "
        "AND (m.expires_at IS NULL OR m.expires_at > ?) ORDER BY score LIMIT ?",
        (expr, floor, chat, ts(utcnow()), int(limit)))
    return [(int(r[0]), -float(r[1])) for r in rows]


class Probe(NamedTuple):
    """What one `_doc_counts` statement read: each term's capped document count, the
    table's row total, and the stamp of the table's state they were read at."""

    counts: list[int]
    total: int
    stamp: tuple[object, ...]


async def _doc_counts(
    conn: aiosqlite.Connection, table: str, terms: tuple[str, ...], cap: int
) -> Probe:
    """Each term's document count, capped at `cap`, the table's row count and its stamp,
    in one statement: one trip to SQLite's thread instead of one per term (a query has up
    to `fts.MAX_TERMS` of them).

    The row count is the one FTS5 keeps for BM25 itself (`_row_total`), read in O(1): a
    `count(*)` of the table walked every row of the chat on every recall (~2 ms at 100k).
    The stamp (`TermCounts`) is read in the same statement, so it describes the very
    snapshot the counts come from."""
    probe = (f"(SELECT count(*) FROM (SELECT rowid FROM {table} "  # noqa: S608
             f"WHERE {table} MATCH ? LIMIT {int(cap)}))")
    averages = f"(SELECT block FROM {table}_data WHERE id = {_AVERAGES_ROWID})"  # noqa: S608
    structure = f"(SELECT block FROM {table}_data WHERE id = {_STRUCTURE_ROWID})"  # noqa: S608
    version = "(SELECT schema_version FROM pragma_schema_version)"
    rows = await conn.execute_fetchall(
        "SELECT " + ", ".join([averages, structure, version] + [probe] * len(terms)),
        tuple(f'{RECALL_COLUMNS} : "{t}"' for t in terms))
    [row] = rows
    return Probe([int(n) for n in row[3:]], _row_total(row[0]), (row[0], row[1], row[2]))


class TermCounts:
    """Each chat's term document counts, kept between recalls while its table is unchanged.

    The counts probe (`_doc_counts`) is a third of the keyword half's SQLite work, and a
    chat is asked about the same words again. A count is reused only while the table's
    *stamp* is the one it was read at: FTS5's averages record (row and token totals), its
    structure record (whose write counter grows with every committed change to the index:
    a save, an edit, a forget, a status change) and SQLite's schema version (a table
    dropped and rebuilt). Every statement that probes also reads the stamp, and a changed
    stamp drops the chat's counts. Uncommitted rows of this connection's own open
    transaction are visible to its queries without moving the stamp, so nothing is read
    from or written to the cache while the store's write lock is held (every transaction
    on the connection holds it from its BEGIN to its COMMIT).
    """

    CHATS = 64
    TERMS = 4_096

    def __init__(self, conn: aiosqlite.Connection, lock: asyncio.Lock) -> None:
        self.conn = conn
        self.lock = lock
        self._by_table: OrderedDict[tuple[str, str], tuple[tuple[object, ...],
                                                           dict[tuple[str, int], int]]] = (
            OrderedDict())

    def forget(self, chat: str) -> None:
        for key in [k for k in self._by_table if k[0] == chat]:
            del self._by_table[key]

    async def counts(self, chat: str, table: str, terms: tuple[str, ...],
                     cap: int) -> tuple[list[int], int]:
        """(each term's document count capped at `cap`, the table's row total)."""
        if self.lock.locked():   # a transaction may be open: its rows count, uncommitted
            probe = await _doc_counts(self.conn, table, terms, cap)
            return probe.counts, probe.total
        key = (chat, table)
        kept = self._by_table.get(key)
        known = kept[1] if kept is not None else {}
        missing = tuple(t for t in dict.fromkeys(terms) if (t, cap) not in known)
        probe = await _doc_counts(self.conn, table, missing, cap)
        if kept is None or kept[0] != probe.stamp:
            if len(missing) < len(set(terms)):   # what was kept is stale: count them all
                missing = tuple(dict.fromkeys(terms))
                probe = await _doc_counts(self.conn, table, missing, cap)
            known = {}
        found = dict(zip(missing, probe.counts, strict=True))
        if not self.lock.locked():   # still no transaction: nothing uncommitted was read
            if len(known) + len(found) > self.TERMS:
                known = {}
            known.update(((t, cap), n) for t, n in found.items())
            self._by_table[key] = (probe.stamp, known)
            self._by_table.move_to_end(key)
            while len(self._by_table) > self.CHATS:
                self._by_table.popitem(last=False)
        return [found[t] if t in found else known[(t, cap)] for t in terms], probe.total


def _row_total(record: bytes | None) -> int:
    """The row count at the head of FTS5's averages record (`<table>_data` row 1: a varint
    of the rows, then one of each column's tokens), which FTS5 updates as rows come and go
    and reads for BM25's IDF. SQLite's varint: 7 bits a byte, high bit "more", a ninth byte
    whole. Inside a write transaction of this same connection it lags the uncommitted rows
    (FTS5 writes it at commit): recall only weighs words by it. None (no row yet): 0."""
    if not record:
        return 0
    value = 0
    for n, byte in enumerate(record[:9]):
        if n == 8:
            return (value << 8) | byte
        value = (value << 7) | (byte & 0x7F)
        if not byte & 0x80:
            return value
    return value


def _affordable(
    terms: tuple[str, ...], counts: list[int], doc_budget: int
) -> tuple[list[str], int]:
    """Terms kept (rarest first) and their summed document counts (> budget only when the
    rarest term alone exceeds it; counts are capped at budget + 1)."""
    if not terms:
        return [], 0
    counted = sorted((c, n, t) for n, (c, t) in enumerate(zip(counts, terms, strict=True)) if c)
    kept: list[str] = []
    total = 0
    for count, _, term in counted:
        if kept and total + count > doc_budget:
            break
        kept.append(term)
        total += count
    return kept, total


async def _newest_window(
    conn: aiosqlite.Connection, table: str, expr: str, budget: int
) -> tuple[int, int] | None:
    """(rowid of the `budget`-th newest match, rows of the table from it on, counted up to
    2·`budget` + 1). Ranking only rows at or above that floor bounds the bm25 work when one
    (rarest, still too common) word matches more than the budget; the row count says how
    common the word is in that window."""
    rows = await conn.execute_fetchall(
        f"SELECT w.floor, (SELECT count(*) FROM (SELECT 1 FROM {table}_docsize d "  # noqa: S608
        f"WHERE d.id >= w.floor LIMIT {2 * int(budget) + 1})) FROM (SELECT rowid AS floor "
        f"FROM {table} WHERE {table} MATCH ? ORDER BY rowid DESC LIMIT 1 OFFSET ?) w",
        (expr, budget - 1))
    return (int(rows[0][0]), int(rows[0][1])) if rows else None


async def rank_table(conn: aiosqlite.Connection, table: str, chat: str, query: QueryTerms,
                     limit: int, doc_budget: int, rank_common_words: bool) -> KeywordHits:
    """`RecallIndex.search`'s FTS5 path (budget, coverage, newest window, bm25) on another
    table of the same columns and rank, without word-list stand-ins: the chat's memories
    as machine-translated (`translations`), searched with a question's own words."""
    if not query.terms or limit <= 0:
        return KeywordHits(coverage=0.0)
    budget = max(1, doc_budget)
    probe = await _doc_counts(conn, table, tuple(query.terms), budget + 1)
    terms, matched = _affordable(tuple(query.terms), probe.counts, budget)
    if not terms:
        return KeywordHits(coverage=0.0)
    coverage = _coverage(query, probe.counts, {}, set(terms), probe.total)
    expr = f"{RECALL_COLUMNS} : (" + " OR ".join(f'"{t}"' for t in terms) + ")"
    floor = 0
    if matched > budget:
        window = await _newest_window(conn, table, expr, budget)
        if window is not None:
            floor, rows_from_floor = window
            if not rank_common_words and 2 * budget >= rows_from_floor:
                return KeywordHits(coverage=0.0)
    return KeywordHits(await _ranked(conn, table, chat, expr, "f.rank", limit, floor),
                       coverage=coverage)

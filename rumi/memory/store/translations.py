"""Each memory machine-translated into the chat's other language, searched by a question's
own words (issue 35: a Spanish question about an English chat, and the reverse).

Recall already translates such a question into the chat's language; the memories' side is
this module: every memory's translation (`memory_translations`, migration 018) is indexed in a
keyword table of its chat (`recall_tr_<n>`, listed in `translation_chats`) with the same
tokenizer, columns and bm25 weights as the chat's recall table (`recall_index`): `content` the
memory's translation, `ctx1` / `ctx2` the translations of the two earlier memories the recall
index gives it as context. A table of its own, not a column of the chat's table: FTS5's bm25
normalises a row's length over all its columns, so a translation column moved every English
question's ranking (English R@10 −0.4, docs/benchmarks.md "Step 10").

Derived data, never the only copy of anything: export leaves it out, import and a transfer
between stores translate again. Nothing a person removes survives in it: migration 018's
triggers delete a memory's translation in the same transaction as the memory's delete (forget,
redaction, expiry, a chat's deletion), the edit of its text, or its leaving 'active'; this
table's own triggers take its row out of the chat's keyword table and blank it where it
was a later memory's context. The translator (`recall.memory_translation`) writes a
translation only while the memory still has the content it read (`content_hash`), so an edit
during the translation cannot leave the old text's translation behind.
"""

from __future__ import annotations

import asyncio
import logging
import re
import sqlite3
import threading
from collections.abc import Callable, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Any

import aiosqlite

from rumi.memory.store.codec import check_chat_id, ts, utcnow
from rumi.memory.store.coverage import KeywordHits
from rumi.memory.store.ports import QueryTerms
from rumi.memory.store.recall_index import (
    RECALL_BM25,
    TOKENIZER,
    optimize_registered,
    rank_table,
    recreate,
)
from rumi.memory.store.schema import TRANSLATION_REGISTRY as REGISTRY
from rumi.memory.store.schema import TRANSLATIONS, apply_migrations

log = logging.getLogger(__name__)

TRIGGERS = ("ai", "ad")
# the recall index's context rule (schema.RECALL_CONTEXT_SQL): the earlier active memory of
# the same chat and type within 3 hours, `OFFSET` 0 or 1
_NEIGHBOUR = """(SELECT p.id FROM memories p WHERE p.chat_id = m.chat_id AND p.type = m.type
    AND p.status = 'active' AND p.id < m.id
    AND abs(julianday(m.created_at) - julianday(p.created_at)) * 24 <= 3
    ORDER BY p.id DESC LIMIT 1 OFFSET {n})"""


@dataclass(frozen=True)
class Untranslated:
    """An active memory without a translation: what the translator reads."""

    id: int
    content: str
    content_hash: str


@dataclass(frozen=True)
class Translated:
    """A memory's translation into `lang`, made from the content whose hash is `content_hash`."""

    id: int
    content_hash: str
    lang: str
    text: str


def table_name(n: int) -> str:
    return f"recall_tr_{int(n)}"


# Spanish translations are indexed as Snowball's Spanish stems (porter, the chat's tokenizer,
# stems English only: "donó" / "donación" / "donar" never met), and a Spanish question's words
# are stemmed alike before they search them (docs/benchmarks.md, "Spanish stems").
STEM_FUNCTION = "rumi_es_stems"
_WORD = re.compile(r"[^\W\d_]+|\d+", re.UNICODE)
_local = threading.local()
_STEMS_KEPT = 50_000   # words whose stems a thread remembers (~5 MiB at most)


def spanish_stems(text: str) -> str:
    """`text`'s words as Snowball's pure-Python Spanish stems (lowercased, in order). Imports
    `snowballstemmer` at its first call (~30 ms): call it from a worker thread (the SQLite
    function runs in aiosqlite's; recall's question through `asyncio.to_thread`)."""
    stems: dict[str, str] | None = getattr(_local, "stems", None)
    if stems is None or len(stems) > _STEMS_KEPT:   # a stemmer keeps state: one per thread
        from snowballstemmer.spanish_stemmer import SpanishStemmer

        _local.stem = SpanishStemmer().stemWord
        stems = _local.stems = {}
    out = []
    for word in _WORD.findall((text or "").lower()):
        found = stems.get(word)
        if found is None:   # a translation is stemmed again as a later one's context
            found = stems[word] = word if word.isdigit() else _local.stem(word)
        out.append(found)
    return " ".join(out)


def _indexed(value: str, lang: str) -> str:
    """SQL for what the keyword table holds of a translation `value` in `lang`."""
    return f"(CASE WHEN {lang} = 'es' THEN {STEM_FUNCTION}({value}) ELSE {value} END)"


def _chat_statements(table: str, chat: str) -> tuple[dict[str, str], str]:
    """({name: CREATE statement} of the chat's translations table and its two triggers, the
    statement setting its rank). A translation's row carries its neighbours' translations
    as context; when a neighbour's translation comes or goes, the rows it is context of are
    filled or blanked (its words must not outlive it there)."""
    lit = "'" + chat.replace("'", "''") + "'"

    def text_of(column: str) -> str:
        return (f"coalesce((SELECT {_indexed('t.text', 't.lang')} FROM {TRANSLATIONS} t "  # noqa: S608
                f"WHERE t.memory_id = new.{column}), '')")

    def context(value: str, row: str) -> str:
        return "".join(
            f"UPDATE {table} SET {c} = {value} WHERE rowid IN (SELECT memory_id "  # noqa: S608
            f"FROM {TRANSLATIONS} WHERE {c}_id = {row}.memory_id AND chat_id = {lit}); "
            for c in ("ctx1", "ctx2"))

    triggers = {
        "ai": f"CREATE TRIGGER {table}_ai AFTER INSERT ON {TRANSLATIONS} "  # noqa: S608
              f"WHEN new.chat_id = {lit} BEGIN "
              f"INSERT INTO {table}(rowid, content, key, summary, ctx1, ctx2) VALUES "
              f"(new.memory_id, {_indexed('new.text', 'new.lang')}, '', '', "
              f"{text_of('ctx1_id')}, {text_of('ctx2_id')}); "
              f"{context(_indexed('new.text', 'new.lang'), 'new')}END",
        "ad": f"CREATE TRIGGER {table}_ad AFTER DELETE ON {TRANSLATIONS} "  # noqa: S608
              f"WHEN old.chat_id = {lit} BEGIN "
              f"DELETE FROM {table} WHERE rowid = old.memory_id; {context(repr(''), 'old')}END",
    }
    assert tuple(triggers) == TRIGGERS
    created = {table: f"CREATE VIRTUAL TABLE {table} USING fts5(content, key, summary, ctx1, "
                      f"ctx2, tokenize='{TOKENIZER}')"}
    created.update((f"{table}_{suffix}", sql) for suffix, sql in triggers.items())
    rank = f"INSERT INTO {table}({table}, rank) VALUES ('rank', '{RECALL_BM25}')"  # noqa: S608
    return created, rank


async def _is_current(conn: aiosqlite.Connection, table: str, chat: str) -> bool:
    expected, _ = _chat_statements(table, chat)
    marks = ",".join("?" * len(expected))
    found = await conn.execute_fetchall(
        f"SELECT name, sql FROM sqlite_master WHERE name IN ({marks})", tuple(expected))  # noqa: S608
    return dict(found) == expected


async def _build(conn: aiosqlite.Connection, chat: str) -> str:
    """Inside a write transaction: register the chat, (re)create and backfill its table."""
    rows = await conn.execute_fetchall(f"SELECT n FROM {REGISTRY} WHERE chat_id = ?", (chat,))  # noqa: S608
    if rows:
        n = int(rows[0][0])
    else:
        [[n]] = await conn.execute_fetchall(
            f"INSERT INTO {REGISTRY}(chat_id, created_at) VALUES (?, ?) RETURNING n",  # noqa: S608
            (chat, ts(utcnow())))
    table = table_name(n)
    await recreate(conn, table, TRIGGERS, *_chat_statements(table, chat))
    await conn.execute(
        f"INSERT INTO {table}(rowid, content, key, summary, ctx1, ctx2) "  # noqa: S608
        f"SELECT t.memory_id, {_indexed('t.text', 't.lang')}, '', '', "
        f"coalesce({_indexed('c1.text', 'c1.lang')}, ''), "
        f"coalesce({_indexed('c2.text', 'c2.lang')}, '') "
        f"FROM {TRANSLATIONS} t LEFT JOIN {TRANSLATIONS} c1 ON c1.memory_id = t.ctx1_id "
        f"LEFT JOIN {TRANSLATIONS} c2 ON c2.memory_id = t.ctx2_id WHERE t.chat_id = ? "
        "ORDER BY t.memory_id", (chat,))
    log.info("built translations index %s for chat %s", table, chat)
    return table


class SqliteTranslations:
    """The memories' translations in `rumi.db`: what the background translator reads and
    writes, and recall's search of them. Shares the store's connection and write lock."""

    available = True
    stems_questions = True   # Spanish translations are held as Python Snowball stems

    def __init__(self, conn: aiosqlite.Connection, lock: asyncio.Lock,
                 transaction: Callable[[], AbstractAsyncContextManager[Any]]) -> None:
        self.conn = conn
        self.lock = lock
        self.transaction = transaction   # the store's: its write lock and BEGIN IMMEDIATE
        self._tables: dict[str, str] = {}
        self._ready = False

    async def _ensure(self) -> None:
        if not self._ready:   # a database opened before this module's migration existed
            async with self.lock:
                await apply_migrations(self.conn)
            # the triggers' and the rebuild's stemmer, run in aiosqlite's thread
            await self.conn.create_function(STEM_FUNCTION, 1, spanish_stems, deterministic=True)
            self._ready = True

    async def _table(self, chat: str) -> str | None:
        """The chat's table when it exists as this version makes it (None: not built)."""
        cached = self._tables.get(chat)
        if cached is not None:
            return cached
        await self._ensure()
        rows = await self.conn.execute_fetchall(
            f"SELECT n FROM {REGISTRY} WHERE chat_id = ?", (chat,))  # noqa: S608
        if rows and await _is_current(self.conn, table_name(int(rows[0][0])), chat):
            self._tables[chat] = table_name(int(rows[0][0]))
            return self._tables[chat]
        return None

    async def chats_missing(self) -> list[str]:
        """Chats with an active memory that has no translation (new ones; every chat after
        the upgrade that brought this table)."""
        await self._ensure()
        rows = await self.conn.execute_fetchall(
            f"SELECT DISTINCT m.chat_id FROM memories m LEFT JOIN {TRANSLATIONS} t "  # noqa: S608
            "ON t.memory_id = m.id WHERE m.status = 'active' AND t.memory_id IS NULL "
            "ORDER BY m.chat_id")
        return [str(r[0]) for r in rows]

    async def rebuild_stale(self) -> list[str]:
        """Rebuild every chat's table an older version made (another definition: Spanish
        stems), each in a transaction of its own, so an idle chat's translations are searched
        again without waiting for its next save; the chats rebuilt."""
        await self._ensure()
        rows = await self.conn.execute_fetchall(
            f"SELECT chat_id, n FROM {REGISTRY} ORDER BY n")  # noqa: S608
        rebuilt = []
        for chat, n in rows:
            if await _is_current(self.conn, table_name(int(n)), str(chat)):
                continue
            async with self.transaction():
                table = await _build(self.conn, str(chat))
            self._tables[str(chat)] = table
            rebuilt.append(str(chat))
        return rebuilt

    async def missing(self, chat_id: str, limit: int, after: int = 0) -> list[Untranslated]:
        """Up to `limit` of the chat's active memories without a translation, oldest first
        (so a memory's earlier neighbours are translated before it: its context), with an
        id above `after` (a pass goes on from where its last batch ended, instead of
        walking what it already did: a 100k-memory chat's upgrade stays linear)."""
        chat = check_chat_id(chat_id)
        await self._ensure()
        rows = await self.conn.execute_fetchall(
            f"SELECT m.id, m.content, m.content_hash FROM memories m LEFT JOIN {TRANSLATIONS} "  # noqa: S608
            "t ON t.memory_id = m.id WHERE m.chat_id = ? AND m.status = 'active' "
            "AND m.id > ? AND t.memory_id IS NULL ORDER BY m.id LIMIT ?",
            (chat, int(after), int(limit)))
        return [Untranslated(int(r[0]), str(r[1]), str(r[2])) for r in rows]

    async def write(self, chat_id: str, done: Sequence[Translated]) -> int:
        """Store translations, each only while its memory is still active with the content
        it was made from (an edit or a forget meanwhile wins); how many were stored."""
        chat = check_chat_id(chat_id)
        if not done:
            return 0
        await self._ensure()
        now = ts(utcnow())
        stored = 0
        async with self.transaction():
            table = self._tables.get(chat)
            if table is None or not await _is_current(self.conn, table, chat):
                self._tables.pop(chat, None)
                table = await _build(self.conn, chat)
            for item in done:
                cur = await self.conn.execute(
                    f"INSERT INTO {TRANSLATIONS}(memory_id, chat_id, content_hash, lang, "  # noqa: S608
                    "text, ctx1_id, ctx2_id, translated_at) SELECT m.id, m.chat_id, "
                    f"m.content_hash, ?, ?, {_NEIGHBOUR.format(n=0)}, "
                    f"{_NEIGHBOUR.format(n=1)}, ? FROM memories m WHERE m.id = ? "
                    "AND m.chat_id = ? AND m.status = 'active' AND m.content_hash = ? "
                    "ON CONFLICT(memory_id) DO NOTHING",
                    (item.lang, item.text, now, int(item.id), chat, item.content_hash))
                stored += max(0, cur.rowcount)
        self._tables[chat] = table
        return stored

    async def count(self, chat_id: str) -> int:
        """How many of the chat's memories have a translation."""
        chat = check_chat_id(chat_id)
        await self._ensure()
        [[n]] = await self.conn.execute_fetchall(
            f"SELECT count(*) FROM {TRANSLATIONS} WHERE chat_id = ?", (chat,))  # noqa: S608
        return int(n)

    async def search(self, chat: str, query: QueryTerms, limit: int, doc_budget: int,
                     *, rank_common_words: bool = True) -> KeywordHits:
        """(memory id, BM25) of the chat's active memories whose translation (with its
        context's) matches the query's words, best first; empty while none is translated."""
        try:
            table = await self._table(chat)
            if table is None:
                return KeywordHits(coverage=0.0)
            return await rank_table(self.conn, table, chat, query, limit, doc_budget,
                                    rank_common_words)
        except sqlite3.OperationalError:
            self._tables.pop(chat, None)
            log.warning("translations search failed for chat %s", chat, exc_info=True)
            return KeywordHits(coverage=0.0)


async def optimize(conn: aiosqlite.Connection, chat: str | None) -> None:
    """Merge the segments of the chat's translations table (every chat's when None), so a
    deleted row's words leave the file (a delete only adds a tombstone): `editing.purge`."""
    try:
        await optimize_registered(conn, REGISTRY, table_name, chat)
    except sqlite3.OperationalError:   # a database not yet migrated: nothing to merge
        return

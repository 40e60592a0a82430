"""Where the tape index keeps its rows: the seam between `tape_index.TapeIndex` (which reads
the tapes) and a database.

`TapeIndex` decides what to index and when; a `TapeRows` only stores and finds rows. SQLite
keeps them in `rumi.db` (`tape_sources` + the FTS5 table `tape_fts`, here); the PostgreSQL
store keeps them in its `rumi` schema (`postgres/tape_rows.py`). The store gives its own as
`store.tape_db`, so nothing outside the store wing knows which database holds them.

A row of `sources` is (source id, indexed bytes, head fingerprint, messages); a row `find`
yields is (tag, message id, time, content), newest first.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Sequence
from pathlib import Path
from typing import Any, Protocol

from rumi.memory.store.editing import checkpoint

Source = tuple[int, int, str, int]          # id, indexed_bytes, head, messages
Found = tuple[str | None, int, str, str]    # tag, msg_id, at, content
Message = tuple[str, int, str]              # content, msg_id, at


class TapeRows(Protocol):
    """The rows of one Rumi's tape index, per chat and tape (`tag`: '' for the chat's own)."""

    async def sources(self, chat_id: str) -> dict[str, Source]: ...

    async def new_source(self, chat_id: str, tag: str) -> int: ...

    async def add(self, source: int, rows: Sequence[Message], indexed_bytes: int,
                  head: str) -> None:
        """Index `rows` and record where the tape was read to, in one transaction."""
        ...

    async def drop(self, source: int, *, delete_source: bool = False) -> None: ...

    async def scrub(self) -> None:
        """After rows were dropped for a redaction: leave no copy of their words behind."""
        ...

    async def indexed_chats(self) -> set[str]: ...

    async def counts(self) -> tuple[dict[tuple[str, str], tuple[int, str]], dict[int, int]]:
        """((chat, tag) → (source, head)) and (source → rows indexed), for the cross-check."""
        ...

    def find(self, chat_id: str, words: Sequence[str], window: tuple[str, str] | None,
             limit: int | None) -> AsyncGenerator[Found, None]:
        """The chat's messages holding every word (as a word prefix, accents and case
        ignored), with `at` in [window) when given, newest first, at most `limit`."""
        ...


class SqliteTapeRows:
    """The tape index in `rumi.db`, on the SQLite store's connection and write lock."""

    def __init__(self, store: Any) -> None:
        self.store = store

    @property
    def db_path(self) -> Path:
        return Path(self.store.db_path)

    async def sources(self, chat_id: str) -> dict[str, Source]:
        async with self.store.connection.execute(
            "SELECT tag, id, indexed_bytes, head, messages FROM tape_sources WHERE chat_id = ?",
            (chat_id,),
        ) as cur:
            return {row[0]: (row[1], row[2], row[3], row[4]) for row in await cur.fetchall()}

    async def new_source(self, chat_id: str, tag: str) -> int:
        async with self.store.transaction() as conn:
            cur = await conn.execute(
                "INSERT INTO tape_sources(chat_id, tag) VALUES (?, ?)", (chat_id, tag))
            return int(cur.lastrowid or 0)

    async def add(self, source: int, rows: Sequence[Message], indexed_bytes: int,
                  head: str) -> None:
        async with self.store.transaction() as conn:
            await conn.executemany(
                "INSERT INTO tape_fts(content, source, msg_id, at) VALUES (?, ?, ?, ?)",
                [(content, source, msg_id, at) for content, msg_id, at in rows])
            await conn.execute(
                "UPDATE tape_sources SET indexed_bytes = ?, head = ?, "
                "messages = messages + ? WHERE id = ?", (indexed_bytes, head, len(rows), source))

    async def drop(self, source: int, *, delete_source: bool = False) -> None:
        async with self.store.transaction() as conn:
            await conn.execute("DELETE FROM tape_fts WHERE source = ?", (source,))
            if delete_source:
                await conn.execute("DELETE FROM tape_sources WHERE id = ?", (source,))
            else:
                await conn.execute("UPDATE tape_sources SET indexed_bytes = 0, head = '', "
                                   "messages = 0 WHERE id = ?", (source,))

    async def scrub(self) -> None:
        """Merge the FTS segments that held the dropped rows (secure_delete zeroes the freed
        pages) and checkpoint the WAL: the words survive nowhere in rumi.db."""
        async with self.store.transaction() as conn:
            await conn.execute("INSERT INTO tape_fts(tape_fts) VALUES ('optimize')")
        await checkpoint(self.store)

    async def indexed_chats(self) -> set[str]:
        async with self.store.connection.execute(
                "SELECT DISTINCT chat_id FROM tape_sources") as cur:
            return {str(row[0]) for row in await cur.fetchall()}

    async def counts(self) -> tuple[dict[tuple[str, str], tuple[int, str]], dict[int, int]]:
        async with self.store.connection.execute(
                "SELECT chat_id, tag, id, head FROM tape_sources") as cur:
            indexed = {(r[0], r[1]): (r[2], r[3]) for r in await cur.fetchall()}
        async with self.store.connection.execute(
                "SELECT source, count(*) FROM tape_fts GROUP BY source") as cur:
            counted = {int(r[0]): int(r[1]) for r in await cur.fetchall()}
        return indexed, counted

    async def find(self, chat_id: str, words: Sequence[str], window: tuple[str, str] | None,
                   limit: int | None) -> AsyncIterator[Found]:
        where, params = ["s.chat_id = ?"], [chat_id]
        if words:
            where.append("tape_fts MATCH ?")
            params.append(" AND ".join(f'"{w}"*' for w in words))
        if window:
            where.append("f.at >= ? AND f.at < ?")
            params += list(window)
        # without a window every row is a hit: SQLite keeps only the newest `limit`
        tail = f" LIMIT {int(limit)}" if limit is not None else ""
        sql = ("SELECT s.tag, f.msg_id, f.at, f.content FROM tape_fts f "  # noqa: S608
               "JOIN tape_sources s ON s.id = f.source "
               f"WHERE {' AND '.join(where)} ORDER BY f.at DESC, f.rowid DESC{tail}")
        async with self.store.connection.execute(sql, params) as cur:
            async for row in cur:
                yield row[0] or None, int(row[1]), str(row[2]), str(row[3])

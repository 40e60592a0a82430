"""The tape index's rows in PostgreSQL (`rumi.tape_sources`, `rumi.tape_messages`).

The tapes are this machine's files, so each Rumi indexes its own: every row carries the
`store.name` of the Rumi whose tape it came from, and a Rumi reads, catches up and drops only
its own (two Rumis talking with one person each have their own tape of that chat, and
`recall_original` opens the tape a hit came from). The index is derived: a new store starts
empty and start-up's `sync_all` fills it from the tape files, as after a lost `rumi.db`.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Sequence
from typing import Any

from rumi.memory.store.tape_rows import Found, Message, Source


class PgTapeRows:
    """One Rumi's tape index in the `rumi` schema (the store's pool, autocommit)."""

    def __init__(self, pool: Any, name: str) -> None:
        self.pool = pool
        self.name = name

    async def sources(self, chat_id: str) -> dict[str, Source]:
        async with self.pool.connection() as conn:
            cur = await conn.execute(
                "SELECT tag, id, indexed_bytes, head, messages FROM rumi.tape_sources "
                "WHERE server_code = %s AND chat_id = %s", (self.name, chat_id))
            return {r["tag"]: (int(r["id"]), int(r["indexed_bytes"]), r["head"],
                               int(r["messages"])) for r in await cur.fetchall()}

    async def new_source(self, chat_id: str, tag: str) -> int:
        async with self.pool.connection() as conn:
            cur = await conn.execute(
                "INSERT INTO rumi.tape_sources(server_code, chat_id, tag) VALUES (%s, %s, %s) "
                "ON CONFLICT (server_code, chat_id, tag) DO UPDATE SET tag = excluded.tag "
                "RETURNING id", (self.name, chat_id, tag))
            row = await cur.fetchone()
            return int(row["id"])

    async def add(self, source: int, rows: Sequence[Message], indexed_bytes: int,
                  head: str) -> None:
        async with self.pool.connection() as conn, conn.transaction():
            if rows:
                async with conn.cursor().copy(
                        "COPY rumi.tape_messages (source, msg_id, at, content) "
                        "FROM STDIN") as copy:
                    for content, msg_id, at in rows:
                        await copy.write_row((source, msg_id, at, content))
            await conn.execute(
                "UPDATE rumi.tape_sources SET indexed_bytes = %s, head = %s, "
                "messages = messages + %s WHERE id = %s",
                (indexed_bytes, head, len(rows), source))

    async def drop(self, source: int, *, delete_source: bool = False) -> None:
        async with self.pool.connection() as conn, conn.transaction():
            if delete_source:   # its messages go with it (ON DELETE CASCADE)
                await conn.execute("DELETE FROM rumi.tape_sources WHERE id = %s", (source,))
            else:
                await conn.execute("DELETE FROM rumi.tape_messages WHERE source = %s",
                                   (source,))
                await conn.execute("UPDATE rumi.tape_sources SET indexed_bytes = 0, "
                                   "head = '', messages = 0 WHERE id = %s", (source,))

    async def scrub(self) -> None:
        """VACUUM the messages table: the dropped rows' tuples and index entries are removed
        (pages are reused, not zeroed; the server's WAL keeps them until its next
        checkpoint recycles it)."""
        async with self.pool.connection() as conn:
            await conn.execute("VACUUM rumi.tape_messages")

    async def indexed_chats(self) -> set[str]:
        async with self.pool.connection() as conn:
            cur = await conn.execute(
                "SELECT DISTINCT chat_id FROM rumi.tape_sources WHERE server_code = %s",
                (self.name,))
            return {str(r["chat_id"]) for r in await cur.fetchall()}

    async def counts(self) -> tuple[dict[tuple[str, str], tuple[int, str]], dict[int, int]]:
        async with self.pool.connection() as conn:
            cur = await conn.execute(
                "SELECT s.chat_id, s.tag, s.id, s.head, count(m.id) AS n "
                "FROM rumi.tape_sources s LEFT JOIN rumi.tape_messages m ON m.source = s.id "
                "WHERE s.server_code = %s GROUP BY s.id", (self.name,))
            rows = await cur.fetchall()
        indexed = {(r["chat_id"], r["tag"]): (int(r["id"]), r["head"]) for r in rows}
        return indexed, {int(r["id"]): int(r["n"]) for r in rows if r["n"]}

    async def find(self, chat_id: str, words: Sequence[str], window: tuple[str, str] | None,
                   limit: int | None) -> AsyncGenerator[Found, None]:
        where, params = ["s.server_code = %s", "s.chat_id = %s"], [self.name, chat_id]
        if words:   # word tokens only (fts.terms): nothing here is tsquery syntax
            where.append("m.words @@ to_tsquery('simple'::regconfig, rumi.fold(%s))")
            params.append(" & ".join(f"{w}:*" for w in words))
        if window:
            where.append("m.at >= %s AND m.at < %s")
            params += list(window)
        tail = ""
        if limit is not None:
            tail = " LIMIT %s"
            params.append(int(limit))
        sql = ("SELECT s.tag, m.msg_id, m.at, m.content FROM rumi.tape_messages m "  # noqa: S608
               "JOIN rumi.tape_sources s ON s.id = m.source "
               f"WHERE {' AND '.join(where)} ORDER BY m.at DESC, m.id DESC{tail}")
        # a server-side cursor: a span search filters in Python without reading every row
        async with self.pool.connection() as conn, conn.transaction(), \
                conn.cursor(name="rumi_tape_find") as cur:
            await cur.execute(sql, params)
            async for row in cur:
                yield row["tag"] or None, int(row["msg_id"]), str(row["at"]), str(row["content"])

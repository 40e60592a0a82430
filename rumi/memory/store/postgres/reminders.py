"""The reminders' rows in the PostgreSQL store's `rumi` schema (`rumi.reminders`,
`rumi.chat_timezones`): one backup covers them with the memories.

Shaped like `rumi.reminders.store.ReminderRows` (a Protocol the reminders feature owns) but
importing nothing of it — features never import each other: rows are plain mappings, and the
composition root hands this object to the feature (`backend.reminder_rows`).

A reminder belongs to one chat of one bot: every row keeps the bot's `store.name` and a Rumi
reads, schedules, recovers and claims only its own, so two Rumis on one store never both send
one (the names must differ: at start a Rumi takes back its rows left `firing`, which for a
second process of the same name would be the first one's deliveries in flight). A claim is
one conditional UPDATE: of claims racing for one row, one wins. The pool is this object's own
(two connections): the feature opens and closes it on its own schedule, apart from the memory
store's.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import datetime
from typing import Any

from psycopg import AsyncConnection
from psycopg.rows import dict_row
from psycopg_pool import AsyncConnectionPool

from rumi.memory.store.postgres import schema

Row = dict[str, Any]


class PgReminderRows:
    """One Rumi's reminders in `rumi.reminders`."""

    def __init__(self, url: str, name: str, dim: Callable[[], int]) -> None:
        self._url = url
        self.name = name
        self._dim = dim   # the embedding model's, for a new database's schema (blocking)
        self._pool: AsyncConnectionPool | None = None

    async def open(self) -> None:
        """Migrate (a new database gets the whole schema), then open the pool."""
        if self._pool is not None:
            return
        dim = await asyncio.to_thread(self._dim)
        async with await AsyncConnection.connect(self._url, autocommit=True) as conn:
            await schema.migrate(conn, dim)
        pool = AsyncConnectionPool(
            self._url, min_size=1, max_size=2, open=False,
            check=AsyncConnectionPool.check_connection,
            kwargs={"autocommit": True, "row_factory": dict_row,
                    "options": "-c TimeZone=UTC"})
        await pool.open(wait=True, timeout=30)
        self._pool = pool

    async def close(self) -> None:
        if self._pool is not None:
            await self._pool.close()
            self._pool = None

    async def _rows(self, sql: str, params: tuple[Any, ...]) -> list[Row]:
        if self._pool is None:
            raise RuntimeError("reminder store is not open")
        async with self._pool.connection() as conn:
            cur = await conn.execute(sql, params)
            return list(await cur.fetchall()) if cur.description else []

    async def _count(self, sql: str, params: tuple[Any, ...]) -> int:
        if self._pool is None:
            raise RuntimeError("reminder store is not open")
        async with self._pool.connection() as conn:
            cur = await conn.execute(sql, params)
            return cur.rowcount

    async def _one(self, sql: str, params: tuple[Any, ...]) -> Row | None:
        rows = await self._rows(sql, params)
        return rows[0] if rows else None

    async def add(self, new: Any, now: datetime) -> Row:
        row = await self._one(
            "INSERT INTO rumi.reminders(server_code, chat_id, text, is_task, recurrence, "
            "timezone, due_at, created_at, updated_at, set_by) "
            "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s) RETURNING *",
            (self.name, new.chat_id, new.text, bool(new.is_task), new.recurrence,
             new.timezone, new.due_at, now, now, new.set_by))
        assert row is not None
        return row

    async def get(self, reminder_id: int) -> Row | None:
        return await self._one("SELECT * FROM rumi.reminders WHERE id = %s "
                               "AND server_code = %s", (reminder_id, self.name))

    async def live(self, chat_id: str | None) -> list[Row]:
        sql = ("SELECT * FROM rumi.reminders WHERE server_code = %s "
               "AND state IN ('pending', 'firing')")
        params: tuple[Any, ...] = (self.name,)
        if chat_id is not None:
            sql += " AND chat_id = %s"
            params += (chat_id,)
        return await self._rows(sql + " ORDER BY due_at, id", params)

    async def count_live(self, chat_id: str, tasks_only: bool) -> int:
        sql = ("SELECT count(*) AS n FROM rumi.reminders WHERE server_code = %s "
               "AND chat_id = %s AND state IN ('pending', 'firing')")
        if tasks_only:
            sql += " AND is_task"
        row = await self._one(sql, (self.name, chat_id))
        return int(row["n"]) if row else 0

    async def recover_interrupted(self, now: datetime) -> int:
        return await self._count(
            "UPDATE rumi.reminders SET state = 'pending', interrupted = true, updated_at = %s "
            "WHERE server_code = %s AND state = 'firing'", (now, self.name))

    async def claim(self, reminder_id: int, now: datetime, latest_due: datetime) -> Row | None:
        return await self._one(
            "UPDATE rumi.reminders SET state = 'firing', updated_at = %s WHERE id = %s "
            "AND server_code = %s AND state = 'pending' AND due_at <= %s RETURNING *",
            (now, reminder_id, self.name, latest_due))

    async def delivered(self, reminder_id: int, next_due: datetime | None,
                        now: datetime) -> bool:
        if next_due is None:
            return await self._count(
                "UPDATE rumi.reminders SET state = 'done', fired_count = fired_count + 1, "
                "interrupted = false, updated_at = %s WHERE id = %s AND server_code = %s "
                "AND state = 'firing'", (now, reminder_id, self.name)) == 1
        return await self._count(
            "UPDATE rumi.reminders SET state = 'pending', due_at = %s, "
            "fired_count = fired_count + 1, interrupted = false, updated_at = %s "
            "WHERE id = %s AND server_code = %s AND state = 'firing'",
            (next_due, now, reminder_id, self.name)) == 1

    async def release(self, reminder_id: int, now: datetime) -> bool:
        return await self._count(
            "UPDATE rumi.reminders SET state = 'pending', updated_at = %s WHERE id = %s "
            "AND server_code = %s AND state = 'firing'", (now, reminder_id, self.name)) == 1

    async def cancel(self, chat_id: str, reminder_id: int, now: datetime) -> Row | None:
        return await self._one(
            "UPDATE rumi.reminders SET state = 'cancelled', updated_at = %s WHERE id = %s "
            "AND server_code = %s AND chat_id = %s AND state IN ('pending', 'firing') "
            "RETURNING *", (now, reminder_id, self.name, chat_id))

    async def chat_timezone(self, chat_id: str) -> str | None:
        row = await self._one("SELECT timezone FROM rumi.chat_timezones WHERE chat_id = %s",
                              (chat_id,))
        return str(row["timezone"]) if row else None

    async def set_chat_timezone(self, chat_id: str, timezone: str) -> None:
        await self._count(
            "INSERT INTO rumi.chat_timezones(chat_id, timezone) VALUES (%s, %s) "
            "ON CONFLICT (chat_id) DO UPDATE SET timezone = excluded.timezone",
            (chat_id, timezone))

"""The reminders' rows, and each chat's time zone.

`ReminderStore` is what the service uses; it turns rows into `Reminder`s. The rows live
behind `ReminderRows`, a Protocol this feature owns: `SqliteReminderRows` (here) keeps them in
`rumi.db` — a small store of its own (own connection, own tables created if missing) rather
than a memory migration, so reminders do not depend on the memory feature — and the PostgreSQL
store keeps them in its `rumi` schema (`rumi/memory/store/postgres/reminders.py`, which never
imports this package: it returns plain mappings). The composition root (`rumi/app.py`) asks
the store wing for the rows (`store.backend.reminder_rows`) and hands them to the feature, so
neither feature imports the other and only the store wing knows which database runs
(docs/architecture.md).

States: `pending` (waiting for `due_at`), `firing` (claimed by a delivery in progress), `done`,
`cancelled`. Every change of state is one conditional UPDATE, so a cancelled or
already-delivered row is never claimed, and of two claims at once only one wins.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Protocol

import aiosqlite

_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS reminders (
        id          INTEGER PRIMARY KEY AUTOINCREMENT,
        chat_id     TEXT    NOT NULL,
        text        TEXT    NOT NULL,
        is_task     INTEGER NOT NULL DEFAULT 0,
        recurrence  TEXT,
        timezone    TEXT    NOT NULL,
        due_at      TEXT    NOT NULL,
        state       TEXT    NOT NULL DEFAULT 'pending'
                    CHECK (state IN ('pending', 'firing', 'done', 'cancelled')),
        fired_count INTEGER NOT NULL DEFAULT 0,
        interrupted INTEGER NOT NULL DEFAULT 0,
        created_at  TEXT    NOT NULL,
        updated_at  TEXT    NOT NULL,
        set_by      TEXT
    )""",
    "CREATE INDEX IF NOT EXISTS ix_reminders_chat_state ON reminders(chat_id, state)",
    """CREATE TABLE IF NOT EXISTS chat_timezones (
        chat_id  TEXT PRIMARY KEY,
        timezone TEXT NOT NULL
    )""",
)
CLAIM_SLACK = timedelta(seconds=2)

Row = Mapping[str, Any]


@dataclass(frozen=True)
class NewReminder:
    chat_id: str
    text: str
    is_task: bool
    recurrence: str | None
    timezone: str
    due_at: datetime
    set_by: str | None   # the group member who asked for it (None: private, or older)


@dataclass(frozen=True)
class Reminder(NewReminder):
    """A reminder as its row holds it: what was asked, its id and where it stands."""
    id: int
    state: str
    fired_count: int
    interrupted: bool


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat(timespec="microseconds")


def _when(value: datetime | str) -> datetime:
    """A stored time: `timestamptz` (PostgreSQL) or ISO text (SQLite)."""
    moment = value if isinstance(value, datetime) else datetime.fromisoformat(value)
    return moment.astimezone(UTC)


def to_reminder(row: Row) -> Reminder:
    return Reminder(id=int(row["id"]), chat_id=str(row["chat_id"]), text=row["text"],
                    is_task=bool(row["is_task"]), recurrence=row["recurrence"],
                    timezone=row["timezone"], due_at=_when(row["due_at"]), state=row["state"],
                    fired_count=int(row["fired_count"]), interrupted=bool(row["interrupted"]),
                    set_by=row["set_by"])


class ReminderRows(Protocol):
    """One database's reminder rows (mappings with the columns of `reminders`). Claims and
    confirmations are single conditional statements: of two callers, one wins."""

    async def open(self) -> None: ...

    async def close(self) -> None: ...

    async def add(self, new: NewReminder, now: datetime) -> Row: ...

    async def get(self, reminder_id: int) -> Row | None: ...

    async def live(self, chat_id: str | None) -> list[Row]:
        """Pending or firing rows (one chat, or all), soonest first."""
        ...

    async def count_live(self, chat_id: str, tasks_only: bool) -> int: ...

    async def recover_interrupted(self, now: datetime) -> int: ...

    async def claim(self, reminder_id: int, now: datetime, latest_due: datetime) -> Row | None:
        """`pending` → `firing` when due by `latest_due`; the row, or None."""
        ...

    async def delivered(self, reminder_id: int, next_due: datetime | None,
                        now: datetime) -> bool: ...

    async def release(self, reminder_id: int, now: datetime) -> bool: ...

    async def cancel(self, chat_id: str, reminder_id: int, now: datetime) -> Row | None: ...

    async def chat_timezone(self, chat_id: str) -> str | None: ...

    async def set_chat_timezone(self, chat_id: str, timezone: str) -> None: ...


class ReminderStore:
    """The reminders as the service sees them, on `rumi.db` (a path) or on given rows."""

    def __init__(self, where: Path | ReminderRows, busy_timeout_ms: int = 5_000) -> None:
        self.rows: ReminderRows = SqliteReminderRows(where, busy_timeout_ms) \
            if isinstance(where, Path) else where

    async def open(self) -> None:
        await self.rows.open()

    async def close(self) -> None:
        await self.rows.close()

    async def add(self, chat_id: str, text: str, *, is_task: bool, recurrence: str | None,
                  timezone: str, due_at: datetime, now: datetime,
                  set_by: str | None = None) -> Reminder:
        return to_reminder(await self.rows.add(
            NewReminder(chat_id, text, is_task, recurrence, timezone, due_at, set_by), now))

    async def get(self, reminder_id: int) -> Reminder | None:
        row = await self.rows.get(reminder_id)
        return to_reminder(row) if row else None

    async def live(self, chat_id: str | None = None) -> list[Reminder]:
        """Pending or firing rows (one chat, or all), soonest first."""
        return [to_reminder(r) for r in await self.rows.live(chat_id)]

    async def count_live(self, chat_id: str, *, tasks_only: bool = False) -> int:
        return await self.rows.count_live(chat_id, tasks_only)

    async def recover_interrupted(self, now: datetime) -> int:
        """Rows a crash left `firing` go back to `pending`, flagged: maybe already delivered."""
        return await self.rows.recover_interrupted(now)

    async def claim(self, reminder_id: int, now: datetime) -> Reminder | None:
        """Take a due pending row for delivery (committed before anything is sent). A timer
        may wake a little before the wall clock says so: `CLAIM_SLACK` of it is accepted."""
        row = await self.rows.claim(reminder_id, now, now + CLAIM_SLACK)
        return to_reminder(row) if row else None

    async def delivered(self, reminder_id: int, next_due: datetime | None,
                        now: datetime) -> bool:
        """After a delivery: done, or pending again at `next_due` (recurring). False when it
        was cancelled meanwhile (the cancel wins)."""
        return await self.rows.delivered(reminder_id, next_due, now)

    async def release(self, reminder_id: int, now: datetime) -> bool:
        """Delivery failed (no channel, network): pending again, due as before (the caller
        schedules the retry; a restart meanwhile sends it at once)."""
        return await self.rows.release(reminder_id, now)

    async def cancel(self, chat_id: str, reminder_id: int, now: datetime) -> Reminder | None:
        """Cancel one of this chat's live rows; None if it is not this chat's or not live."""
        row = await self.rows.cancel(chat_id, reminder_id, now)
        return to_reminder(row) if row else None

    async def chat_timezone(self, chat_id: str) -> str | None:
        return await self.rows.chat_timezone(chat_id)

    async def set_chat_timezone(self, chat_id: str, timezone: str) -> None:
        await self.rows.set_chat_timezone(chat_id, timezone)


class SqliteReminderRows:
    """The reminders' rows in `rumi.db`."""

    def __init__(self, db_path: Path, busy_timeout_ms: int = 5_000) -> None:
        self.db_path = db_path
        self.busy_timeout_ms = busy_timeout_ms
        self._conn: aiosqlite.Connection | None = None

    async def open(self) -> None:
        if self._conn is not None:
            return
        self.db_path.parent.mkdir(parents=True, exist_ok=True)
        conn = await aiosqlite.connect(self.db_path, isolation_level=None)
        conn.row_factory = aiosqlite.Row
        try:
            await conn.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout_ms)}")
            await conn.execute("PRAGMA journal_mode = WAL")
            for sql in _SCHEMA:
                await conn.execute(sql)
            async with conn.execute("PRAGMA table_info(reminders)") as cur:
                columns = {row["name"] for row in await cur.fetchall()}
            if "set_by" not in columns:   # a database from before groups had owners
                await conn.execute("ALTER TABLE reminders ADD COLUMN set_by TEXT")
        except BaseException:
            await conn.close()
            raise
        self._conn = conn

    async def close(self) -> None:
        if self._conn is not None:
            await self._conn.close()
            self._conn = None

    @property
    def conn(self) -> aiosqlite.Connection:
        if self._conn is None:
            raise RuntimeError("reminder store is not open")
        return self._conn

    async def _one(self, sql: str, args: tuple[Any, ...]) -> Row | None:
        async with self.conn.execute(sql, args) as cur:
            return await cur.fetchone()

    async def add(self, new: NewReminder, now: datetime) -> Row:
        row = await self._one(
            "INSERT INTO reminders(chat_id, text, is_task, recurrence, timezone, due_at, "
            "created_at, updated_at, set_by) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING *",
            (new.chat_id, new.text, int(new.is_task), new.recurrence, new.timezone,
             _iso(new.due_at), _iso(now), _iso(now), new.set_by))
        assert row is not None
        return row

    async def get(self, reminder_id: int) -> Row | None:
        return await self._one("SELECT * FROM reminders WHERE id = ?", (reminder_id,))

    async def live(self, chat_id: str | None) -> list[Row]:
        sql = "SELECT * FROM reminders WHERE state IN ('pending', 'firing')"
        args: tuple[str, ...] = ()
        if chat_id is not None:
            sql += " AND chat_id = ?"
            args = (chat_id,)
        async with self.conn.execute(sql + " ORDER BY due_at, id", args) as cur:
            return list(await cur.fetchall())

    async def count_live(self, chat_id: str, tasks_only: bool) -> int:
        sql = "SELECT count(*) FROM reminders WHERE chat_id = ? AND state IN ('pending','firing')"
        if tasks_only:
            sql += " AND is_task = 1"
        row = await self._one(sql, (chat_id,))
        return int(row[0]) if row else 0

    async def recover_interrupted(self, now: datetime) -> int:
        cur = await self.conn.execute(
            "UPDATE reminders SET state = 'pending', interrupted = 1, updated_at = ? "
            "WHERE state = 'firing'", (_iso(now),))
        return cur.rowcount

    async def claim(self, reminder_id: int, now: datetime, latest_due: datetime) -> Row | None:
        return await self._one(
            "UPDATE reminders SET state = 'firing', updated_at = ? "
            "WHERE id = ? AND state = 'pending' AND due_at <= ? RETURNING *",
            (_iso(now), reminder_id, _iso(latest_due)))

    async def delivered(self, reminder_id: int, next_due: datetime | None,
                        now: datetime) -> bool:
        if next_due is None:
            sql, args = ("UPDATE reminders SET state = 'done', fired_count = fired_count + 1, "
                         "interrupted = 0, updated_at = ? WHERE id = ? AND state = 'firing'",
                         (_iso(now), reminder_id))
        else:
            sql, args = ("UPDATE reminders SET state = 'pending', due_at = ?, "
                         "fired_count = fired_count + 1, interrupted = 0, updated_at = ? "
                         "WHERE id = ? AND state = 'firing'",
                         (_iso(next_due), _iso(now), reminder_id))
        cur = await self.conn.execute(sql, args)
        return cur.rowcount == 1

    async def release(self, reminder_id: int, now: datetime) -> bool:
        cur = await self.conn.execute(
            "UPDATE reminders SET state = 'pending', updated_at = ? "
            "WHERE id = ? AND state = 'firing'", (_iso(now), reminder_id))
        return cur.rowcount == 1

    async def cancel(self, chat_id: str, reminder_id: int, now: datetime) -> Row | None:
        return await self._one(
            "UPDATE reminders SET state = 'cancelled', updated_at = ? "
            "WHERE id = ? AND chat_id = ? AND state IN ('pending', 'firing') RETURNING *",
            (_iso(now), reminder_id, chat_id))

    async def chat_timezone(self, chat_id: str) -> str | None:
        row = await self._one("SELECT timezone FROM chat_timezones WHERE chat_id = ?",
                              (chat_id,))
        return str(row[0]) if row else None

    async def set_chat_timezone(self, chat_id: str, timezone: str) -> None:
        await self.conn.execute(
            "INSERT INTO chat_timezones(chat_id, timezone) VALUES (?, ?) "
            "ON CONFLICT(chat_id) DO UPDATE SET timezone = excluded.timezone",
            (chat_id, timezone))

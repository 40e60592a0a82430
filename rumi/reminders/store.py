"""The reminders' rows in rumi.db, and each chat's time zone.

A small store of its own (own connection, own tables created if missing) rather than a memory
migration: reminders must not depend on the memory feature. States: `pending` (waiting for
`due_at`), `firing` (claimed by a delivery in progress), `done`, `cancelled`. Every change
of state is one conditional UPDATE, so a cancelled or already-delivered row is never claimed.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

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


@dataclass(frozen=True)
class Reminder:
    id: int
    chat_id: str
    text: str
    is_task: bool
    recurrence: str | None
    timezone: str
    due_at: datetime
    state: str
    fired_count: int
    interrupted: bool
    set_by: str | None = None   # the group member who asked for it (None: private, or older)


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat(timespec="microseconds")


def _row(row: aiosqlite.Row) -> Reminder:
    return Reminder(int(row["id"]), row["chat_id"], row["text"], bool(row["is_task"]),
                    row["recurrence"], row["timezone"], datetime.fromisoformat(row["due_at"]),
                    row["state"], int(row["fired_count"]), bool(row["interrupted"]),
                    row["set_by"])


class ReminderStore:
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

    async def add(self, chat_id: str, text: str, *, is_task: bool, recurrence: str | None,
                  timezone: str, due_at: datetime, now: datetime,
                  set_by: str | None = None) -> Reminder:
        async with self.conn.execute(
            "INSERT INTO reminders(chat_id, text, is_task, recurrence, timezone, due_at, "
            "created_at, updated_at, set_by) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING *",
            (chat_id, text, int(is_task), recurrence, timezone, _iso(due_at), _iso(now),
             _iso(now), set_by),
        ) as cur:
            row = await cur.fetchone()
        assert row is not None
        return _row(row)

    async def get(self, reminder_id: int) -> Reminder | None:
        async with self.conn.execute("SELECT * FROM reminders WHERE id = ?",
                                     (reminder_id,)) as cur:
            row = await cur.fetchone()
        return _row(row) if row else None

    async def live(self, chat_id: str | None = None) -> list[Reminder]:
        """Pending or firing rows (one chat, or all), soonest first."""
        sql = "SELECT * FROM reminders WHERE state IN ('pending', 'firing')"
        args: tuple[str, ...] = ()
        if chat_id is not None:
            sql += " AND chat_id = ?"
            args = (chat_id,)
        async with self.conn.execute(sql + " ORDER BY due_at, id", args) as cur:
            return [_row(r) for r in await cur.fetchall()]

    async def count_live(self, chat_id: str, *, tasks_only: bool = False) -> int:
        sql = "SELECT count(*) FROM reminders WHERE chat_id = ? AND state IN ('pending','firing')"
        if tasks_only:
            sql += " AND is_task = 1"
        async with self.conn.execute(sql, (chat_id,)) as cur:
            row = await cur.fetchone()
        return int(row[0]) if row else 0

    async def recover_interrupted(self, now: datetime) -> int:
        """Rows a crash left `firing` go back to `pending`, flagged: maybe already delivered."""
        cur = await self.conn.execute(
            "UPDATE reminders SET state = 'pending', interrupted = 1, updated_at = ? "
            "WHERE state = 'firing'", (_iso(now),))
        return cur.rowcount

    async def claim(self, reminder_id: int, now: datetime) -> Reminder | None:
        """Take a due pending row for delivery (committed before anything is sent). A timer
        may wake a little before the wall clock says so: `CLAIM_SLACK` of it is accepted."""
        async with self.conn.execute(
            "UPDATE reminders SET state = 'firing', updated_at = ? "
            "WHERE id = ? AND state = 'pending' AND due_at <= ? RETURNING *",
            (_iso(now), reminder_id, _iso(now + CLAIM_SLACK)),
        ) as cur:
            row = await cur.fetchone()
        return _row(row) if row else None

    async def delivered(self, reminder_id: int, next_due: datetime | None,
                        now: datetime) -> bool:
        """After a delivery: done, or pending again at `next_due` (recurring). False when it
        was cancelled meanwhile (the cancel wins)."""
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
        """Delivery failed (no channel, network): pending again, due as before (the caller
        schedules the retry; a restart meanwhile sends it at once)."""
        cur = await self.conn.execute(
            "UPDATE reminders SET state = 'pending', updated_at = ? "
            "WHERE id = ? AND state = 'firing'", (_iso(now), reminder_id))
        return cur.rowcount == 1

    async def cancel(self, chat_id: str, reminder_id: int, now: datetime) -> Reminder | None:
        """Cancel one of this chat's live rows; None if it is not this chat's or not live."""
        async with self.conn.execute(
            "UPDATE reminders SET state = 'cancelled', updated_at = ? "
            "WHERE id = ? AND chat_id = ? AND state IN ('pending', 'firing') RETURNING *",
            (_iso(now), reminder_id, chat_id),
        ) as cur:
            row = await cur.fetchone()
        return _row(row) if row else None

    async def chat_timezone(self, chat_id: str) -> str | None:
        async with self.conn.execute("SELECT timezone FROM chat_timezones WHERE chat_id = ?",
                                     (chat_id,)) as cur:
            row = await cur.fetchone()
        return str(row[0]) if row else None

    async def set_chat_timezone(self, chat_id: str, timezone: str) -> None:
        await self.conn.execute(
            "INSERT INTO chat_timezones(chat_id, timezone) VALUES (?, ?) "
            "ON CONFLICT(chat_id) DO UPDATE SET timezone = excluded.timezone",
            (chat_id, timezone))

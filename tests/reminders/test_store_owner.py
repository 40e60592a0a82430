"""Reminders keep who asked for them in a group; a database from before gains the column
without losing a row."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import aiosqlite

from rumi.reminders.store import ReminderStore

BEFORE_OWNERS = """CREATE TABLE reminders (
    id INTEGER PRIMARY KEY AUTOINCREMENT, chat_id TEXT NOT NULL, text TEXT NOT NULL,
    is_task INTEGER NOT NULL DEFAULT 0, recurrence TEXT, timezone TEXT NOT NULL,
    due_at TEXT NOT NULL, state TEXT NOT NULL DEFAULT 'pending',
    fired_count INTEGER NOT NULL DEFAULT 0, interrupted INTEGER NOT NULL DEFAULT 0,
    created_at TEXT NOT NULL, updated_at TEXT NOT NULL)"""


async def test_an_older_database_gains_set_by_and_keeps_its_rows(tmp_path: Path) -> None:
    db = tmp_path / "rumi.db"
    due = (datetime.now(UTC) + timedelta(days=1)).isoformat()
    async with aiosqlite.connect(db) as conn:
        await conn.execute(BEFORE_OWNERS)
        await conn.execute(
            "INSERT INTO reminders(chat_id, text, timezone, due_at, created_at, updated_at) "
            "VALUES ('-100', 'regar', 'UTC', ?, ?, ?)", (due, due, due))
        await conn.commit()
    store = ReminderStore(db)
    await store.open()
    try:
        [old] = await store.live("-100")
        assert old.text == "regar" and old.set_by is None
        now = datetime.now(UTC)
        new = await store.add("-100", "comprar pan", is_task=False, recurrence=None,
                              timezone="UTC", due_at=now + timedelta(hours=1), now=now,
                              set_by="222")
        assert (await store.get(new.id)).set_by == "222"   # type: ignore[union-attr]
    finally:
        await store.close()
    reopened = ReminderStore(db)   # opening again does not try to add the column twice
    await reopened.open()
    try:
        owners = {r.text: r.set_by for r in await reopened.live("-100")}
        assert owners == {"regar": None, "comprar pan": "222"}
    finally:
        await reopened.close()

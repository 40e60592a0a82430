"""`rumi store migrate`'s reminders: this Rumi's live reminders and its chats' time zones,
from `rumi.db` into the PostgreSQL store's `rumi` schema (as this Rumi's `store.name`) and back.

Reminders belong to the reminders feature, which the store wing never imports: the command, an
entry point like the composition root, is where the two meet. Only live reminders travel
(pending, or firing when a crash stopped a delivery: pending again there); done and cancelled
ones are history and stay in the source. A reminder the target already has (same chat, text,
due time, repetition and kind) is not added twice, so a second run adds nothing and a run
killed midway is completed by the next one.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from rumi.config import Settings
from rumi.reminders.store import Reminder, ReminderStore


@dataclass
class ReminderCopy:
    in_source: int = 0
    copied: int = 0
    zones: int = 0

    def line(self) -> str:
        return (f"reminders: {self.copied} of {self.in_source} pending copied "
                f"({self.in_source - self.copied} were already there); "
                f"{self.zones} chat time zones copied")


def reminder_store(settings: Settings) -> ReminderStore:
    """The reminders of the store `settings` names (rumi.db, or the PostgreSQL `rumi` schema)."""
    from rumi.memory.store.backend import reminder_rows

    rows = reminder_rows(settings)
    return ReminderStore(rows if rows is not None else settings.data_dir / "rumi.db",
                         settings.memory.db_busy_timeout_ms)


def _same(r: Reminder) -> tuple[Any, ...]:
    return (r.chat_id, r.text, r.due_at, r.recurrence, r.is_task)


async def copy_reminders(source: ReminderStore, target: ReminderStore,
                         chats: Iterable[str]) -> ReminderCopy:
    """Live reminders and time zones of `chats` (and of every chat with a reminder)."""
    report = ReminderCopy()
    await source.open()
    try:
        await target.open()
        try:
            live = await source.live()
            report.in_source = len(live)
            there = {_same(r) for r in await target.live()}
            now = datetime.now(UTC)
            for r in live:
                if _same(r) in there:
                    continue
                await target.add(r.chat_id, r.text, is_task=r.is_task, recurrence=r.recurrence,
                                 timezone=r.timezone, due_at=r.due_at, now=now, set_by=r.set_by)
                there.add(_same(r))
                report.copied += 1
            for chat in sorted(set(chats) | {r.chat_id for r in live}):
                zone = await source.chat_timezone(chat)
                if zone is not None and await target.chat_timezone(chat) != zone:
                    await target.set_chat_timezone(chat, zone)
                    report.zones += 1
        finally:
            await target.close()
    finally:
        await source.close()
    return report

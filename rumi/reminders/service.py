"""Scheduling, delivery and limits of reminders and scheduled tasks.

The database is the truth; the scheduler only holds one one-shot job per live row, re-added
from the database at start. Delivery is claim → send → confirm: the row is marked `firing` and
committed before anything goes out, so two timers (or a timer and a restart) can never both
send it. A crash between the send and the confirmation leaves the row `firing`; at the next
start it is sent again with a note that it may have arrived already — at-least-once in that
window, because a lost reminder is worse than a repeated one. A reminder found overdue at
start (Rumi was down) is sent once, marked "(con retraso)".
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

from rumi import messages as msg
from rumi.config import RemindersSettings
from rumi.reminders.store import Reminder, ReminderStore
from rumi.reminders.when import WhenError, next_fire, parse_when, shortest_gap, zone
from rumi.scheduler import Scheduler

log = logging.getLogger(__name__)

Send = Callable[[str, str], Awaitable[bool]]
RunTask = Callable[[str, str], Awaitable[str]]
CanSend = Callable[[], bool]


class ReminderError(Exception):
    """A reminder the limits or the input do not allow; the text is for the model."""


def utc_now() -> datetime:
    return datetime.now(UTC)


def job_name(reminder_id: int) -> str:
    return f"reminder.{reminder_id}"


def local_text(moment: datetime, tz: ZoneInfo) -> str:
    """A date as the person reads it, in the chat's zone and the active language:
    `25/11/2026 18:00` / `25 Nov 2026, 18:00`."""
    return msg.format_datetime(moment.astimezone(tz))


class ReminderService:
    def __init__(self, store: ReminderStore, scheduler: Scheduler, settings: RemindersSettings,
                 default_timezone: str, *, send: Send, run_task: RunTask, can_send: CanSend,
                 clock: Callable[[], datetime] = utc_now,
                 language_of: Callable[[str], str] | None = None) -> None:
        self.store = store
        self.language_of = language_of   # chat id -> the language its reminders speak
        self.scheduler = scheduler
        self.settings = settings
        self.default_timezone = default_timezone
        self.send = send
        self.run_task = run_task
        self.can_send = can_send
        self.clock = clock
        self._deliveries: set[asyncio.Task[None]] = set()
        self._failures: dict[int, int] = {}
        self._stopping = False

    # -- lifecycle ---------------------------------------------------------------------------

    async def start(self) -> None:
        """Open the store and schedule every live row; rows a crash left half-sent first."""
        await self.store.open()
        recovered = await self.store.recover_interrupted(self.clock())
        if recovered:
            log.warning("%d reminder(s) were being sent when Rumi stopped; resending", recovered)
        rows = await self.store.live()
        for row in rows:
            self._schedule(row.id, row.due_at)
        log.info("reminders: %d scheduled", len(rows))

    async def stop(self) -> None:
        """Let deliveries in progress finish (a turn may be cancelled by the app first)."""
        self._stopping = True
        for name in self.scheduler.pending_at():
            if name.startswith("reminder."):
                self.scheduler.remove_at(name)
        if self._deliveries:
            await asyncio.gather(*list(self._deliveries), return_exceptions=True)

    @property
    def delivering(self) -> bool:
        """A delivery is in progress (tests wait for it to settle)."""
        return bool(self._deliveries)

    # -- time zones --------------------------------------------------------------------------

    async def timezone(self, chat_id: str) -> ZoneInfo:
        name = await self.store.chat_timezone(chat_id)
        try:
            return zone(name or self.default_timezone)
        except ValueError:
            log.warning("chat %s has an unknown time zone %r; using the default", chat_id, name)
            return zone(self.default_timezone)

    async def set_timezone(self, chat_id: str, name: str) -> ZoneInfo:
        """Raises ValueError for a zone that does not exist; live rows keep their zone."""
        tz = zone(name)
        await self.store.set_chat_timezone(chat_id, tz.key)
        return tz

    # -- the person's and the model's operations -------------------------------------------

    async def create(self, chat_id: str, when: str, text: str, *, task: bool,
                     set_by: str | None = None) -> Reminder:
        """`set_by`: the group member it was set for, so they may cancel it themselves."""
        text = text.strip()
        if not text:
            raise ReminderError("The reminder text is empty.")
        if len(text) > self.settings.max_text_chars:
            raise ReminderError(f"The text is too long (max {self.settings.max_text_chars} "
                                "characters).")
        if await self.store.count_live(chat_id) >= self.settings.max_per_chat:
            raise ReminderError(f"This chat already has {self.settings.max_per_chat} reminders, "
                                "the limit. The person can list them with /reminders and cancel "
                                "one with /cancel <id>.")
        if task and await self.store.count_live(chat_id, tasks_only=True) >= \
                self.settings.max_tasks_per_chat:
            raise ReminderError(f"This chat already has {self.settings.max_tasks_per_chat} "
                                "scheduled tasks, the limit.")
        tz = await self.timezone(chat_id)
        now = self.clock()
        try:
            parsed = parse_when(when, now, tz)
            if parsed.recurrence is not None:
                gap = shortest_gap(parsed.recurrence, tz, now)
                if gap < timedelta(minutes=self.settings.min_recurrence_minutes):
                    raise ReminderError(
                        f"That repeats every {gap}; the minimum is "
                        f"{self.settings.min_recurrence_minutes:g} minutes.")
        except WhenError as exc:
            raise ReminderError(str(exc)) from exc
        row = await self.store.add(chat_id, text, is_task=task, recurrence=parsed.recurrence,
                                   timezone=tz.key, due_at=parsed.first, now=now,
                                   set_by=set_by)
        self._schedule(row.id, row.due_at)
        log.info("chat=%s reminder #%d scheduled (%s)", chat_id, row.id,
                 "task" if task else "message")
        return row

    async def list(self, chat_id: str) -> list[Reminder]:
        return await self.store.live(chat_id)

    async def get(self, chat_id: str, reminder_id: int) -> Reminder | None:
        """One of this chat's rows (any state); None for another chat's or a missing one."""
        row = await self.store.get(reminder_id)
        return row if row is not None and row.chat_id == chat_id else None

    async def cancel(self, chat_id: str, reminder_id: int) -> Reminder | None:
        row = await self.store.cancel(chat_id, reminder_id, self.clock())
        if row is not None:
            self.scheduler.remove_at(job_name(reminder_id))
            self._failures.pop(reminder_id, None)
        return row

    # -- delivery ----------------------------------------------------------------------------

    def _schedule(self, reminder_id: int, when: datetime) -> None:
        self.scheduler.add_at(job_name(reminder_id), lambda: self._fire(reminder_id), when)

    async def _fire(self, reminder_id: int) -> None:
        """Runs in a task of our own, so `stop()` can wait for a delivery to finish."""
        if self._stopping:
            return
        task = asyncio.create_task(self._deliver(reminder_id), name=job_name(reminder_id))
        self._deliveries.add(task)
        task.add_done_callback(self._deliveries.discard)
        await asyncio.shield(task)

    async def _deliver(self, reminder_id: int) -> None:
        if not self.can_send():
            self._retry_later(reminder_id)  # no channel yet (start-up): do not claim
            return
        now = self.clock()
        row = await self.store.claim(reminder_id, now)
        if row is None:
            return  # cancelled, already sent, or re-scheduled
        if self.language_of is not None:   # this task's own context: no other chat affected
            msg.set_language(self.language_of(row.chat_id))
        tz = zone(row.timezone)
        late = row.interrupted or now - row.due_at > timedelta(
            seconds=self.settings.late_after_seconds)
        note = (msg.REMINDER_MAYBE_SENT if row.interrupted
                else msg.REMINDER_LATE if late else "")
        if row.is_task:
            prompt = msg.REMINDER_TASK_PROMPT.format(id=row.id, when=local_text(row.due_at, tz),
                                                     text=row.text)
            result = await self.run_task(row.chat_id, prompt)
            body = msg.REMINDER_TASK_RESULT.format(id=row.id, note=note, result=result)
        else:
            body = msg.REMINDER_FIRED.format(text=row.text, note=note)
        sent = await self.send(row.chat_id, body)
        if not sent and not row.is_task:
            await self.store.release(reminder_id, self.clock())
            self._retry_later(reminder_id)
            return
        if not sent:  # the task ran; its answer is on the chat's tape, not run again
            log.warning("chat=%s scheduled task #%d ran but its result was not delivered",
                        row.chat_id, row.id)
        self._failures.pop(reminder_id, None)
        next_due = None
        if row.recurrence is not None:
            next_due = next_fire(row.recurrence, tz, max(now, row.due_at))
        if await self.store.delivered(reminder_id, next_due, self.clock()) and next_due:
            self._schedule(reminder_id, next_due)

    def _retry_later(self, reminder_id: int) -> None:
        """Back off 2 s, 4 s, 8 s … up to `retry_max_seconds` (no channel, send failed)."""
        if self._stopping:
            return
        failures = self._failures.get(reminder_id, 0) + 1
        self._failures[reminder_id] = failures
        delay = min(self.settings.retry_max_seconds, 2.0 ** failures)
        self._schedule(reminder_id, self.clock() + timedelta(seconds=delay))

"""ReminderService on both stores (SQLite rumi.db, PostgreSQL's rumi schema) and the real
APScheduler-backed Scheduler."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime, timedelta

import pytest

from rumi import messages as msg
from rumi.config import RemindersSettings
from rumi.reminders.service import ReminderError, ReminderService
from rumi.scheduler import Scheduler

CHAT = "42"


class Channel:
    """Stands in for the outbox: records what went out; can be down or fail."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, str]] = []
        self.up = True
        self.fail_next = 0
        self.refused = 0   # deliveries that found it down

    def can_send(self) -> bool:
        self.refused += not self.up
        return self.up

    async def send(self, chat_id: str, text: str) -> bool:
        if self.fail_next:
            self.fail_next -= 1
            return False
        self.sent.append((chat_id, text))
        return True


async def wait_until(condition: Callable[[], bool], timeout: float = 10.0) -> None:
    async def poll() -> None:
        while not condition():
            await asyncio.sleep(0.02)

    await asyncio.wait_for(poll(), timeout)


@pytest.fixture
async def rig(make_store) -> AsyncIterator[Callable[..., object]]:
    made: list[tuple[ReminderService, Scheduler]] = []

    async def make(channel: Channel, **settings: object) -> ReminderService:
        scheduler = Scheduler("UTC")

        async def run_task(chat_id: str, prompt: str) -> str:
            return f"hecho: {prompt}"

        service = ReminderService(make_store(), scheduler,
                                  RemindersSettings(**settings), "Europe/Madrid",
                                  send=channel.send, run_task=run_task,
                                  can_send=channel.can_send)
        await service.start()
        scheduler.start()
        made.append((service, scheduler))
        return service

    yield make
    for service, scheduler in made:
        await service.stop()
        await scheduler.shutdown()
        await service.store.close()


async def test_overdue_at_start_is_sent_once_marked_late(rig, make_store) -> None:
    store = make_store()
    await store.open()
    now = datetime.now(UTC)
    await store.add(CHAT, "tomar la pastilla", is_task=False, recurrence=None,
                    timezone="Europe/Madrid", due_at=now - timedelta(hours=1), now=now)
    await store.close()
    channel = Channel()
    service = await rig(channel)
    await wait_until(lambda: bool(channel.sent))
    assert channel.sent == [(CHAT, msg.REMINDER_FIRED.format(note=msg.REMINDER_LATE,
                                                             text="tomar la pastilla"))]
    await wait_until(lambda: not service.delivering)
    assert await service.list(CHAT) == []


async def test_half_sent_before_a_crash_is_resent_with_a_note(rig, make_store) -> None:
    store = make_store()
    await store.open()
    now = datetime.now(UTC)
    row = await store.add(CHAT, "pagar el alquiler", is_task=False, recurrence=None,
                          timezone="UTC", due_at=now, now=now)
    assert await store.claim(row.id, now) is not None
    assert await store.claim(row.id, now) is None  # claimed once, never twice
    await store.close()  # the process died after claiming, before confirming
    channel = Channel()
    await rig(channel)
    await wait_until(lambda: bool(channel.sent))
    assert channel.sent == [(CHAT, msg.REMINDER_FIRED.format(note=msg.REMINDER_MAYBE_SENT,
                                                             text="pagar el alquiler"))]


async def test_no_channel_keeps_it_until_one_connects(rig) -> None:
    channel = Channel()
    channel.up = False
    service = await rig(channel, retry_max_seconds=1)   # tried again 1 s later, not 2
    row = await service.create(CHAT, "+1s", "estirar", task=False)
    await wait_until(lambda: channel.refused >= 1)   # it fell due and found no channel
    assert channel.sent == []
    assert [r.id for r in await service.list(CHAT)] == [row.id]
    channel.up = True
    await wait_until(lambda: bool(channel.sent))
    assert [text for _, text in channel.sent] == [msg.REMINDER_FIRED.format(note="",
                                                                            text="estirar")]


async def test_failed_send_is_retried_not_lost(rig) -> None:
    channel = Channel()
    channel.fail_next = 1
    service = await rig(channel, retry_max_seconds=1)   # tried again 1 s later, not 2
    await service.create(CHAT, "+1s", "beber agua", task=False)
    await wait_until(lambda: bool(channel.sent))
    assert len(channel.sent) == 1 and "beber agua" in channel.sent[0][1]
    await wait_until(lambda: not service.delivering)
    assert await service.list(CHAT) == []


async def test_recurring_goes_on_to_its_next_time(rig, make_store) -> None:
    store = make_store()
    await store.open()
    now = datetime.now(UTC)
    row = await store.add(CHAT, "regar", is_task=False, recurrence="0 8 * * *",
                          timezone="Europe/Madrid", due_at=now - timedelta(days=3), now=now)
    await store.close()
    channel = Channel()
    service = await rig(channel)
    await wait_until(lambda: bool(channel.sent))
    await wait_until(lambda: not service.delivering)
    [again] = await service.list(CHAT)
    assert again.id == row.id and again.fired_count == 1 and again.state == "pending"
    assert again.due_at > now and again.due_at.astimezone(await service.timezone(CHAT)).hour == 8
    assert len(channel.sent) == 1  # three missed days are one late reminder, not three


async def test_task_runs_and_its_result_is_sent(rig) -> None:
    channel = Channel()
    service = await rig(channel)
    await service.create(CHAT, "+1s", "resume las noticias", task=True)
    await wait_until(lambda: bool(channel.sent))
    text = channel.sent[0][1]
    assert text.startswith("⏰ Tarea programada #1:") and "resume las noticias" in text


async def test_limits_and_bad_input(rig) -> None:
    service = await rig(Channel(), max_per_chat=2, max_tasks_per_chat=1,
                        min_recurrence_minutes=60)
    with pytest.raises(ReminderError, match="minimum is 60"):
        await service.create(CHAT, "cron */5 * * * *", "spam", task=False)
    with pytest.raises(ReminderError, match="Cannot read"):
        await service.create(CHAT, "pasado mañana", "x", task=False)
    with pytest.raises(ReminderError, match="empty"):
        await service.create(CHAT, "+1h", "   ", task=False)
    await service.create(CHAT, "+1h", "uno", task=True)
    with pytest.raises(ReminderError, match="scheduled tasks"):
        await service.create(CHAT, "+1h", "dos", task=True)
    await service.create(CHAT, "daily 08:00", "dos", task=False)
    with pytest.raises(ReminderError, match="/cancel"):
        await service.create(CHAT, "+1h", "tres", task=False)
    assert len(await service.list(CHAT)) == 2
    assert await service.list("other") == []


async def test_cancel_is_per_chat(rig) -> None:
    service = await rig(Channel())
    row = await service.create(CHAT, "+1h", "secreto", task=False)
    assert await service.cancel("other", row.id) is None
    assert (await service.cancel(CHAT, row.id)) is not None
    assert await service.cancel(CHAT, row.id) is None
    assert await service.list(CHAT) == []


async def test_chat_timezone_defaults_and_persists(rig, make_store) -> None:
    service = await rig(Channel())
    assert (await service.timezone(CHAT)).key == "Europe/Madrid"
    await service.set_timezone(CHAT, "America/Lima")
    with pytest.raises(ValueError):
        await service.set_timezone(CHAT, "Nowhere/City")
    again = await rig(Channel())
    assert (await again.timezone(CHAT)).key == "America/Lima"

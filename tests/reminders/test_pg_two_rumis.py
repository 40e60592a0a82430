"""Reminders on a PostgreSQL store shared by two Rumis: each row keeps its bot's
`store.name`, so a Rumi schedules, recovers and sends only its own, each once, also when both
start together; of claims racing for one row one wins; and the app, configured for PostgreSQL, puts
its reminders in `rumi.reminders` (wired by the composition root), where a restart finds them."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import psycopg

from rumi.config import RemindersSettings
from rumi.memory.store.postgres.reminders import PgReminderRows
from rumi.reminders.service import ReminderService
from rumi.reminders.store import ReminderStore
from rumi.scheduler import Scheduler
from tests.pg_server import app_toml
from tests.reminders.test_service import Channel, wait_until

CHAT = "42"


def sql(url: str, statement: str, params: tuple = ()) -> list[tuple]:
    with psycopg.connect(url, autocommit=True) as conn:
        cur = conn.execute(statement, params)
        return cur.fetchall() if cur.description else []


def store_of(url: str, name: str) -> ReminderStore:
    return ReminderStore(PgReminderRows(url, name, lambda: 384))


async def started(url: str, name: str, channel: Channel) -> tuple[ReminderService, Scheduler]:
    scheduler = Scheduler("UTC")

    async def run_task(chat_id: str, prompt: str) -> str:
        return prompt

    service = ReminderService(store_of(url, name), scheduler, RemindersSettings(), "UTC",
                              send=channel.send, run_task=run_task, can_send=lambda: True)
    await service.start()
    scheduler.start()
    return service, scheduler


async def stopped(*pairs: tuple[ReminderService, Scheduler]) -> None:
    for service, scheduler in pairs:
        await service.stop()
        await scheduler.shutdown()
        await service.store.close()


async def test_each_rumi_sends_only_its_own_and_leaves_the_others_alone(pg_url) -> None:
    casa_ch, trabajo_ch = Channel(), Channel()
    casa = await started(pg_url, "casa", casa_ch)
    trabajo = await started(pg_url, "trabajo", trabajo_ch)
    try:
        row = await casa[0].create(CHAT, "+1s", "regar las plantas", task=False)
        assert await trabajo[0].list(CHAT) == []
        assert await trabajo[0].cancel(CHAT, row.id) is None      # not trabajo's to cancel
        assert await trabajo[0].store.claim(row.id, datetime.now(UTC) + timedelta(hours=1)) \
            is None                                               # nor to send
        await wait_until(lambda: bool(casa_ch.sent))
        await wait_until(lambda: not casa[0].delivering)
        assert [text for _, text in casa_ch.sent][0].endswith("regar las plantas")
        assert trabajo_ch.sent == []
        assert sql(pg_url, "SELECT server_code, state, fired_count FROM rumi.reminders") == [
            ("casa", "done", 1)]

        # trabajo restarting does not take back a row casa is sending right now
        now = datetime.now(UTC)
        other = await casa[0].store.add(CHAT, "llamar a mamá", is_task=False, recurrence=None,
                                        timezone="UTC", due_at=now + timedelta(hours=1),
                                        now=now)
        assert await casa[0].store.claim(other.id, now + timedelta(hours=1)) is not None
        await stopped(trabajo)
        trabajo = await started(pg_url, "trabajo", trabajo_ch)
        assert (await casa[0].store.get(other.id)).state == "firing"   # type: ignore[union-attr]
    finally:
        await stopped(casa, trabajo)


async def test_two_rumis_starting_together_each_send_their_own_overdue_once(pg_url) -> None:
    """Both start at once (each recovering and scheduling at start): every overdue reminder
    goes out once, from the Rumi that set it."""
    now = datetime.now(UTC)
    for name in ("casa", "trabajo"):
        store = store_of(pg_url, name)
        await store.open()
        for n in range(3):
            await store.add(CHAT, f"{name} {n}", is_task=False, recurrence=None,
                            timezone="UTC", due_at=now - timedelta(seconds=1), now=now)
        await store.close()
    casa_ch, trabajo_ch = Channel(), Channel()
    casa, trabajo = await asyncio.gather(started(pg_url, "casa", casa_ch),
                                         started(pg_url, "trabajo", trabajo_ch))
    try:
        await wait_until(lambda: len(casa_ch.sent) >= 3 and len(trabajo_ch.sent) >= 3)
        await wait_until(lambda: not casa[0].delivering and not trabajo[0].delivering)
        assert sorted(t.rsplit(" ", 1)[-1] for _, t in casa_ch.sent) == ["0", "1", "2"]
        assert all("casa" in t for _, t in casa_ch.sent)
        assert all("trabajo" in t for _, t in trabajo_ch.sent) and len(trabajo_ch.sent) == 3
        assert sql(pg_url, "SELECT server_code, count(*) FROM rumi.reminders WHERE "
                           "state = 'done' AND fired_count = 1 GROUP BY 1 ORDER BY 1") == [
            ("casa", 3), ("trabajo", 3)]
    finally:
        await stopped(casa, trabajo)


async def test_of_claims_racing_for_one_row_one_wins(pg_url) -> None:
    stores = [store_of(pg_url, "casa") for _ in range(4)]
    for store in stores:
        await store.open()
    try:
        now = datetime.now(UTC)
        row = await stores[0].add(CHAT, "una vez", is_task=False, recurrence=None,
                                  timezone="UTC", due_at=now, now=now)
        won = await asyncio.gather(*(store.claim(row.id, now) for store in stores))
        assert sum(claimed is not None for claimed in won) == 1
    finally:
        for store in stores:
            await store.close()


async def test_the_app_keeps_reminders_in_the_rumi_schema_across_a_restart(
        make_settings, fake_groq, pg_url, data_dir) -> None:
    from rumi.app import build_app

    settings = make_settings(app_toml(fake_groq.base_url), RUMI_STORE_URL=pg_url)
    app = await build_app(settings)
    await app.start()
    try:
        service = app.parts["reminders"]
        row = await service.create(CHAT, "+2h", "sacar la basura", task=False)  # type: ignore[attr-defined]
    finally:
        await app.stop()
    assert not (data_dir / "rumi.db").exists()
    assert sql(pg_url, "SELECT id, server_code, chat_id, text, state FROM rumi.reminders") == [
        (row.id, "casa", CHAT, "sacar la basura", "pending")]
    again = await build_app(settings)
    await again.start()
    try:
        assert [r.text for r in await again.parts["reminders"].list(CHAT)] == [  # type: ignore[attr-defined]
            "sacar la basura"]
        assert f"reminder.{row.id}" in again.scheduler.pending_at()
    finally:
        await again.stop()

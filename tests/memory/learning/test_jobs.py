"""The lifecycle's scheduler jobs, driven by a controllable clock (and once by real ticks)."""

from __future__ import annotations

import asyncio
import time
from datetime import timedelta

from rumi.llm.client import LLMClient
from rumi.memory.install import install_memory_lifecycle
from rumi.memory.store.models import MemoryStatus, MemoryType, NewMemory
from rumi.paths import ChatPaths
from rumi.scheduler import Scheduler
from tests.memory.learning.test_lifecycle import is_extraction
from tests.memory.rig import extraction_json


async def test_jobs_are_registered_once_each(rig):
    assert {"memory.flush", "memory.consolidate", "memory.purge", "memory.daily_rollover",
            "memory.retry_pending"} <= set(rig.scheduler.jobs())


async def test_daily_rollover_writes_events_into_the_day_that_ended(rig, fake_groq, clock):
    # 2026-06-01 10:00 UTC is 12:00 in Madrid
    fake_groq.enqueue_text("¡Qué bien!")
    await rig.say("400", "Hoy terminé la tesis")
    assert await rig.scheduler.run_now("memory.daily_rollover")
    assert not any(is_extraction(r) for r in fake_groq.requests)   # same day: nothing to do
    clock.advance(hours=12, minutes=30)                             # 00:30 on June 2 in Madrid
    fake_groq.enqueue_text(extraction_json(
        [{"type": "fact", "content": "Terminó la tesis", "key": "tesis"}], ["Terminó la tesis"]))
    assert await rig.scheduler.run_now("memory.daily_rollover")
    daily = ChatPaths(rig.settings.data_dir, "400").daily_dir
    assert "Terminó la tesis" in (daily / "2026-06-01.md").read_text(encoding="utf-8")
    assert not (daily / "2026-06-02.md").exists()
    assert [m.key for m in await rig.store.list("400")] == ["tesis"]
    # the same messages are not extracted again at the next session end
    calls = sum(is_extraction(r) for r in fake_groq.requests)
    await rig.say("400", "/reset")
    assert sum(is_extraction(r) for r in fake_groq.requests) == calls


async def test_purge_expires_by_the_clock_and_updates_memory_md(rig, clock):
    short = (await rig.store.save("401", NewMemory(
        "Está de viaje esta semana", type=MemoryType.TEMPORAL,
        expires_at=clock.now + timedelta(days=1)))).memory
    await rig.say("401", "/remember Le gusta viajar")
    await rig.memory.lifecycle.write_markdown("401")
    assert await rig.scheduler.run_now("memory.purge")
    assert (await rig.store.get("401", short.id)).status == MemoryStatus.ACTIVE
    await rig.store.update("401", short.id, type=MemoryType.FACT)   # make it visible in the file
    await rig.memory.lifecycle.write_markdown("401")
    md = ChatPaths(rig.settings.data_dir, "401").memory_md
    assert "de viaje" in md.read_text(encoding="utf-8")
    clock.advance(days=2)
    assert await rig.scheduler.run_now("memory.purge")
    assert (await rig.store.get("401", short.id)).status == MemoryStatus.EXPIRED
    text = md.read_text(encoding="utf-8")
    assert "de viaje" not in text and "Le gusta viajar" in text


async def test_pressure_flush_only_above_threshold_and_only_once(rig, fake_groq):
    session = await rig.sessions.get("402")
    await rig.context.open(session)
    for i in range(6):
        await rig.context.add_message(session, "user" if i % 2 == 0 else "assistant",
                                      f"detalle {i} del plan de mudanza")
    rig.memory.lifecycle.optimize_threshold = 99.0
    assert await rig.scheduler.run_now("memory.flush")
    assert fake_groq.requests == []
    rig.memory.lifecycle.optimize_threshold = 0.001
    fake_groq.enqueue_text(extraction_json(
        [{"type": "decision", "content": "Se mudará en agosto"}]))
    assert await rig.scheduler.run_now("memory.flush")
    assert [m.content for m in await rig.store.list("402")] == ["Se mudará en agosto"]
    assert await rig.scheduler.run_now("memory.flush")
    assert len(fake_groq.requests) == 1                  # already learned: no second call
    assert len(session.items) == 6                       # the flush never drops anything


async def test_consolidation_job_deduplicates_dirty_chats(rig):
    await rig.say("403", "/remember Le encanta la música clásica")
    await rig.store.save("403", NewMemory("Le encanta la música clásica.", importance=0.2))
    assert await rig.scheduler.run_now("memory.consolidate")
    assert [m.content for m in await rig.store.list("403")] == ["Le encanta la música clásica"]
    assert "403" not in rig.memory.lifecycle.dirty


async def test_jobs_tick_on_a_running_scheduler_and_survive_failures(make_settings, fake_groq,
                                                                     store):
    settings = make_settings(
        f'[llm]\napi_key = "k"\nbase_url = "{fake_groq.base_url}"\nmax_retries = 0\n'
        "[memory]\nembeddings_enabled = false\nrollover_check_minutes = 0.004\n"
        "purge_interval_minutes = 0.004\n")
    llm = LLMClient(settings.llm)
    scheduler = Scheduler(settings.timezone)
    calls = {"n": 0}
    real_purge = store.purge_expired

    async def flaky_purge(now=None):
        calls["n"] += 1
        if calls["n"] == 1:
            raise RuntimeError("disk hiccup")
        return await real_purge(now)

    store.purge_expired = flaky_purge
    try:
        await install_memory_lifecycle(settings, llm=llm, store=store, scheduler=scheduler)
        scheduler.start()
        deadline = time.monotonic() + 20
        while scheduler.stats["memory.purge"].runs < 3 or \
                scheduler.stats["memory.daily_rollover"].runs < 2:
            assert time.monotonic() < deadline, scheduler.stats
            await asyncio.sleep(0.05)
        assert scheduler.stats["memory.purge"].failures == 1
        assert "disk hiccup" in scheduler.stats["memory.purge"].last_error
    finally:
        await scheduler.shutdown()
        await llm.close()


async def test_consolidation_state_survives_a_restart(rig, settings, llm, store, clock):
    """Chats changed before a restart are still consolidated, and the last run's time is
    kept on disk (so the next run compares only what changed since)."""
    import json

    await rig.say("404", "/remember Le encanta el jazz")
    await rig.store.save("404", NewMemory("Le encanta el jazz.", importance=0.2))
    restarted = await install_memory_lifecycle(settings, llm=llm, store=store, clock=clock)
    assert await restarted.lifecycle.consolidate() == 1
    assert [m.content for m in await rig.store.list("404")] == ["Le encanta el jazz"]
    state = json.loads((ChatPaths(settings.data_dir, "404").memory_dir
                        / "consolidation.json").read_text(encoding="utf-8"))
    assert state == {"consolidated_at": "2026-06-01T09:59:00+00:00", "dirty": False}
    again = await install_memory_lifecycle(settings, llm=llm, store=store, clock=clock)
    assert await again.lifecycle.consolidate() == 0 and not again.lifecycle.dirty

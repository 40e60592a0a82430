import asyncio
from pathlib import Path

import pytest

from rumi.paths import ChatPaths
from rumi.scheduler import Scheduler


async def test_run_now_counts_and_survives_failures() -> None:
    calls: list[int] = []

    async def flaky() -> None:
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("boom")

    sched = Scheduler()
    sched.add_interval_job("flaky", flaky, minutes=10)
    assert await sched.run_now("flaky") is False
    assert await sched.run_now("flaky") is True
    assert sched.stats["flaky"].runs == 2
    assert sched.stats["flaky"].failures == 1
    assert "boom" in (sched.stats["flaky"].last_error or "")


async def test_interval_job_ticks_after_start_and_stops_on_shutdown() -> None:
    ticked = asyncio.Event()
    count = 0

    async def job() -> None:
        nonlocal count
        count += 1
        ticked.set()

    sched = Scheduler()
    sched.start()
    try:
        sched.add_interval_job("tick", job, seconds=0.05)
        await asyncio.wait_for(ticked.wait(), 5)
    finally:
        await sched.shutdown()
    assert not sched.running
    seen = count
    await asyncio.sleep(0.15)
    assert count == seen


async def test_job_never_overlaps_itself() -> None:
    running = 0
    peak = 0
    release = asyncio.Event()

    async def slow() -> None:
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        await release.wait()
        running -= 1

    sched = Scheduler()
    sched.add_interval_job("slow", slow, minutes=1)
    first = asyncio.create_task(sched._run("slow"))
    await asyncio.sleep(0)
    assert await sched._run("slow") is True  # skipped tick, not a second instance
    release.set()
    await first
    assert peak == 1


def test_duplicate_and_bad_jobs_rejected() -> None:
    async def job() -> None:
        return None

    sched = Scheduler()
    sched.add_interval_job("a", job, seconds=1)
    with pytest.raises(ValueError):
        sched.add_interval_job("a", job, seconds=1)
    with pytest.raises(ValueError):
        sched.add_interval_job("b", job)


def test_chat_paths_layout_and_validation(tmp_path: Path) -> None:
    paths = ChatPaths(tmp_path, "-100987")
    assert paths.root == tmp_path / "chats" / "-100987"
    assert paths.session_json == paths.root / "session.json"
    assert paths.tape == paths.root / ".smma" / "session_log.jsonl"
    assert paths.memory_md == paths.root / "memory" / "MEMORY.md"
    assert paths.snapshots == paths.root / "memory" / "snapshots"
    assert paths.workspace == paths.root / "workspace"
    for bad in ("../etc", "a/b", "", "x" * 65, "a b"):
        with pytest.raises(ValueError):
            ChatPaths(tmp_path, bad)


async def test_one_shot_added_before_start_runs_once_even_when_overdue() -> None:
    from datetime import UTC, datetime, timedelta

    ran: list[str] = []
    done = asyncio.Event()

    async def job(name: str) -> None:
        ran.append(name)
        done.set()

    sched = Scheduler()
    past = datetime.now(UTC) - timedelta(hours=2)
    sched.add_at("late", lambda: job("late"), past)
    sched.add_at("gone", lambda: job("gone"), past)
    assert sched.remove_at("gone") is True and sched.remove_at("gone") is False
    with pytest.raises(ValueError, match="timezone-aware"):
        sched.add_at("naive", lambda: job("naive"), datetime(2030, 1, 1))
    sched.start()
    try:
        await asyncio.wait_for(done.wait(), 10)
        await asyncio.sleep(0.1)
        assert ran == ["late"] and sched.pending_at() == []
    finally:
        await sched.shutdown()

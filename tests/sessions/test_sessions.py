"""SessionManager: locks, queueing, atomic JSON, corrupt files, TTL expiry, lifecycle events."""

from __future__ import annotations

import asyncio
import json
from datetime import timedelta
from pathlib import Path

import pytest

from rumi.config import SessionSettings
from rumi.scheduler import Scheduler
from rumi.sessions.events import SessionEvent
from rumi.sessions.manager import QueueFull, SessionManager
from rumi.sessions.state import ContextItem, utc_now


def manager(data_dir: Path, **kw) -> SessionManager:
    return SessionManager(data_dir, SessionSettings(**kw))


def recorder(mgr: SessionManager, *kinds: str) -> list[SessionEvent]:
    seen: list[SessionEvent] = []

    async def record(event: SessionEvent) -> None:
        seen.append(event)

    for kind in kinds:
        mgr.events.subscribe(kind, record)
    return seen


async def test_session_persists_and_reloads(data_dir: Path) -> None:
    mgr = manager(data_dir)
    events = recorder(mgr, "created")
    session = await mgr.acquire("42")
    assert session is not None
    session.items.append(ContextItem(id=session.allocate_id(), role="user", content="hola ñ"))
    await mgr.release("42")
    raw = json.loads((data_dir / "chats" / "42" / "session.json").read_text("utf-8"))
    assert raw["items"][0]["content"] == "hola ñ"
    assert [e.kind for e in events] == ["created"]

    again = manager(data_dir)
    reloaded = await again.get("42")
    assert reloaded.items[0].content == "hola ñ" and reloaded.next_id == 2
    leftovers = [p.name for p in (data_dir / "chats" / "42").iterdir()]
    assert leftovers == ["session.json"]  # no temp files left behind


async def test_busy_chat_returns_none_and_queues_in_order(data_dir: Path) -> None:
    mgr = manager(data_dir, max_queued_messages=2)
    assert await mgr.acquire("1") is not None
    assert await mgr.acquire("1") is None
    assert await mgr.acquire("2") is not None  # other chats are independent
    order: list[str] = []

    async def queued(tag: str) -> None:
        await mgr.acquire("1", wait=True)
        order.append(tag)
        await mgr.release("1")

    first = asyncio.create_task(queued("a"))
    await asyncio.sleep(0)
    second = asyncio.create_task(queued("b"))
    await asyncio.sleep(0)
    assert mgr.queued("1") == 2
    with pytest.raises(QueueFull):
        await mgr.acquire("1", wait=True)
    await mgr.release("1")
    await asyncio.gather(first, second)
    assert order == ["a", "b"]
    assert not mgr.is_busy("1")


async def test_release_is_idempotent(data_dir: Path) -> None:
    mgr = manager(data_dir)
    await mgr.acquire("1")
    await mgr.release("1")
    await mgr.release("1")  # logged and ignored, never a RuntimeError
    assert await mgr.acquire("1") is not None


async def test_stop_cancels_the_registered_task(data_dir: Path) -> None:
    mgr = manager(data_dir)
    await mgr.acquire("1")
    task = asyncio.create_task(asyncio.sleep(3600))
    mgr.set_task("1", task)
    assert mgr.stop("1") is True
    with pytest.raises(asyncio.CancelledError):
        await task
    assert mgr.stop("1") is False
    await mgr.release("1")


@pytest.mark.parametrize("content", [b"{not json", b"\xff\xfe", b'{"items": []}', b"[1, 2]",
                                     b'{"chat_id": "99"}'])
async def test_corrupt_session_is_moved_aside(data_dir: Path, content: bytes,
                                              caplog: pytest.LogCaptureFixture) -> None:
    folder = data_dir / "chats" / "7"
    folder.mkdir(parents=True)
    (folder / "session.json").write_bytes(content)
    mgr = manager(data_dir)
    events = recorder(mgr, "created")
    session = await mgr.get("7")
    assert session.chat_id == "7" and session.items == []
    aside = [p for p in folder.iterdir() if p.name.startswith("session.json.corrupt-")]
    assert len(aside) == 1 and aside[0].read_bytes() == content
    assert "corrupt" in caplog.text
    assert [e.kind for e in events] == ["created"]
    assert json.loads((folder / "session.json").read_text())["chat_id"] == "7"


async def test_ttl_cleanup_job_ends_idle_sessions(data_dir: Path) -> None:
    mgr = manager(data_dir, ttl_minutes=1)
    events = recorder(mgr, "expired", "ended")
    await mgr.get("old")
    await mgr.get("fresh")
    busy = await mgr.acquire("busy")
    assert busy is not None
    future = utc_now() + timedelta(minutes=2)
    (await mgr.get("fresh")).touch()
    sched = Scheduler()
    sched.add_interval_job("sessions.cleanup",
                           lambda: mgr.expire_idle(now=future), minutes=1)
    assert await sched.run_now("sessions.cleanup")
    ended = {e.chat_id for e in events if e.kind == "ended"}
    assert ended == {"old", "fresh"}  # both idle > 1 min at `future`; the busy one is kept
    assert [e.kind for e in events if e.chat_id == "old"] == ["expired", "ended"]
    assert events[0].session is not None  # subscribers can still read what is ending
    assert not (data_dir / "chats" / "old" / "session.json").exists()
    assert mgr.is_busy("busy")
    await mgr.release("busy")


async def test_stored_session_expired_while_away(data_dir: Path) -> None:
    mgr = manager(data_dir, ttl_minutes=1)
    session = await mgr.get("5")
    session.last_active = "2020-01-01T00:00:00Z"
    await mgr.save(session)
    later = manager(data_dir, ttl_minutes=1)
    events = recorder(later, "expired", "ended", "created")
    fresh = await later.get("5")
    assert [e.kind for e in events] == ["expired", "ended", "created"]
    assert fresh.last_active != "2020-01-01T00:00:00Z"


async def test_failing_subscriber_never_breaks_the_flow(data_dir: Path,
                                                        caplog: pytest.LogCaptureFixture) -> None:
    mgr = manager(data_dir)

    async def bad(event: SessionEvent) -> None:
        raise RuntimeError("subscriber bug")

    mgr.events.subscribe("reset", bad)
    seen = recorder(mgr, "ended")
    await mgr.get("3")
    assert await mgr.end("3", "reset") is True
    assert [e.reason for e in seen] == ["reset"]
    assert "subscriber bug" in caplog.text
    with pytest.raises(ValueError):
        mgr.events.subscribe("nonsense", bad)


async def test_invalid_chat_id_rejected(data_dir: Path) -> None:
    mgr = manager(data_dir)
    with pytest.raises(ValueError):
        await mgr.get("../../etc")

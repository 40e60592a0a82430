"""Learning on every session-ending path and before compaction (on the real engine)."""

from __future__ import annotations

import asyncio
import contextlib
import json
from datetime import UTC, datetime, timedelta

from rumi.memory.store.models import MemoryType, NewMemory
from rumi.paths import ChatPaths
from tests.memory.backends import sqlite_only
from tests.memory.rig import extraction_json

FACT = {"type": "fact", "content": "Vive en Lima", "key": "ciudad", "importance": 0.8}
PREF = {"type": "preference", "content": "Prefiere el té al café", "importance": 0.6}


def is_extraction(request: dict) -> bool:
    return request.get("response_format") == {"type": "json_object"} and \
        "long-term memories" in request["messages"][0]["content"]


async def test_reset_extracts_then_ends_session_and_stops_sandbox(rig, fake_groq):
    fake_groq.enqueue_text("¡Qué bien!")
    await rig.say("100", "Me mudé a Lima y prefiero el té")
    fake_groq.enqueue_text(extraction_json([FACT, PREF], ["Contó que se mudó a Lima"]))
    reply = await rig.say("100", "/reset")
    assert "aprendí 2" in reply.text.lower()
    assert rig.stopped_sandboxes == ["100"]
    memories = await rig.store.list("100")
    assert {m.content for m in memories} == {"Vive en Lima", "Prefiere el té al café"}
    assert [r for r in fake_groq.requests if is_extraction(r)][0]["messages"][1][
        "content"].count("[#") == 2
    paths = ChatPaths(rig.settings.data_dir, "100")
    log = (paths.daily_dir / "2026-06-01.md").read_text(encoding="utf-8")
    assert "Contó que se mudó a Lima" in log
    md = paths.memory_md.read_text(encoding="utf-8")
    assert "**ciudad**: Vive en Lima" in md and "Prefiere el té al café" in md
    # the `ended` subscriber does not extract the same messages a second time
    assert sum(is_extraction(r) for r in fake_groq.requests) == 1
    assert not paths.session_json.exists()


async def test_ttl_expiry_extracts(rig, fake_groq, clock):
    fake_groq.enqueue_text("Anotado.")
    await rig.say("101", "Trabajo como enfermera")
    fake_groq.enqueue_text(extraction_json(
        [{"type": "fact", "content": "Trabaja como enfermera", "key": "trabajo"}]))
    ended = await rig.sessions.expire_idle(datetime.now(UTC) + timedelta(days=2))
    assert ended == ["101"]
    assert [m.key for m in await rig.store.list("101")] == ["trabajo"]


async def test_clear_snapshots_and_extracts_and_keeps_long_term_memory(rig, fake_groq):
    await rig.store.save("102", NewMemory(content="Tiene un perro", type=MemoryType.FACT))
    fake_groq.enqueue_text("Perfecto.")
    await rig.say("102", "Vamos a planear el viaje a Cusco")
    fake_groq.enqueue_text("Viaje a Cusco")                        # slug
    fake_groq.enqueue_text(extraction_json([{"type": "decision",
                                             "content": "Decidió viajar a Cusco en julio"}]))
    events = []

    async def on_cleared(event):
        events.append(event)

    rig.sessions.events.subscribe("cleared", on_cleared)
    reply = await rig.say("102", "/clear")
    assert "snapshots/2026-06-01-viaje-a-cusco.md" in reply.text
    assert [i.content for i in events[0].data["removed"]][0] == "Vamos a planear el viaje a Cusco"
    session = await rig.sessions.get("102")
    assert session.items == []
    snap = ChatPaths(rig.settings.data_dir, "102").snapshots / "2026-06-01-viaje-a-cusco.md"
    assert "Vamos a planear el viaje a Cusco" in snap.read_text(encoding="utf-8")
    contents = {m.content for m in await rig.store.list("102")}
    assert contents == {"Tiene un perro", "Decidió viajar a Cusco en julio"}


async def test_shutdown_defers_open_sessions_and_the_next_start_learns_them(rig, fake_groq):
    """Issue 27: a stop never waits for the model; the pending file keeps what to learn."""
    fake_groq.enqueue_text("Vale.")
    await rig.say("103", "Mi hija se llama Ana")
    asked = len(fake_groq.requests)
    await rig.memory.stop()
    assert len(fake_groq.requests) == asked
    [record] = await rig.memory.lifecycle.pending("103")
    assert "Mi hija se llama Ana" in record["transcript"] and record["reason"] == "shutdown"
    session = await rig.sessions.get("103")
    assert session.metadata["memory"]["learned"] == [i.id for i in session.items
                                                     if i.role in ("user", "assistant")]
    fake_groq.enqueue_text(extraction_json(
        [{"type": "fact", "content": "Su hija se llama Ana", "key": "hija"}]))
    assert await rig.memory.lifecycle.retry_pending() == 1
    assert [m.content for m in await rig.store.list("103")] == ["Su hija se llama Ana"]
    assert await rig.memory.lifecycle.pending("103") == []


async def test_an_extraction_cut_by_a_stop_stays_pending(rig, fake_groq):
    fake_groq.enqueue_text("Vale.")
    await rig.say("105", "Trabajo en una panadería")
    session = await rig.sessions.get("105")
    fake_groq.enqueue_text(extraction_json([]), delay=30)
    learning = asyncio.create_task(rig.memory.lifecycle.learn(
        "105", session.items, reason="ended", session=session))
    await wait_for_requests(fake_groq, 2)
    learning.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await learning
    [record] = await rig.memory.lifecycle.pending("105")
    assert "Trabajo en una panadería" in record["transcript"]


async def test_a_retry_cut_midway_keeps_only_what_it_did_not_save(rig, fake_groq):
    path = rig.memory.lifecycle.deferred.path("106")
    path.parent.mkdir(parents=True, exist_ok=True)
    records = [{"at": "2026-06-01T10:00:00", "reason": "shutdown", "error": "",
                "first_id": n, "last_id": n, "transcript": f"[#{n}] user: dato {n}"}
               for n in (1, 2)]
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    fake_groq.enqueue_text(extraction_json([{"type": "fact", "content": "Dato uno"}]))
    fake_groq.enqueue_text(extraction_json([]), delay=30)
    retry = asyncio.create_task(rig.memory.lifecycle.retry_pending())
    await wait_for_requests(fake_groq, 2)
    retry.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await retry
    left = await rig.memory.lifecycle.pending("106")
    assert [r["first_id"] for r in left] == [2]
    assert [m.content for m in await rig.store.list("106")] == ["Dato uno"]


async def wait_for_requests(fake_groq, count: int) -> None:  # noqa: ANN001
    async def poll() -> None:
        while len(fake_groq.requests) < count:
            await asyncio.sleep(0.02)

    await asyncio.wait_for(poll(), 30)


async def test_transient_states_are_not_stored(rig, fake_groq):
    fake_groq.enqueue_text("Descansa.")
    await rig.say("104", "Estoy cansadísimo hoy")
    fake_groq.enqueue_text(extraction_json(
        [{"type": "fact", "content": "Está cansado", "transient": True}]))
    await rig.say("104", "/reset")
    assert await rig.store.list("104") == []


async def test_failed_extraction_is_recorded_pending_and_retried(rig, fake_groq):
    fake_groq.enqueue_text("Entendido.")
    await rig.say("105", "Mi color favorito es el verde")
    fake_groq.enqueue_text("no json")
    fake_groq.enqueue_text("still no json")
    await rig.say("105", "/reset")
    pending = await rig.memory.lifecycle.pending("105")
    assert len(pending) == 1 and "color favorito" in pending[0]["transcript"]
    assert await rig.store.list("105") == []
    fake_groq.enqueue_text(extraction_json(
        [{"type": "preference", "content": "Su color favorito es el verde"}]))
    assert await rig.scheduler.run_now("memory.retry_pending")
    assert [m.content for m in await rig.store.list("105")] == ["Su color favorito es el verde"]
    assert await rig.memory.lifecycle.pending("105") == []


async def _fill(rig, chat_id: str, n: int):
    session = await rig.sessions.get(chat_id)
    await rig.context.open(session)
    for i in range(n):
        role = "user" if i % 2 == 0 else "assistant"
        await rig.context.add_message(session, role, f"mensaje {i} sobre el proyecto Quipu")
    return session


async def test_flush_runs_before_compaction_and_saves_first(rig, fake_groq):
    session = await _fill(rig, "106", 20)
    order: list[str] = []

    def responder(body):
        if is_extraction(body):
            order.append("extract")
            return {"role": "assistant", "content": extraction_json(
                [{"type": "decision", "content": "Usará SQLite en Quipu"}], ["Trabajó en Quipu"])}
        order.append("summary")
        return {"role": "assistant", "content": "Resumen: hablaron de Quipu."}

    fake_groq.responder = responder
    result = await rig.context.compact(session)
    assert result.compacted and order[0] == "extract" and "summary" in order
    assert [m.content for m in await rig.store.list("106")] == ["Usará SQLite en Quipu"]
    assert "Trabajó en Quipu" in (ChatPaths(rig.settings.data_dir, "106").daily_dir
                                  / "2026-06-01.md").read_text(encoding="utf-8")
    assert set(result.removed_ids) <= set(session.metadata["memory"]["learned"])
    # ending the session later extracts only what was not flushed (no summaries, no repeats)
    fake_groq.responder = None
    fake_groq.enqueue_text(extraction_json())
    await rig.sessions.end("106", "reset")
    last = [r for r in fake_groq.requests if is_extraction(r)][-1]["messages"][1]["content"]
    assert "[#11]" in last and "[#5]" not in last and "Resumen" not in last


async def test_failing_save_cancels_compaction(rig, fake_groq):
    session = await _fill(rig, "107", 20)
    before = [i.id for i in session.items]
    fake_groq.enqueue_text("not json")
    fake_groq.enqueue_text("not json either")
    result = await rig.context.compact(session)
    assert not result.compacted and "extraction failed" in result.blocked_reason
    assert [i.id for i in session.items] == before
    assert len(fake_groq.requests) == 2  # no summary call: nothing was dropped
    tape = ChatPaths(rig.settings.data_dir, "107").tape.read_text(encoding="utf-8")
    assert all(json.dumps(f"mensaje {i} sobre", ensure_ascii=False)[1:-1] in tape
               for i in range(20))
    assert len(await rig.memory.lifecycle.pending("107")) == 1


@sqlite_only  # locks rumi.db from another connection
async def test_store_write_failure_cancels_compaction(rig, fake_groq):
    """A real save failure (the database is locked by another writer) blocks compaction."""
    import sqlite3

    session = await _fill(rig, "108", 20)
    before = [i.id for i in session.items]
    fake_groq.enqueue_text(extraction_json([{"type": "fact", "content": "Usa Arch Linux"}]))
    blocker = sqlite3.connect(rig.store.db_path, timeout=0)
    try:
        blocker.execute("BEGIN EXCLUSIVE")
        result = await rig.context.compact(session)
    finally:
        blocker.rollback()
        blocker.close()
    assert not result.compacted and "saving memories failed" in result.blocked_reason
    assert [i.id for i in session.items] == before
    assert not any(not is_extraction(r) for r in fake_groq.requests)   # no summary call
    assert len(await rig.memory.lifecycle.pending("108")) == 1


async def test_session_that_expired_while_rumi_was_away_is_learned_on_load(rig, fake_groq):
    from rumi.sessions.state import ContextItem, SessionState

    old = SessionState(chat_id="109", last_active="2020-01-01T00:00:00Z", next_id=3,
                       items=[ContextItem(id=1, role="user", content="Soy vegetariana"),
                              ContextItem(id=2, role="assistant", content="Lo tendré en cuenta")])
    path = ChatPaths(rig.settings.data_dir, "109").session_json
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(old.to_dict()), encoding="utf-8")
    fake_groq.enqueue_text(extraction_json(
        [{"type": "preference", "content": "Es vegetariana", "importance": 0.9}]))
    fresh = await rig.sessions.get("109")
    assert fresh.items == []
    assert [m.content for m in await rig.store.list("109")] == ["Es vegetariana"]


def _extracted_ids(fake_groq) -> set[int]:
    import re

    return {int(n) for r in fake_groq.requests if is_extraction(r)
            for n in re.findall(r"\[#(\d+)\]", r["messages"][1]["content"])}


async def _fill_long(rig, chat_id: str, n: int = 60):
    """`n` messages of ~1,000 characters each: far more than one extraction transcript."""
    session = await rig.sessions.get(chat_id)
    await rig.context.open(session)
    for i in range(n):
        role = "user" if i % 2 == 0 else "assistant"
        await rig.context.add_message(session, role, f"mensaje {i}: " + "palabra " * 124)
    return session


async def test_reset_of_a_long_session_extracts_every_message(rig, fake_groq):
    session = await _fill_long(rig, "110")
    ids = {i.id for i in session.items if i.role in ("user", "assistant")}
    fake_groq.responder = lambda body: {"role": "assistant", "content": extraction_json()}
    await rig.sessions.end("110", "reset")
    calls = [r for r in fake_groq.requests if is_extraction(r)]
    assert len(calls) >= 3 and _extracted_ids(fake_groq) == ids
    assert all(len(r["messages"][1]["content"]) < 25_000 for r in calls)


async def test_failed_window_alone_is_pending(rig, fake_groq):
    """Windows that saved are learned; only the failing window is recorded for a retry."""
    session = await _fill_long(rig, "111")
    state = {"n": 0}
    topics = ["ajedrez", "montañismo", "cerámica", "astronomía", "repostería", "violín"]

    def responder(body):
        state["n"] += 1
        if state["n"] in (1, 2):      # first window: bad JSON twice
            return {"role": "assistant", "content": "no json"}
        return {"role": "assistant", "content": extraction_json(
            [{"type": "fact", "content": f"Practica {topics[state['n'] % 6]}"}])}

    fake_groq.responder = responder
    result = await rig.memory.lifecycle.learn("111", session.items, reason="reset",
                                              session=session)
    [pending] = await rig.memory.lifecycle.pending("111")
    assert result.pending and result.saved >= 2
    assert pending["first_id"] == session.items[0].id
    assert pending["last_id"] < session.items[-1].id
    assert f"[#{pending['first_id']}]" in pending["transcript"]


async def test_compaction_of_a_long_range_extracts_every_removed_message(rig, fake_groq):
    session = await _fill_long(rig, "112")

    def responder(body):
        if is_extraction(body):
            return {"role": "assistant", "content": extraction_json()}
        return {"role": "assistant", "content": "Resumen breve."}

    fake_groq.responder = responder
    result = await rig.context.compact(session)
    assert result.compacted
    assert set(result.removed_ids) <= _extracted_ids(fake_groq)
    assert set(result.removed_ids) <= set(session.metadata["memory"]["learned"])


async def test_clear_learns_before_it_empties_the_context(rig, fake_groq):
    """The active history is dropped only once its content was extracted (seed 004)."""
    session = await _fill(rig, "113", 6)
    seen: list[int] = []

    def responder(body):
        if is_extraction(body):
            seen.append(len(session.items))
            return {"role": "assistant", "content": extraction_json(
                [{"type": "decision", "content": "Publicará Quipu en enero"}])}
        return {"role": "assistant", "content": "Quipu"}

    fake_groq.responder = responder
    snapshot, result, removed = await rig.memory.lifecycle.clear(session)
    assert seen == [6] and result.saved == 1 and len(removed) == 6
    assert session.items == [] and session.metadata["memory"]["learned"] == []

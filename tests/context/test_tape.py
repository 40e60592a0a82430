"""The tape: append-only, durable, ids continue across sessions, torn last line tolerated."""

from __future__ import annotations

import json

from rumi.context import ContextEngine
from rumi.context.tape import Tape
from rumi.sessions.state import SessionState
from tests.prompt_shape import automatic


async def test_every_message_is_one_json_line(engine: ContextEngine,
                                              session: SessionState) -> None:
    await engine.add_message(session, "user", "hola")
    await engine.add_message(session, "assistant", "¿qué tal?")
    lines = engine.runtime(session).paths.tape.read_text(encoding="utf-8").splitlines()
    records = [json.loads(line) for line in lines]
    assert [r["id"] for r in records] == [1, 2]
    for record, item in zip(records, session.items, strict=True):
        assert set(record) >= {"id", "timestamp", "role", "content", "token_count"}
        assert record["content"] == item.content
        assert record["token_count"] == item.token_count > 0


async def test_ids_continue_after_the_tape(engine: ContextEngine, session: SessionState) -> None:
    for n in range(3):
        await engine.add_message(session, "user", f"m{n}")
    fresh = SessionState(chat_id=session.chat_id)
    other_engine = ContextEngine(engine.settings, engine.tokens, None)
    await other_engine.open(fresh)
    item = await other_engine.add_message(fresh, "user", "nueva sesión")
    assert item.id == 4
    assert (await other_engine.original(fresh, 1))["content"] == "m0"


async def test_torn_last_line_is_tolerated_and_reported(engine: ContextEngine,
                                                        session: SessionState) -> None:
    for n in range(3):
        await engine.add_message(session, "user", f"mensaje {n}")
    path = engine.runtime(session).paths.tape
    with open(path, "ab") as fh:  # a crash in the middle of a write
        fh.write(b'{"id": 4, "timestamp": "2026-01-01T00:00:00Z", "role": "us')
    fresh = SessionState(chat_id=session.chat_id)
    restarted = ContextEngine(engine.settings, engine.tokens, None)
    await restarted.open(fresh)
    rt = restarted.runtime(fresh)
    assert rt.tape.health.torn_tail
    assert (await restarted.original(fresh, 2))["content"] == "mensaje 1"
    assert await restarted.original(fresh, 4) is None
    assert "Registro inmutable con líneas dañadas" in automatic(await restarted.build(fresh))
    item = await restarted.add_message(fresh, "user", "después del corte")
    assert item.id == 4
    raw = path.read_bytes()
    lines = raw.split(b"\n")
    assert lines[-1] == b""
    assert lines[3].startswith(b'{"id": 4, "timestamp"') and lines[4].startswith(b'{"id":4,')
    assert (await restarted.original(fresh, 4))["content"] == "después del corte"
    again = Tape(path)
    assert (await again.get(4))["content"] == "después del corte"
    assert again.health.bad_lines == [4] and not again.health.torn_tail
    assert [r.get("id") for r in await again.records()] == [1, 2, 3, 4]


async def test_tape_is_never_rewritten(engine: ContextEngine, session: SessionState,
                                       calls) -> None:
    await engine.add_message(session, "user", "uno")
    await engine.add_message(session, "user", "dos")
    path = engine.runtime(session).paths.tape
    before = path.read_bytes()
    await calls("prune_messages", message_ids=[1])
    await calls("summarize_range", start_id=2, end_id=2, summary_text="dos")
    await engine.clear(session)
    after = path.read_bytes()
    assert after.startswith(before) and len(after) > len(before)
    events = [json.loads(line).get("event") for line in after[len(before):].splitlines()]
    assert events == ["prune", None, "summarize", "clear"]


async def test_new_session_object_for_same_chat_never_reuses_ids(
        engine: ContextEngine, session: SessionState) -> None:
    await engine.add_message(session, "user", "antes del reset")
    await engine.add_message(session, "assistant", "vale")
    replacement = SessionState(chat_id=session.chat_id)  # e.g. after /reset or TTL expiry
    item = await engine.add_message(replacement, "user", "después del reset")
    assert item.id == 3
    assert (await engine.original(replacement, 1))["content"] == "antes del reset"

"""Pins by Telegram reply, /status, /clear, and the engine driven by the real agent loop."""

from __future__ import annotations

import json

from rumi.context import ContextEngine, TokenCounter
from rumi.context.builder import strip_id_prefix, validate_messages
from rumi.sessions.state import SessionState
from tests.context.conftest import wired_loop
from tests.prompt_shape import automatic


async def test_pin_by_channel_message_and_unpin(engine: ContextEngine, session: SessionState,
                                               calls) -> None:
    user = await engine.add_message(session, "user", "la clave es 1234", channel_message_id=77)
    reply = await engine.add_message(session, "assistant", "anotado")
    assert await engine.link_channel_message(session, reply.id, 78)
    assert engine.find_item_by_channel_message(session, 77) is user
    assert engine.find_item_by_channel_message(session, 78) is reply
    assert engine.find_item_by_channel_message(session, 79) is None
    assert await engine.pin(session, user.id)
    assert not await engine.pin(session, 999)
    refused = await calls("prune_messages", message_ids=[user.id])
    assert refused.is_error and f"#{user.id}" in refused.content
    assert await engine.unpin(session, user.id)
    assert not (await calls("prune_messages", message_ids=[user.id])).is_error
    events = [r["event"] for r in await engine.runtime(session).tape.records() if "event" in r]
    assert events == ["pin", "unpin", "prune"]


async def test_status_text_shows_dashboard_and_sections(engine: ContextEngine,
                                                        session: SessionState) -> None:
    await engine.add_message(session, "user", "hola")
    await engine.build(session)
    text = engine.status_text(session)
    assert "ESTADO DE MEMORIA:" in text and "Presión de memoria: BAJA" in text
    for line in ("1. Identidad y reglas SMMA:", "3. Perfil del usuario:",
                 "6. Notas del agente:", "7. Log de acciones:", "8. Espacio de trabajo:"):
        assert line in text
    assert "/ 2.000 tokens · .smma/identity.md" in text


async def test_clear_empties_sections_7_8_and_keeps_the_tape(engine: ContextEngine,
                                                             session: SessionState) -> None:
    for n in range(4):
        await engine.add_message(session, "user", f"m{n}")
    removed = await engine.clear(session)
    assert [i.id for i in removed] == [1, 2, 3, 4] and session.items == []
    assert (await engine.original(session, 3))["content"] == "m2"
    nxt = await engine.add_message(session, "user", "después")
    assert nxt.id == 5
    assert validate_messages(await engine.build(session)) == []


def test_strip_id_prefix() -> None:
    assert strip_id_prefix("[#12] Hola") == "Hola"
    assert strip_id_prefix("  [#3] [#4] Hola [#5]") == "Hola [#5]"
    assert strip_id_prefix("Sin prefijo") == "Sin prefijo"


async def test_agent_loop_uses_the_engine_end_to_end(fake_groq, make_settings,
                                                     counter: TokenCounter) -> None:
    settings = make_settings(f'[llm]\napi_key = "gsk_test"\nbase_url = "{fake_groq.base_url}"\n'
                             "max_retries = 0\n")
    llm, engine, loop = wired_loop(settings, counter)
    session = SessionState(chat_id="loop")
    await engine.open(session)
    fake_groq.enqueue_tool_call("edit_section", {"section_name": "current_task",
                                                 "new_content": "## Tarea\n- Objetivo: pizza"})
    fake_groq.enqueue_text("Anotado en la tarea.")
    try:
        result = await loop.run(session, "Apunta que el objetivo es pedir pizza")
        fake_groq.enqueue_tool_call("prune_messages", {"message_ids": [2]})
        fake_groq.enqueue_text("Listo.")
        second = await loop.run(session, "Limpia la llamada anterior")
    finally:
        await llm.close()
    assert result.text == "Anotado en la tarea." and second.text == "Listo."
    for request in fake_groq.requests:
        assert validate_messages(request["messages"]) == []
        assert "ESTADO DE MEMORIA:" in automatic(request)
        assert "ESTADO DE MEMORIA:" not in request["messages"][0]["content"]
    last_system = fake_groq.requests[-1]["messages"][0]["content"]
    assert "Objetivo: pizza" in last_system
    assert [i.id for i in session.items] == [1, 4, 5, 6, 7, 8]
    tape = engine.runtime(session).paths.tape.read_text().splitlines()
    assert [json.loads(line).get("id") for line in tape if '"event"' not in line] == \
        [1, 2, 3, 4, 5, 6, 7, 8]
    assert counter.calibration(settings.llm.model).samples == 4


async def test_status_before_any_build_shows_real_sizes(engine: ContextEngine,
                                                        session: SessionState) -> None:
    await engine.add_message(session, "user", "hola " * 40)
    text = engine.status_text(session)
    identity = engine.runtime(session).files.sections["identity"].tokens
    assert identity > 500
    dotted = f"{identity:,}".replace(",", ".")   # es writes 2.000, as every other number
    assert f"1. Identidad y reglas SMMA: {dotted} / 2.000 tokens" in text
    log_tokens = f"{session.items[0].token_count:,}".replace(",", ".")
    assert f"7. Log de acciones: {log_tokens} / 20.000 tokens" in text

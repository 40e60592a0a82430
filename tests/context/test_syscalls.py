"""The six system calls through a real ToolRegistry: success and every refusal path."""

from __future__ import annotations

import json
import os

from rumi.context import ContextEngine
from rumi.context.builder import validate_messages
from rumi.sessions.state import SessionState
from tests.context.conftest import Calls, exchange, tool_call
from tests.prompt_shape import automatic


def ids(session: SessionState) -> list[int]:
    return [i.id for i in session.items]


async def tape_events(engine: ContextEngine, session: SessionState, name: str) -> list[dict]:
    records = await engine.runtime(session).tape.records()
    return [r for r in records if r.get("event") == name]


async def conversation(engine: ContextEngine, session: SessionState) -> None:
    """#1 user, #2-#3 call+result, #4 assistant, #5 user, #6-#8 two calls+results, #9."""
    await engine.add_message(session, "user", "primera petición")
    await exchange(engine, session, 1)
    await engine.add_message(session, "assistant", "hecho el primer paso")
    await engine.add_message(session, "user", "segunda petición")
    await exchange(engine, session, 2, calls=2)
    await engine.add_message(session, "assistant", "hecho el segundo paso")
    assert ids(session) == list(range(1, 10))


async def test_prune_takes_call_and_result_together(engine, session, calls: Calls) -> None:
    await conversation(engine, session)
    result = await calls("prune_messages", message_ids=[3, 7])
    assert not result.is_error, result.content
    assert ids(session) == [1, 4, 5, 9]
    assert "#2" in result.content and "#6" in result.content and "#8" in result.content
    assert validate_messages(await engine.build(session)) == []
    [evt] = await tape_events(engine, session, "prune")
    assert evt["ids"] == [2, 3, 6, 7, 8] and evt["requested"] == [3, 7]


async def test_prune_refuses_pinned_and_unknown(engine, session, calls: Calls) -> None:
    await conversation(engine, session)
    await engine.pin(session, 3)
    result = await calls("prune_messages", message_ids=[2, 4, 99])
    assert not result.is_error
    assert "fijados (pinned): #2" in result.content
    assert "#99" in result.content and "No están en el contexto" in result.content
    assert ids(session) == [1, 2, 3, 5, 6, 7, 8, 9]
    only_refused = await calls("prune_messages", message_ids=[3, 1234])
    assert only_refused.is_error and "No se podó nada" in only_refused.content
    assert "#3" in only_refused.content and "#1234" in only_refused.content
    assert ids(session) == [1, 2, 3, 5, 6, 7, 8, 9]


async def test_prune_refuses_call_in_flight(engine, session, calls: Calls) -> None:
    await engine.add_message(session, "user", "hola")
    call = tool_call("live", name="prune_messages", arguments={"message_ids": [2]})
    await engine.add_message(session, "assistant", None, tool_calls=[call])
    result = await calls("prune_messages", message_ids=[2])
    assert result.is_error and "llamada en curso: #2" in result.content
    await engine.add_message(session, "tool", result.content, tool_call_id="live")
    assert validate_messages(await engine.build(session)) == []


async def test_summarize_range_widens_to_whole_groups(engine, session, calls: Calls) -> None:
    await conversation(engine, session)
    result = await calls("summarize_range", start_id=3, end_id=6,
                         summary_text="Primer paso hecho; segundo pedido.")
    assert not result.is_error, result.content
    summary = session.items[1]
    assert summary.kind == "summary" and summary.id == 10
    assert summary.covers == [2, 3, 4, 5, 6, 7, 8]
    assert ids(session) == [1, 10, 9]
    messages = await engine.build(session)
    assert validate_messages(messages) == []
    # system, automatic message, #1 (the person's message left), then the summary
    assert messages[3]["content"].startswith("[#10] (resumen de #2–#8) Primer paso")
    [evt] = await tape_events(engine, session, "summarize")
    assert evt["summary_id"] == 10 and evt["ids"] == [2, 3, 4, 5, 6, 7, 8]


async def test_summarize_keeps_pinned_and_lists_them(engine, session, calls: Calls) -> None:
    await conversation(engine, session)
    await engine.pin(session, 5)
    result = await calls("summarize_range", start_id=1, end_id=9, summary_text="Resumen.")
    assert not result.is_error
    assert "fijados (pinned): #5" in result.content
    assert ids(session) == [10, 5]
    assert session.items[0].covers == [1, 2, 3, 4, 6, 7, 8, 9]


async def test_summarize_refusals(engine, session, calls: Calls) -> None:
    await conversation(engine, session)
    unknown = await calls("summarize_range", start_id=1, end_id=77, summary_text="x")
    assert unknown.is_error and "#77" in unknown.content
    await engine.pin(session, 1)
    pinned = await calls("summarize_range", start_id=1, end_id=1, summary_text="x")
    assert pinned.is_error and "#1" in pinned.content
    longer = await calls("summarize_range", start_id=4, end_id=5,
                         summary_text="palabra " * 400)
    assert longer.is_error and "más largo" in longer.content
    empty = await calls("summarize_range", start_id=4, end_id=5, summary_text="   ")
    assert empty.is_error
    assert ids(session) == list(range(1, 10))


async def test_recall_original_exact_and_unknown(engine, session, calls: Calls) -> None:
    text = 'línea 1\n  "comillas" \\ barra\ttab ☃\n'
    await engine.add_message(session, "user", text)
    await calls("prune_messages", message_ids=[1])
    result = await calls("recall_original", message_id=1)
    assert not result.is_error
    assert result.content.endswith("\n" + text)
    assert "ya no está en el contexto activo" in result.content
    assert (await engine.original(session, 1))["content"] == text
    missing = await calls("recall_original", message_id=500)
    assert missing.is_error and "#500" in missing.content


async def test_save_and_load_from_disk(engine, session, calls: Calls) -> None:
    saved = await calls("save_to_disk", file_name="decisiones.md", content="# Decisiones\n- A")
    assert not saved.is_error and "creado" in saved.content
    path = engine.runtime(session).paths.smma / "decisiones.md"
    assert path.read_text() == "# Decisiones\n- A"
    again = await calls("save_to_disk", file_name="decisiones.md", content="# Decisiones\n- B")
    assert "actualizado" in again.content
    loaded = await calls("load_from_disk", file_name="decisiones.md")
    assert not loaded.is_error and loaded.content.endswith("# Decisiones\n- B")
    [first, second] = await tape_events(engine, session, "save_to_disk")
    assert first["previous"] is None and second["previous"] == "# Decisiones\n- A"
    assert await tape_events(engine, session, "load_from_disk")
    missing = await calls("load_from_disk", file_name="nada.md")
    assert missing.is_error and "decisiones.md" in missing.content


async def test_disk_names_are_confined(engine, session, calls: Calls) -> None:
    outside = engine.runtime(session).paths.root
    for bad in ("../escape.md", "a/b.md", "/etc/passwd.md", "..\\x.md", ".oculto.md",
                "notas.txt", "session_log.jsonl", "..md", "x.md/", "", "a" * 80 + ".md"):
        for name in ("save_to_disk", "load_from_disk"):
            kwargs = {"file_name": bad}
            if name == "save_to_disk":
                kwargs["content"] = "x"
            await engine.add_message(session, "user", "otra")  # resets the loop guard
            result = await calls(name, **kwargs)
            assert result.is_error, (name, bad)
            assert "no válido" in result.content
    assert not (outside / "escape.md").exists()
    identity = await calls("save_to_disk", file_name="identity.md", content="soy otro")
    assert identity.is_error and "solo lectura" in identity.content
    upper = await calls("save_to_disk", file_name="IDENTITY.md", content="soy otro")
    assert upper.is_error


async def test_save_to_disk_size_limit(engine, session, calls: Calls) -> None:
    limit = engine.cfg.disk_file_max_chars
    result = await calls("save_to_disk", file_name="grande.md", content="x" * (limit + 1))
    assert result.is_error and f"{limit:,}".replace(",", ".") in result.content  # es: 40.000
    assert not (engine.runtime(session).paths.smma / "grande.md").exists()


async def test_save_to_disk_on_a_section_file_updates_the_section(engine, session,
                                                                 calls: Calls) -> None:
    result = await calls("save_to_disk", file_name="current_task.md",
                         content="## Tarea actual\n- Objetivo: migrar a OAuth2")
    assert not result.is_error
    assert "migrar a OAuth2" in (await engine.build(session))[0]["content"]


async def test_edit_section(engine, session, calls: Calls) -> None:
    ok = await calls("edit_section", section_name="notas",
                     new_content="## Notas\n- hipótesis: pooling")
    assert not ok.is_error and "agent_notes" in ok.content
    path = engine.runtime(session).paths.smma / "agent_notes.md"
    assert path.read_text() == "## Notas\n- hipótesis: pooling"
    assert "hipótesis: pooling" in (await engine.build(session))[0]["content"]
    [evt] = await tape_events(engine, session, "edit_section")
    assert evt["previous"].startswith("## Notas") and evt["content"].endswith("pooling")
    for name, expect in (("identity", "solo lectura"), ("1", "solo lectura"),
                         ("dashboard", "no se edita así"), ("action_log", "no se edita así"),
                         ("inventada", "desconocida")):
        await engine.add_message(session, "user", "otra")  # resets the loop guard
        refused = await calls("edit_section", section_name=name, new_content="x")
        assert refused.is_error and expect in refused.content, (name, refused.content)
    oversize = await calls("edit_section", section_name="user_profile",
                           new_content="- gusto " * 1000)
    assert oversize.is_error and "admite 1.500" in oversize.content
    assert path.read_text() == "## Notas\n- hipótesis: pooling"


async def test_runaway_loop_is_stopped_until_user_speaks(engine, session, calls: Calls) -> None:
    await engine.add_message(session, "user", "hola")
    limit = engine.cfg.max_syscalls_without_progress
    for n in range(limit):
        result = await calls("load_from_disk", file_name="agent_notes.md")
        assert not result.is_error, n
        assert not engine.runaway(session)
    stopped = await calls("load_from_disk", file_name="agent_notes.md")
    assert stopped.is_error and "Detente" in stopped.content
    assert engine.runaway(session)
    assert "Bucle de llamadas de memoria detenido" in automatic(await engine.build(session))
    await engine.add_message(session, "user", "sigue")
    assert not engine.runaway(session)
    assert not (await calls("load_from_disk", file_name="agent_notes.md")).is_error


async def test_other_tool_results_count_as_progress(engine, session, calls: Calls) -> None:
    limit = engine.cfg.max_syscalls_without_progress
    for n in range(limit + 3):
        assert not (await calls("load_from_disk", file_name="agent_notes.md")).is_error
        if n % 3 == 2:
            await exchange(engine, session, n)


async def test_tools_refuse_another_chats_session(engine, session) -> None:
    other = SessionState(chat_id="other")
    registry_calls = Calls(engine, other)
    registry_calls.ctx.chat_id = session.chat_id
    result = await registry_calls("recall_original", message_id=1)
    assert result.is_error and "sesión" in result.content


def test_tool_specs_are_valid(engine: ContextEngine) -> None:
    specs = [t.spec() for t in engine.tools()]
    assert [s["function"]["name"] for s in specs] == [
        "prune_messages", "summarize_range", "recall_original", "save_to_disk",
        "load_from_disk", "edit_section"]
    json.dumps(specs)


async def test_load_from_disk_refuses_a_fifo_and_bounds_a_huge_file(engine, session,
                                                                   calls: Calls) -> None:
    folder = engine.runtime(session).paths.smma
    os.mkfifo(folder / "tuberia.md")
    fifo = await calls("load_from_disk", file_name="tuberia.md")
    assert fifo.is_error and "FIFO" in fifo.content
    limit = engine.cfg.disk_file_max_chars
    (folder / "enorme.md").write_text("a" * (limit * 50))
    big = await calls("load_from_disk", file_name="enorme.md")
    assert not big.is_error and "archivo truncado" in big.content
    assert big.content.count("a") <= limit + 100
    # too big to keep whole on the tape: not overwritten (its content would be lost)
    refused = await calls("save_to_disk", file_name="enorme.md", content="nuevo")
    assert refused.is_error and "no se ha modificado" in refused.content
    assert (folder / "enorme.md").stat().st_size == limit * 50

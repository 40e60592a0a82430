"""Prompt layout: the person's words come last, and the provider's prefix cache holds.

Groq caches the longest prefix a request shares with earlier ones, read in the order system
message → tool definitions → conversation, and a chat model answers the latest user message.
So the dashboard and the recalled memories travel in one automatic message right before the
person's newest message, identical for every call of a turn; everything before it must be
byte-identical from one turn to the next.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from rumi.base.tools import Tool
from rumi.config import Settings
from rumi.context import ContextEngine, TokenCounter
from rumi.context.builder import validate_messages
from rumi.context.prompt import AUTO_MARKER
from rumi.context.sections import default_text
from rumi.memory.commands import MemoryCommands
from rumi.sandbox.manager import SandboxManager
from rumi.sandbox.tools import sandbox_tools
from rumi.sessions.state import SessionState
from tests.conftest import REPO, TIKTOKEN_DIR
from tests.context.conftest import exchange, lead, tool_call, trail, wired_loop
from tests.fakes.groq_limits import canonical_prompt
from tests.prompt_shape import person, person_index

FIRST_MESSAGE = "¿Qué archivos hay en mi proyecto y cuál pesa más?"  # 11 o200k tokens
SYSCALLS = ("prune_messages", "summarize_range", "recall_original", "save_to_disk",
            "load_from_disk", "edit_section")
ALL_TOOLS = {*SYSCALLS, "bash", "read_file", "write_file", "list_files",
             "remember", "forget", "search_memory"}


class TurnRecall:
    """Recall that returns different memories for every query (as real recall does)."""

    async def recall_block(self, chat_id: str, query: str, budget_tokens: int) -> str:
        return f"- Recordado para «{query}»: prefiere Python"


def every_tool(engine: ContextEngine, settings: Settings) -> list[Tool]:
    """The thirteen tools `build_app` registers when the sandbox and memory are on."""
    memory = MemoryCommands(settings.data_dir, store=None,  # type: ignore[arg-type]
                            lifecycle=None, journal=None)  # type: ignore[arg-type]
    return [*engine.tools(), *sandbox_tools(SandboxManager(settings.sandbox, settings.data_dir)),
            *memory.tools()]


def same(a: list[dict[str, Any]], b: list[dict[str, Any]]) -> bool:
    return json.dumps(a, ensure_ascii=False) == json.dumps(b, ensure_ascii=False)


async def test_the_automatic_message_comes_right_before_the_persons_words(
        settings: Settings, counter: TokenCounter) -> None:
    engine = ContextEngine(settings, counter, None, recall=TurnRecall())
    session = SessionState(chat_id="layout")
    empty = await engine.build(session)  # an empty chat: system + the automatic message only
    assert [m["role"] for m in empty] == ["system", "user"] and trail(empty)
    builds = []
    await engine.add_message(session, "user", "hola")
    builds.append(await engine.build(session, query="hola"))
    await exchange(engine, session, 1, output="error", error=True)
    await engine.pin(session, 1)
    builds.append(await engine.build(session, query="hola"))
    for messages in builds:
        assert person(messages)["content"] == "[#1] hola"
        assert person_index(messages) == 2  # system, automatic message, the person's words
        last_block = trail(messages).rsplit("\n\n=== [", 1)[-1].removeprefix("=== [")
        assert last_block.startswith("2] Dashboard de metacognición")
        assert "ESTADO DE MEMORIA:" in last_block
        assert "ESTADO DE MEMORIA:" not in lead(messages) and "=== [2]" not in lead(messages)
        assert "Recordado para" not in lead(messages)
        assert sum(m["role"] == "system" for m in messages) == 1
        assert validate_messages(messages) == []
    assert builds[0][-1]["content"] == "[#1] hola"     # the request ends with the person
    assert builds[1][-1]["role"] == "tool"              # or with this turn's tool results
    last = trail(builds[-1])
    assert last.index("=== [8]") < last.index("=== [2]")  # memories, then the dashboard
    assert "Fijados (no se pueden podar ni resumir): #1" in last  # a pin is worth redrawing


async def test_a_tool_loop_extends_its_request_and_the_next_turn_keeps_the_older_part(
        settings: Settings, counter: TokenCounter) -> None:
    """Within a turn each request is the previous one plus the new step, byte for byte (the
    automatic message is frozen, although "used" grew); the next turn shares everything
    before the previous turn's automatic message, which is not kept."""
    engine = ContextEngine(settings, counter, None, recall=TurnRecall())
    specs = [t.spec() for t in every_tool(engine, settings)]
    session = SessionState(chat_id="cache")
    await engine.add_message(session, "user", "hola")
    await engine.add_message(session, "assistant", "¡Hola! ¿Qué necesitas?")
    await engine.add_message(session, "user", FIRST_MESSAGE)
    first = await engine.build(session, query=FIRST_MESSAGE, tools=specs)
    call = tool_call("call_1", "bash", {"command": "ls -la"})
    await engine.add_message(session, "assistant", None, tool_calls=[call])
    await engine.add_message(session, "tool", "informe.pdf  a.txt", tool_call_id="call_1")
    second = await engine.build(session, query=FIRST_MESSAGE, tools=specs)
    assert same(second[: len(first)], first)
    assert second[-1]["role"] == "tool" and person(second) == first[-1]
    assert engine.runtime(session).last_local > engine.runtime(session).last_dash_tokens
    assert [t.spec() for t in every_tool(engine, settings)] == specs  # tools are stable too

    await engine.add_message(session, "assistant", "El mayor es informe.pdf.")
    await engine.add_message(session, "user", "¿Y el más pequeño?")
    third = await engine.build(session, query="¿Y el más pequeño?", tools=specs)
    kept = person_index(second) - 1  # everything before the previous automatic message
    assert same(third[:kept], second[:kept])
    assert third[kept] == second[kept + 1]  # the previous turn's words, without its block
    assert third[-1]["content"].endswith("¿Y el más pequeño?") and person(third) == third[-1]
    assert "«¿Y el más pequeño?»" in trail(third) and "«¿Y el" not in trail(second)
    assert sum(m["content"].startswith(AUTO_MARKER) for m in third
               if m["role"] == "user") == 1  # earlier turns' blocks are not kept


async def test_the_dashboard_is_redrawn_within_a_turn_only_when_it_asks_for_something(
        make_settings, counter: TokenCounter) -> None:
    """Counters stay as the turn's first build drew them; a new pressure level is news."""
    settings = make_settings("[llm]\ncontext_window = 6000\n")
    engine = ContextEngine(settings, counter, None)
    session = SessionState(chat_id="levels")
    await engine.add_message(session, "user", "revisa los registros")
    first = await engine.build(session)
    drawn = [trail(first)]
    for n in range(30):
        await exchange(engine, session, n, output="línea de registro " * 25)
        drawn.append(trail(await engine.build(session)))
    levels = [re.search(r"Presión de memoria: (\S+)", text).group(1) for text in drawn]
    assert levels[0] == "BAJA" and levels[-1] != "BAJA"
    for before, after, level_before, level_after in zip(drawn, drawn[1:], levels, levels[1:],
                                                        strict=False):
        assert (before == after) == (level_before == level_after)
    assert len(set(drawn)) == len(set(levels))  # one drawing per level reached
    status = engine.status_text(session)  # /status has the live figure
    assert f"{engine.measure(session):,}".replace(",", ".") in status


async def test_edits_and_notices_change_only_what_they_must(
        engine: ContextEngine, session: SessionState, calls) -> None:
    """A compaction notice or a failed recall is per-turn text: it goes to the automatic
    message (redrawn at once: it is news). Only editing a section changes the leading one."""
    await engine.add_message(session, "user", "hola")
    before = await engine.build(session)
    engine.runtime(session).notices["compaction"] = "Compactación automática hecha: prueba."
    engine.runtime(session).notices["recall"] = "La recuperación de memorias falló."
    after = await engine.build(session)
    assert same(after[:-2], before[:-2]) and after[-1] == before[-1]
    assert "Compactación automática hecha" in trail(after)
    assert "La recuperación de memorias falló" in trail(after)
    edit = await calls("edit_section", section_name="current_task",
                       new_content="## Tarea\n- pizza")
    assert not edit.is_error
    edited = await engine.build(session)
    assert "- pizza" in lead(edited) and lead(edited) != lead(before)


async def test_notes_go_in_the_automatic_message_and_stay_for_the_turn(
        engine: ContextEngine, session: SessionState) -> None:
    await engine.add_message(session, "user", "lista la carpeta")
    plain = await engine.build(session)
    noted = await engine.build(session, notes=["Tu llamada anterior no era JSON válido."])
    assert noted[-1] == plain[-1] and noted[-1]["content"] == "[#1] lista la carpeta"
    assert "=== Avisos automáticos de este turno ===\n\n- Tu llamada anterior no era JSON" \
        in trail(noted)
    assert "Avisos automáticos" not in trail(plain)
    again = await engine.build(session, notes=["Tu llamada anterior no era JSON válido."])
    assert same(again, noted)
    rt = engine.runtime(session)
    assert rt.last_local == engine.tokens.count_messages(again) + rt.tools_tokens


async def test_first_request_with_all_tools_is_lean(settings: Settings, counter: TokenCounter,
                                                    encoding: Any) -> None:
    engine = ContextEngine(settings, counter, None)
    tools = every_tool(engine, settings)
    assert {t.name for t in tools} == ALL_TOOLS and len(tools) == 13
    specs = [t.spec() for t in tools]
    session = SessionState(chat_id="fresh")
    await engine.add_message(session, "user", FIRST_MESSAGE)
    messages = await engine.build(session, query=FIRST_MESSAGE, tools=specs)
    assert len(encoding.encode(FIRST_MESSAGE)) == 11
    total = counter.count_messages(messages) + counter.count_tools(specs)
    assert total == engine.runtime(session).last_local  # what the dashboard calls "used"
    assert total <= 2_400, total
    assert counter.count_tools(specs) <= 1_250
    assert engine.runtime(session).files.sections["identity"].tokens <= 750


def test_identity_keeps_every_rule() -> None:
    identity = default_text("identity.md")
    for name in SYSCALLS:
        assert f"`{name}`" in identity
    for rule in ("ocho secciones", "`[#id]`", "no lo escribas", "fija", "Autooptimización",
                 "Jerarquía de confianza", "Registro inmutable", "idioma del usuario",
                 "secretos", "otros chats", "confirmación",
                 "justo antes del último mensaje de la persona", "responde a la persona",
                 "memorias recuperadas"):
        assert rule in identity, rule
    trust = identity.split("## Jerarquía de confianza")[1]
    order = [trust.index(s) for s in ("Registro inmutable", "archivos en disco", "resúmenes",
                                      "inferencia")]
    assert order == sorted(order)


async def test_requests_on_the_wire_share_their_prefix(make_settings, fake_groq,
                                                       counter: TokenCounter) -> None:
    """Through the real loop and client: each turn's request ends with the person's words,
    and its canonical prompt (the fake's model of Groq's cache order) starts with the
    previous request's up to that request's automatic message; a tool step's request starts
    with the whole previous one."""
    settings = make_settings(f'[llm]\napi_key = "gsk_test"\nbase_url = "{fake_groq.base_url}"\n'
                             "max_retries = 0\n")
    llm, engine, loop = wired_loop(settings, counter)
    session = SessionState(chat_id="wire")
    fake_groq.enqueue_text("Hola, ¿en qué te ayudo?")
    fake_groq.enqueue_tool_call("recall_original", {"message_id": 1})
    fake_groq.enqueue_text("Claro, te lo explico.")
    fake_groq.enqueue_text("De nada.")
    try:
        for text in ("hola", "explícame algo", "gracias"):
            await loop.run(session, text)
    finally:
        await llm.close()
    bodies = [r for r in fake_groq.requests if r.get("tools")]
    assert len(bodies) == 4
    for earlier, later in zip(bodies, bodies[1:], strict=False):
        if later["messages"][-1]["role"] == "tool":   # a step of the same turn
            assert canonical_prompt(later).startswith(canonical_prompt(earlier))
            continue
        assert person(later) == later["messages"][-1]
        assert "ESTADO DE MEMORIA:" in trail(later["messages"])
        stable = {**earlier, "messages": earlier["messages"][:person_index(earlier) - 1]}
        assert canonical_prompt(later).startswith(canonical_prompt(stable))
    assert [person(b)["content"].split("] ", 1)[1] for b in bodies] == [
        "hola", "explícame algo", "explícame algo", "gracias"]


def test_prompt_size_script_reports_the_numbers() -> None:
    result = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "prompt_size.py")], capture_output=True,
        text=True, timeout=120, check=True, cwd=REPO,
        env={"TIKTOKEN_CACHE_DIR": str(TIKTOKEN_DIR), "PATH": "/usr/bin:/bin",
             "PYTHONPATH": str(REPO), "HOME": str(Path.home())})  # this checkout's rumi
    report = json.loads(result.stdout)
    assert report["tokenizer"] == "o200k_base"
    assert report["user_message"]["tokens"] == 11
    assert report["tools"]["count"] == 13 and set(report["tools"]["each"]) == ALL_TOOLS
    assert report["request"]["total"] == report["request"]["engine_count"] <= 2_400
    assert report["tool_loop_prefix"]["first_is_prefix"] is True
    assert report["tool_loop_prefix"]["common_prefix_share"] > 0.9

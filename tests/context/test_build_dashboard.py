"""Prompt assembly: sections in order, ids on every item, dashboard numbers = a hand count."""

from __future__ import annotations

import json
import re
from typing import Any

from rumi.context import ContextEngine, TokenCounter
from rumi.context.builder import validate_messages
from rumi.sessions.state import SessionState
from tests.context.conftest import exchange, lead, trail

# Spanish numbers: 2.935 tokens, 12,5 %
DASH = re.compile(r"Conversación \(7–8\): ([\d.]+) / ([\d.]+) tokens \(([\d,]+)%\) · "
                  r"prompt ([\d.]+) / ([\d.]+)")


def hand_count(encoding: Any, messages: list[dict[str, Any]], tools: Any = None) -> int:
    """OpenAI's documented formula: 3 to prime the reply, 4 per message plus its parts."""
    total = 3
    for m in messages:
        total += 4 + len(encoding.encode(m.get("content") or ""))
        if m.get("tool_calls"):
            total += len(encoding.encode(json.dumps(m["tool_calls"], ensure_ascii=False)))
        if m.get("tool_call_id"):
            total += len(encoding.encode(m["tool_call_id"]))
    if tools:
        total += len(encoding.encode(json.dumps(tools, ensure_ascii=False)))
    return total


def dashboard_numbers(messages: list[dict[str, Any]]) -> tuple[int, int, float]:
    """(whole prompt, safe limit, P_m) as the dashboard the model was sent states them."""
    conversation, room, pct, used, safe = dashboard_fields(messages)
    return used, safe, pct


def dashboard_fields(messages: list[dict[str, Any]]) -> tuple[int, int, float, int, int]:
    """(conversation, its room, P_m, whole prompt, safe limit) from the dashboard block,
    found by its header wherever it sits in the request."""
    text = "\n".join(str(m.get("content") or "") for m in messages
                     if "=== [2] Dashboard" in str(m.get("content") or ""))
    match = DASH.search(text)
    assert match, text[:500]
    conversation, room, pct, used, safe = match.groups()
    return (int(conversation.replace(".", "")), int(room.replace(".", "")),
            float(pct.replace(",", ".")), int(used.replace(".", "")), int(safe.replace(".", "")))


async def test_sections_in_order_and_ids_on_every_item(engine: ContextEngine,
                                                       session: SessionState) -> None:
    await engine.add_message(session, "user", "hola")
    await exchange(engine, session, 1)
    await engine.add_message(session, "assistant", "listo")
    messages = await engine.build(session)
    system = lead(messages)
    positions = [system.index(f"=== [{n}]") for n in (1, 3, 4, 5, 6, "7–8")]
    assert positions == sorted(positions)
    assert "Eres **Rumi**" in system and "ESTADO DE MEMORIA:" not in system
    assert trail(messages).startswith("=== [2]") and "ESTADO DE MEMORIA:" in trail(messages)
    # the automatic message, then the person's "hola" and what followed it
    assert [m["role"] for m in messages] == ["system", "user", "user", "assistant", "tool",
                                             "assistant"]
    for message, item in zip(messages[2:], session.items, strict=True):
        assert message["content"].startswith(f"[#{item.id}]")
    assert messages[4]["tool_call_id"] == session.items[2].tool_call_id
    assert validate_messages(messages) == []


async def test_dashboard_equals_hand_count(engine: ContextEngine, session: SessionState,
                                          encoding: Any) -> None:
    await engine.add_message(session, "user", "¿Cuántos archivos hay en /workspace? " * 20)
    await exchange(engine, session, 1, calls=2, output="a.txt b.txt c.txt\n" * 30)
    await engine.add_message(session, "assistant", "Hay tres archivos: a.txt, b.txt y c.txt.")
    tools = [t.spec() for t in engine.tools()]
    messages = await engine.build(session, tools=tools)
    conversation, room, pct, used, safe = dashboard_fields(messages)
    assert safe == int(0.8 * engine.settings.llm.context_window)
    assert used == hand_count(encoding, messages, tools)
    # P_m: sections 7–8 (every message but the system one and the automatic trailing one)
    # against what the safe limit leaves once the fixed part (the rest) is paid
    talk = [m for m in messages[1:] if "=== [2] Dashboard" not in str(m.get("content"))]
    assert conversation == hand_count(encoding, talk) - 3
    assert room == safe - (used - conversation)
    assert pct == round(conversation / room * 100, 1)
    assert "Presión de memoria: BAJA" in trail(messages)
    assert "Secciones en disco cargadas: 5/5" in trail(messages)


async def test_pressure_levels_and_concrete_hint(make_settings, counter: TokenCounter) -> None:
    settings = make_settings("[llm]\ncontext_window = 8000\n")
    engine = ContextEngine(settings, counter, None)
    session = SessionState(chat_id="7")
    await engine.open(session)
    levels = []
    for n in range(60):
        await engine.add_message(session, "user", f"mensaje {n} " + "palabra " * 40)
        await exchange(engine, session, n, output="x " * 60)
        text = trail(await engine.build(session))
        levels.append(re.search(r"Presión de memoria: (\S+)", text).group(1))
        if levels[-1] == "CRÍTICA":
            break
    assert levels[0] == "BAJA"
    assert {"MEDIA", "ALTA", "CRÍTICA"} <= set(levels)
    assert "summarize_range sobre #" in text and "prune_messages de salidas obsoletas" in text
    assert "compactará automáticamente" in text


async def test_failing_tool_flagged_until_pruned(engine: ContextEngine, session: SessionState,
                                                 calls) -> None:
    ids = []
    for n in range(3):
        ids += await exchange(engine, session, n, output="error: permiso denegado", error=True)
    text = trail(await engine.build(session))
    flagged = [i for i in ids if session.items[[x.id for x in session.items].index(i)].is_error]
    assert f"`bash` ha fallado 3 veces ({', '.join(f'#{i}' for i in flagged)})" in text
    assert "agent_notes" in text
    result = await calls("prune_messages", message_ids=flagged)
    assert not result.is_error
    assert "ha fallado" not in trail(await engine.build(session))


async def test_pins_listed_and_fallback_flagged(settings, session: SessionState) -> None:
    fallback = TokenCounter("no-such-encoding")
    assert fallback.is_fallback and fallback.count("abcdefgh") == 2
    engine = ContextEngine(settings, fallback, None)
    await engine.open(session)
    item = await engine.add_message(session, "user", "no olvides esto")
    assert await engine.pin(session, item.id)
    text = trail(await engine.build(session))
    assert f"Fijados (no se pueden podar ni resumir): #{item.id}" in text
    assert "Conteo de tokens aproximado" in text


async def fail_many_tools(engine: ContextEngine, session: SessionState) -> None:
    """Twelve tools failing three times each: enough warnings to overflow the dashboard."""
    for n in range(12):
        for k in range(3):
            call = {"id": f"x{n}{k}", "type": "function",
                    "function": {"name": f"tool_{n}", "arguments": "{}"}}
            await engine.add_message(session, "assistant", None, tool_calls=[call])
            await engine.add_message(session, "tool", "fallo", tool_call_id=call["id"],
                                     is_error=True)


async def test_dashboard_stays_within_its_budget(engine: ContextEngine,
                                                 session: SessionState) -> None:
    await fail_many_tools(engine, session)  # many failing tools -> many warnings
    await engine.build(session)
    rt = engine.runtime(session)
    assert rt.section_tokens["dashboard"] <= engine.cfg.section_budgets["dashboard"]


async def test_trimming_keeps_the_most_important_warnings(engine: ContextEngine,
                                                          session: SessionState,
                                                          calls) -> None:
    """Over its budget the dashboard drops section sizes and old failures first; the
    runaway alert (appended last) must survive, and /status still shows everything."""
    await fail_many_tools(engine, session)
    limit = engine.cfg.max_syscalls_without_progress
    for _ in range(limit + 1):
        await calls("recall_original", message_id=1)
    assert engine.runaway(session)
    dashboard = trail(await engine.build(session)).split("=== [2]")[1]
    assert "Bucle de llamadas de memoria detenido" in dashboard
    assert "(…más avisos en /status)" in dashboard
    assert "Tokens por sección" not in dashboard
    assert "Acción recomendada" in dashboard
    rt = engine.runtime(session)
    assert rt.section_tokens["dashboard"] <= engine.cfg.section_budgets["dashboard"]
    status = engine.status_text(session)
    assert "Bucle de llamadas de memoria detenido" in status
    assert all(f"`tool_{n}` ha fallado 3 veces" in status for n in range(12))


class FakeRecall:
    def __init__(self, text: str, fail: bool = False) -> None:
        self.text, self.fail, self.calls = text, fail, []

    async def recall_block(self, chat_id: str, query: str, budget_tokens: int) -> str:
        self.calls.append((chat_id, query, budget_tokens))
        if self.fail:
            raise RuntimeError("índice roto")
        return self.text


async def test_recalled_memories_in_budget_and_cached(settings, counter: TokenCounter,
                                                      session: SessionState,
                                                      encoding: Any) -> None:
    recall = FakeRecall("- Prefiere respuestas cortas\n" + "- dato " * 2000)
    engine = ContextEngine(settings, counter, None, recall=recall)
    await engine.add_message(session, "user", "hola")
    messages = await engine.build(session, query="hola")
    await engine.build(session, query="hola")
    assert recall.calls == [("4242", "hola", 1_500)]
    assert "Prefiere respuestas cortas" not in lead(messages)  # volatile: after the messages
    block = trail(messages).split("=== [8] Memorias recuperadas (espacio de trabajo) ===\n\n")[1]
    block = block.split("\n\n=== [2]")[0]
    assert block.startswith("- Prefiere respuestas cortas")
    assert len(encoding.encode(block)) <= 1_500
    assert dashboard_numbers(messages)[0] == hand_count(encoding, messages)


async def test_recall_failure_is_a_warning_not_a_crash(settings, counter: TokenCounter,
                                                       session: SessionState) -> None:
    engine = ContextEngine(settings, counter, None, recall=FakeRecall("", fail=True))
    messages = await engine.build(session, query="algo")
    assert "La recuperación de memorias falló" in trail(messages)


class PrefetchingRecall(FakeRecall):
    def __init__(self, text: str, fail: bool = False) -> None:
        super().__init__(text, fail)
        self.prefetched: list[tuple[str, str]] = []

    def prefetch(self, chat_id: str, query: str) -> None:
        self.prefetched.append((chat_id, query))
        if self.fail:
            raise RuntimeError("modelo roto")


async def test_a_message_is_handed_to_recall_before_the_prompt(
        settings, counter: TokenCounter, session: SessionState) -> None:
    recall = PrefetchingRecall("- dato")
    engine = ContextEngine(settings, counter, None, recall=recall)
    engine.prepare_recall("4242", "¿qué cené ayer?")
    engine.prepare_recall("4242", "   ")   # nothing to recall
    assert recall.prefetched == [("4242", "¿qué cené ayer?")] and recall.calls == []
    ContextEngine(settings, counter, None, recall=FakeRecall("")).prepare_recall("1", "x")
    failing = ContextEngine(settings, counter, None, recall=PrefetchingRecall("", fail=True))
    failing.prepare_recall("4242", "hola")   # logged, never raised into the turn
    ContextEngine(settings, counter, None).prepare_recall("1", "x")   # no recall at all


async def test_recall_runs_again_on_the_next_turn(settings, counter: TokenCounter,
                                                  session: SessionState) -> None:
    recall = FakeRecall("- dato")
    engine = ContextEngine(settings, counter, None, recall=recall)
    for _ in range(2):
        await engine.add_message(session, "user", "sí")
        await engine.build(session, query="sí")
        await engine.build(session, query="sí")
    assert len(recall.calls) == 2

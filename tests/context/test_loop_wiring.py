"""The real AgentLoop driving the real ContextEngine (fake Groq only): the wiring that makes
the engine's features work in production, not just when a test calls the engine directly."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from rumi import messages as msg
from rumi.agent.loop import AgentLoop
from rumi.base.tools import Tool, ToolArgs, ToolContext, ToolError, ToolRegistry
from rumi.config import Settings
from rumi.context import ContextEngine, TokenCounter
from rumi.context.builder import validate_messages
from rumi.llm.client import LLMClient
from rumi.sessions.state import SessionState
from tests.context.test_build_dashboard import dashboard_numbers, hand_count
from tests.fakes.groq_server import CONTEXT_LENGTH_ERROR, FakeGroqServer, ScriptedReply
from tests.prompt_shape import automatic


class CatArgs(ToolArgs):
    name: str
    lines: int = 40


class BrokenArgs(ToolArgs):
    attempt: int


@dataclass
class Rig:
    settings: Settings
    engine: ContextEngine
    loop: AgentLoop
    registry: ToolRegistry
    outputs: dict[str, str] = field(default_factory=dict)  # what `cat` returned, by file name

    def main_requests(self, fake: FakeGroqServer) -> list[dict[str, Any]]:
        """Agent requests (not the compactor's summary requests)."""
        return [r for r in fake.requests if r.get("tools")]


@pytest.fixture
async def make_rig(make_settings, fake_groq: FakeGroqServer,
                   counter: TokenCounter) -> AsyncIterator[Callable[..., Rig]]:
    clients: list[LLMClient] = []

    def factory(extra: str = "", sections: str = "") -> Rig:
        settings = make_settings(
            f'[llm]\napi_key = "gsk_test"\nbase_url = "{fake_groq.base_url}"\n'
            f"max_retries = 0\nretry_base_delay = 0\n{extra}{sections}")
        llm = LLMClient(settings.llm)
        clients.append(llm)
        engine = ContextEngine(settings, counter, llm)
        registry = ToolRegistry(settings.agent.tool_result_max_chars)
        for tool in engine.tools():
            registry.register(tool)
        rig = Rig(settings, engine, AgentLoop(llm, engine, registry, settings.agent), registry)

        async def cat(args: CatArgs, ctx: ToolContext) -> str:
            text = "\n".join(f"{args.name}:{n:04d} registro de prueba con datos {n * 7}"
                             for n in range(args.lines))
            rig.outputs[args.name] = text
            return text

        async def broken(args: BrokenArgs, ctx: ToolContext) -> str:
            raise ToolError(f"permiso denegado (intento {args.attempt})")

        registry.register(Tool("cat", "Muestra un archivo", CatArgs, cat))
        registry.register(Tool("broken", "Siempre falla", BrokenArgs, broken))
        return rig

    yield factory
    for client in clients:
        await client.close()


def summary_or(responder: Callable[[dict[str, Any]], dict[str, Any]]
               ) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """Answer the compactor's summary requests; everything else goes to `responder`."""
    def respond(body: dict[str, Any]) -> dict[str, Any]:
        if "compactador" in body["messages"][0]["content"]:
            return {"role": "assistant", "content": "- Se revisaron archivos; ver los #ids."}
        return responder(body)
    return respond


def call(name: str, arguments: dict[str, Any], call_id: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function",
            "function": {"name": name, "arguments": json.dumps(arguments)}}


async def test_failed_tool_is_flagged_on_the_next_prompt(make_rig, fake_groq) -> None:
    rig = make_rig()
    for attempt in range(3):
        fake_groq.enqueue_tool_call("broken", {"attempt": attempt})
    fake_groq.enqueue_text("No tengo permiso; te lo explico.")
    session = SessionState(chat_id="fail")
    result = await rig.loop.run(session, "Lee el archivo protegido")
    assert result.stopped_by is None
    assert [i.is_error for i in session.items if i.role == "tool"] == [True, True, True]
    ids = [i.id for i in session.items if i.role == "tool"]
    fourth = automatic(fake_groq.requests[3])   # the dashboard's alert came with the 3rd
    assert f"`broken` ha fallado 3 veces ({', '.join(f'#{i}' for i in ids)})" in fourth
    tape = await rig.engine.runtime(session).tape.records()
    assert [r.get("is_error") for r in tape if r.get("role") == "tool"] == [True] * 3


async def test_first_prompt_counts_the_tool_definitions(make_rig, fake_groq,
                                                        encoding: Any) -> None:
    """Uncalibrated, the dashboard's "used" is what the provider counts for the whole
    request — tool definitions included (they are ~1k tokens of every prompt)."""
    fake_groq.prompt_counter = lambda body: hand_count(encoding, body["messages"],
                                                       body.get("tools"))
    rig = make_rig()
    fake_groq.enqueue_text("Hola")
    session = SessionState(chat_id="tools")
    await rig.loop.run(session, "hola")
    request = fake_groq.requests[0]
    tools_tokens = len(encoding.encode(json.dumps(request["tools"], ensure_ascii=False)))
    assert tools_tokens > 500
    used = dashboard_numbers(request["messages"])[0]
    assert used == fake_groq.reported[0]
    assert rig.engine.runtime(session).tools_tokens == tools_tokens


async def test_one_turn_of_big_outputs_is_compacted_before_it_overflows(make_rig,
                                                                        fake_groq) -> None:
    """Twelve large tool results in a single turn: the engine compacts between calls, so no
    request the provider sees is over the window (the fake refuses those with HTTP 400)."""
    window = 9_000
    fake_groq.context_window = window
    rig = make_rig(f"context_window = {window}\nmax_output_tokens = 512\n"
                   "[agent]\nmax_turns = 14\n")

    asked: list[int] = []

    def respond(body: dict[str, Any]) -> dict[str, Any]:
        rounds = len(asked)
        asked.append(rounds)
        if rounds < 12:
            return {"role": "assistant", "content": None, "tool_calls": [
                call("cat", {"name": f"f{rounds}", "lines": 130}, f"c{rounds}")]}
        return {"role": "assistant", "content": "Revisé los doce archivos."}

    fake_groq.responder = summary_or(respond)
    session = SessionState(chat_id="burst")
    result = await rig.loop.run(session, "Revisa los doce archivos de registro")
    assert result.stopped_by is None and result.text == "Revisé los doce archivos."
    assert all(tokens + 512 <= window for tokens in fake_groq.reported)
    compactions = [r for r in await rig.engine.runtime(session).tape.records()
                   if r.get("event") == "compact"]
    assert compactions, "the turn should have needed a mid-turn compaction"
    for request in rig.main_requests(fake_groq):
        assert validate_messages(request["messages"]) == []
    assert len(rig.outputs) == 12
    for name, text in rig.outputs.items():  # every output is still recallable exactly
        tool_item = next(r for r in await rig.engine.runtime(session).tape.records()
                         if r.get("tool_call_id") == f"c{name[1:]}")
        assert (await rig.engine.original(session, tool_item["id"]))["content"] == text


async def populate(engine: ContextEngine, session: SessionState, turns: int) -> None:
    for n in range(turns):
        await engine.add_message(session, "user", f"Pregunta {n}: " + "contexto " * 40)
        await engine.add_message(session, "assistant", f"Respuesta {n}: " + "detalle " * 40)


async def test_context_length_400_compacts_once_and_retries(make_rig, fake_groq) -> None:
    rig = make_rig()
    fake_groq.responder = summary_or(lambda body: {"role": "assistant", "content": "Aquí."})
    session = SessionState(chat_id="retry")
    await populate(rig.engine, session, 12)
    fake_groq.queue.append(ScriptedReply(status=400, error_body=CONTEXT_LENGTH_ERROR))
    result = await rig.loop.run(session, "¿Y ahora?")
    assert result.stopped_by is None and result.text == "Aquí."
    kinds = ["agent" if r.get("tools") else "compactor" for r in fake_groq.requests]
    assert kinds == ["agent", "compactor", "agent"]
    assert len(fake_groq.requests[2]["messages"]) < len(fake_groq.requests[0]["messages"])
    events = [r["event"] for r in await rig.engine.runtime(session).tape.records()
              if "event" in r]
    assert events == ["compact"]


async def test_context_length_400_with_nothing_to_compact_says_so(make_rig, fake_groq) -> None:
    rig = make_rig()
    fake_groq.responder = lambda body: ScriptedReply(status=400,
                                                     error_body=CONTEXT_LENGTH_ERROR)
    session = SessionState(chat_id="full")
    result = await rig.loop.run(session, "hola")
    assert result.stopped_by == "context_full" and result.text == msg.CONTEXT_FULL
    assert "/clear" in result.text and "/reset" in result.text
    assert len(fake_groq.requests) == 1
    records = await rig.engine.runtime(session).tape.records()
    assert records[-1]["event"] == "system_reply"
    assert records[-1]["reason"] == "context_full" and records[-1]["content"] == result.text


async def test_model_down_reply_is_on_the_tape(make_rig, fake_groq) -> None:
    rig = make_rig()
    fake_groq.enqueue_error(503, "caído")
    session = SessionState(chat_id="down")
    result = await rig.loop.run(session, "hola")
    assert result.text == msg.MODEL_UNAVAILABLE and result.item_id is None
    records = await rig.engine.runtime(session).tape.records()
    assert [r.get("role") or r.get("event") for r in records] == ["user", "system_reply"]
    assert records[-1]["content"] == msg.MODEL_UNAVAILABLE
    assert [i.role for i in session.items] == ["user"]  # not in the next prompt


async def test_runaway_memory_calls_stop_and_tell_the_user(make_rig, fake_groq) -> None:
    rig = make_rig()
    session = SessionState(chat_id="loop")
    await rig.engine.open(session)
    smma = rig.engine.runtime(session).paths.smma
    for n in range(8):
        (smma / f"nota{n}.md").write_text(f"nota {n}", encoding="utf-8")
    for n in range(8):  # distinct arguments: the repeated-call breaker must not be what trips
        fake_groq.enqueue_tool_call("load_from_disk", {"file_name": f"nota{n}.md"})
    fake_groq.enqueue_text("nunca llega")
    result = await rig.loop.run(session, "Repasa tus notas")
    limit = rig.settings.context.max_syscalls_without_progress
    assert result.stopped_by == "memory_loop" and result.text == msg.MEMORY_LOOP
    assert "/clear" in result.text and "/reset" in result.text
    assert len(fake_groq.requests) == limit + 1
    assert session.items[-1].content == msg.MEMORY_LOOP and result.item_id == session.items[-1].id
    assert validate_messages(await rig.engine.build(session)) == []


async def test_imitated_id_labels_never_reach_the_user(make_rig, fake_groq) -> None:
    rig = make_rig()
    fake_groq.enqueue_text("[#2] [#3] Hola, Ana. Según [#1], ya está.")
    session = SessionState(chat_id="labels")
    result = await rig.loop.run(session, "hola")
    assert result.text == "Hola, Ana. Según [#1], ya está."
    assert result.item_id == 2
    record = await rig.engine.original(session, 2)
    assert record["content"] == "[#2] [#3] Hola, Ana. Según [#1], ya está."

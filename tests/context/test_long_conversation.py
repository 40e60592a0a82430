"""The issue's "done when": a long conversation stays under the model's limit indefinitely,
the dashboard is in every prompt, and every message can be recalled exactly.

Real AgentLoop + ContextEngine + ToolRegistry (the six system calls and a file tool) against
the fake Groq server, which counts tokens its own way (JSON characters / 4, tools included,
so our o200k count must be calibrated to it) and refuses any request that does not fit in
its window, as Groq does. The scripted "model" reads files, retries a failing tool, recalls
and prunes old items, and sometimes imitates the `[#id]` labels.
"""

from __future__ import annotations

import json
import random
import re
from typing import Any

from rumi.agent.loop import AgentLoop
from rumi.base.tools import Tool, ToolArgs, ToolContext, ToolError, ToolRegistry
from rumi.context import ContextEngine, TokenCounter
from rumi.context.builder import validate_messages
from rumi.context.syscalls import format_original
from rumi.llm.client import LLMClient
from rumi.sessions.state import SessionState
from tests.fakes.groq_server import FakeGroqServer
from tests.prompt_shape import automatic

WINDOW = 12_000
MAX_OUTPUT = 512
TURNS = 100
LABEL = re.compile(r"^\[#(\d+)\]")


class ReadArgs(ToolArgs):
    path: str
    lines: int


class ScriptedAgent:
    """Decides each reply from the request, like a model would, with a fixed seed."""

    def __init__(self) -> None:
        self.rng = random.Random(4)
        self.calls = 0
        self.turn = 0  # set by the test: the current request may itself be compacted away
        self.replies: dict[int, str] = {}
        self.rounds: dict[int, int] = {}

    def __call__(self, body: dict[str, Any]) -> dict[str, Any]:
        messages = body["messages"]
        if "compactador" in messages[0]["content"]:
            return {"role": "assistant", "content": "- Se leyeron archivos y se corrigieron "
                    "errores; los detalles están en los #ids originales."}
        turn = self.turn
        rounds = self.rounds.get(turn, 0)
        plan = self.plan(turn)
        if rounds < len(plan):
            self.rounds[turn] = rounds + 1
            return self.tool_calls(plan[rounds], messages)
        text = f"Hecho con la petición {turn}: " + "explicación " * self.rng.randint(10, 60)
        if turn % 9 == 4:
            text = f"[#{turn}] {text}"  # a model imitating the labels
        self.replies[turn] = text
        return {"role": "assistant", "content": text}

    def plan(self, turn: int) -> list[list[tuple[str, dict[str, Any]]]]:
        """Tool rounds for a turn (each round: calls made in parallel)."""
        kind = turn % 6
        if kind == 1:
            return [[("read_file", {"path": f"src/m{turn}.py", "lines": 120 + turn % 80})]]
        if kind == 2:
            return [[("read_file", {"path": f"log/a{turn}.txt", "lines": 90}),
                     ("read_file", {"path": f"log/b{turn}.txt", "lines": 70})],
                    [("read_file", {"path": f"log/c{turn}.txt", "lines": 150})],
                    [("read_file", {"path": f"log/d{turn}.txt", "lines": 150}),
                     ("read_file", {"path": f"log/e{turn}.txt", "lines": 150})]]
        if kind == 3:
            return [[("read_file", {"path": f"/root/secret{turn}{k}", "lines": 1})]
                    for k in range(3)]
        if kind == 4:
            return [[("recall_original", {"message_id": "OLDEST"})]]
        if kind == 5:
            return [[("prune_messages", {"message_ids": "OLD_TOOLS"})]]
        return []

    def tool_calls(self, calls: list[tuple[str, dict[str, Any]]],
                   messages: list[dict[str, Any]]) -> dict[str, Any]:
        visible = [int(m.group(1)) for m in (LABEL.match(x.get("content") or "")
                                             for x in messages[1:]) if m]
        tool_ids = [int(LABEL.match(x["content"]).group(1)) for x in messages[1:]
                    if x["role"] == "tool"]
        out = []
        for name, arguments in calls:
            arguments = dict(arguments)
            if arguments.get("message_id") == "OLDEST":
                arguments["message_id"] = self.rng.randint(1, max(visible))
            if arguments.get("message_ids") == "OLD_TOOLS":
                arguments["message_ids"] = tool_ids[:3] or visible[:1]
            self.calls += 1
            out.append({"id": f"call_{self.calls}", "type": "function",
                        "function": {"name": name, "arguments": json.dumps(arguments)}})
        return {"role": "assistant", "content": None, "tool_calls": out}


async def test_hundred_turns_stay_under_the_window(fake_groq: FakeGroqServer, make_settings,
                                                   counter: TokenCounter) -> None:
    fake_groq.context_window = WINDOW
    agent = ScriptedAgent()
    fake_groq.responder = agent
    settings = make_settings(
        f'[llm]\napi_key = "gsk_test"\nbase_url = "{fake_groq.base_url}"\nmax_retries = 0\n'
        f"context_window = {WINDOW}\nmax_output_tokens = {MAX_OUTPUT}\n")
    llm = LLMClient(settings.llm)
    engine = ContextEngine(settings, counter, llm)
    registry = ToolRegistry(settings.agent.tool_result_max_chars)
    for tool in engine.tools():
        registry.register(tool)
    outputs: dict[str, str] = {}

    async def read_file(args: ReadArgs, ctx: ToolContext) -> str:
        if args.path.startswith("/root"):
            raise ToolError(f"permiso denegado: {args.path}")
        text = "\n".join(f"{args.path}:{n} valor={n * n} estado=ok" for n in range(args.lines))
        outputs[args.path] = text
        return text

    registry.register(Tool("read_file", "Lee un archivo del proyecto", ReadArgs, read_file))
    loop = AgentLoop(llm, engine, registry, settings.agent)
    compacted: list[int] = []

    async def hook(session: SessionState, items: list) -> None:
        compacted.append(len(items))

    engine.before_compaction.append(hook)
    session = SessionState(chat_id="long")
    users: list[str] = []
    try:
        for turn in range(TURNS):
            text = f"Petición {turn}: " + "por favor revisa esto " * (5 + turn % 20)
            users.append(text)
            agent.turn = turn
            result = await loop.run(session, text)
            assert result.stopped_by is None, (turn, result)
            assert not result.text.startswith("[#")
            assert agent.replies[turn].strip().endswith(result.text)
    finally:
        await llm.close()

    # Every request fitted (the fake would have answered 400 otherwise), with room to reply.
    assert len(fake_groq.requests) > 2 * TURNS
    assert all(tokens + MAX_OUTPUT <= WINDOW for tokens in fake_groq.reported)
    agent_requests = [r for r in fake_groq.requests if r.get("tools")]
    for request in agent_requests:
        assert "ESTADO DE MEMORIA:" in automatic(request)
        assert validate_messages(request["messages"]) == []
    assert len(compacted) >= 3, "the conversation should have needed the safety net"
    assert any("ha fallado" in automatic(r) for r in agent_requests)

    # Every message ever recorded is on the tape once, and recallable byte for byte.
    tape = engine.runtime(session).paths.tape
    records = [json.loads(line) for line in tape.read_text(encoding="utf-8").splitlines()]
    messages = [r for r in records if "event" not in r]
    ids = [r["id"] for r in messages]
    assert ids == list(range(1, len(ids) + 1))
    assert [r["content"] for r in messages if r["role"] == "user"] == users
    tool_texts = {r["content"] for r in messages if r["role"] == "tool"}
    assert set(outputs.values()) <= tool_texts
    for record in messages:
        original = await engine.original(session, record["id"])
        assert original == record
    gone = [i for i in ids if engine.item(session, i) is None]
    assert len(gone) > len(ids) // 2
    ctx = ToolContext(chat_id=session.chat_id, session=session)
    for item_id in gone[:5]:  # through the tool the agent uses (within the runaway guard)
        recalled = await registry.execute("recall_original",
                                          json.dumps({"message_id": item_id}), ctx)
        expected = format_original(await engine.original(session, item_id), False)
        assert not recalled.is_error and recalled.content == expected

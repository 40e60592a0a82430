"""Fixtures for the context engine: real tiktoken, real files under the isolated data dir."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
import tiktoken

from rumi.agent.loop import AgentLoop
from rumi.base.tools import ToolContext, ToolRegistry, ToolResult
from rumi.config import Settings
from rumi.context import ContextEngine, TokenCounter
from rumi.encoding import ENCODING
from rumi.llm.client import LLMClient
from rumi.sessions.state import SessionState
from tests.conftest import TIKTOKEN_DIR, require
from tests.prompt_shape import automatic


@pytest.fixture(scope="session")
def encoding() -> Any:
    require((TIKTOKEN_DIR).exists(), f"tiktoken cache not found at {TIKTOKEN_DIR}")
    return tiktoken.get_encoding(ENCODING)


@pytest.fixture
def counter(encoding: Any) -> TokenCounter:
    tc = TokenCounter()
    assert not tc.is_fallback
    return tc


@pytest.fixture
def settings(make_settings: Callable[..., Settings]) -> Settings:
    return make_settings()


@pytest.fixture
def engine(settings: Settings, counter: TokenCounter) -> ContextEngine:
    return ContextEngine(settings, counter, None)


@pytest.fixture
async def session(engine: ContextEngine) -> SessionState:
    state = SessionState(chat_id="4242")
    await engine.open(state)
    return state


class Calls:
    """Runs the engine's tools through a real ToolRegistry, as the agent loop does."""

    def __init__(self, engine: ContextEngine, session: SessionState) -> None:
        self.registry = ToolRegistry()
        for tool in engine.tools():
            self.registry.register(tool)
        self.ctx = ToolContext(chat_id=session.chat_id, session=session)

    async def __call__(self, name: str, **arguments: Any) -> ToolResult:
        return await self.registry.execute(name, json.dumps(arguments), self.ctx)


@pytest.fixture
def calls(engine: ContextEngine, session: SessionState) -> Calls:
    return Calls(engine, session)


def lead(messages: list[dict[str, Any]]) -> str:
    """The leading system message: identity and sections 3–6 (stable from call to call)."""
    assert messages[0]["role"] == "system"
    return str(messages[0]["content"])


def trail(messages: list[dict[str, Any]]) -> str:
    """Rumi's automatic message (recalled memories, notes, the dashboard), checked to sit
    right before the person's newest message."""
    return automatic(messages)


def tool_call(call_id: str, name: str = "bash", arguments: dict[str, Any] | None = None
              ) -> dict[str, Any]:
    return {"id": call_id, "type": "function",
            "function": {"name": name, "arguments": json.dumps(arguments or {"cmd": "ls"})}}


async def exchange(engine: ContextEngine, session: SessionState, n: int, *, calls: int = 1,
                   output: str = "salida", error: bool = False) -> list[int]:
    """Add one assistant message with `calls` tool calls and their results; return ids."""
    ids = []
    call_list = [tool_call(f"c{n}_{k}") for k in range(calls)]
    item = await engine.add_message(session, "assistant", None, tool_calls=call_list)
    ids.append(item.id)
    for call in call_list:
        result = await engine.add_message(session, "tool", f"{output} {n}",
                                          tool_call_id=call["id"], is_error=error)
        ids.append(result.id)
    return ids


def wired_loop(settings: Settings, counter: TokenCounter
               ) -> tuple[LLMClient, ContextEngine, AgentLoop]:
    """The real client, engine (with its six memory tools) and agent loop, wired as the app
    wires them, for tests that go through the loop to a fake Groq."""
    llm = LLMClient(settings.llm)
    engine = ContextEngine(settings, counter, llm)
    registry = ToolRegistry()
    for tool in engine.tools():
        registry.register(tool)
    return llm, engine, AgentLoop(llm, engine, registry, settings.agent)

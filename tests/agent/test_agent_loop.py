"""The agent loop with the real LLM client against the fake Groq server and real tools."""

from __future__ import annotations

import asyncio

import pytest

from rumi import messages as msg
from rumi.agent.loop import AgentLoop
from rumi.base.tools import Tool, ToolArgs, ToolContext, ToolError, ToolRegistry
from rumi.llm.client import LLMClient
from rumi.sessions.state import SessionState
from tests.fakes.context import SimpleContext


class EchoArgs(ToolArgs):
    text: str


async def echo(args: EchoArgs, ctx: ToolContext) -> str:
    return f"{ctx.chat_id}:{args.text.upper()}"


async def broken(args: EchoArgs, ctx: ToolContext) -> str:
    raise ToolError("disk on fire")


def registry(*, slow: asyncio.Event | None = None) -> ToolRegistry:
    reg = ToolRegistry()
    reg.register(Tool("echo", "Echo text upper-cased", EchoArgs, echo))
    reg.register(Tool("broken", "Always fails", EchoArgs, broken))
    if slow is not None:
        async def wait(args: EchoArgs, ctx: ToolContext) -> str:
            slow.set()
            await asyncio.sleep(3600)
            return "never"
        reg.register(Tool("slow", "Takes forever", EchoArgs, wait))
    return reg


@pytest.fixture
async def make_loop(make_settings, fake_groq):
    clients: list[LLMClient] = []

    def factory(toml: str = "", reg: ToolRegistry | None = None, llm_extra: str = ""):
        settings = make_settings(
            f'[llm]\napi_key = "k"\nbase_url = "{fake_groq.base_url}"\nretry_base_delay = 0\n'
            + llm_extra + toml
        )
        llm = LLMClient(settings.llm)
        clients.append(llm)
        context = SimpleContext()
        return AgentLoop(llm, context, reg or registry(), settings.agent), context

    yield factory
    for client in clients:
        await client.close()


async def test_plain_answer_records_every_step(make_loop, fake_groq) -> None:
    loop, context = make_loop()
    fake_groq.enqueue_text("¡Hola!")
    session = SessionState(chat_id="42")
    result = await loop.run(session, "hola", channel_message_id=7)
    assert result.text == "¡Hola!"
    assert result.stopped_by is None and result.turns == 1
    assert [(r, c) for _, _, r, c in context.tape] == [("user", "hola"), ("assistant", "¡Hola!")]
    assert session.items[0].channel_message_id == 7
    assert context.usage and context.usage[0] > 0
    assert context.after_turns == 1
    sent = fake_groq.requests[0]
    assert {t["function"]["name"] for t in sent["tools"]} == {"echo", "broken"}


async def test_tool_round_trip(make_loop, fake_groq) -> None:
    loop, context = make_loop()
    fake_groq.enqueue_tool_call("echo", {"text": "abc"}, call_id="c1")
    fake_groq.enqueue_text("Listo: ABC")
    session = SessionState(chat_id="42")
    result = await loop.run(session, "grita abc")
    assert result.text == "Listo: ABC" and result.tools == ["echo"] and result.turns == 2
    second = fake_groq.requests[1]["messages"]
    assert second[-2]["tool_calls"][0]["id"] == "c1"
    assert second[-1] == {"role": "tool", "content": "42:ABC", "tool_call_id": "c1"}


async def test_invalid_arguments_are_a_tool_error_the_model_sees(make_loop, fake_groq) -> None:
    loop, _ = make_loop()
    fake_groq.enqueue_tool_call("echo", {"txt": "abc"})
    fake_groq.enqueue_text("perdón")
    result = await loop.run(SessionState(chat_id="1"), "x")
    assert result.text == "perdón"
    tool_msg = fake_groq.requests[1]["messages"][-1]
    assert "unknown argument 'txt'" in tool_msg["content"]
    assert "missing argument 'text'" in tool_msg["content"]


async def test_repeated_call_breaker(make_loop, fake_groq) -> None:
    loop, context = make_loop('[agent]\nmax_repeated_calls = 2\n')
    for _ in range(3):
        fake_groq.enqueue_tool_call("echo", {"text": "same"})
    session = SessionState(chat_id="1")
    result = await loop.run(session, "x")
    assert result.stopped_by == "repeated_call"
    assert result.text == msg.BREAKER_REPEATED.format(tool="echo")
    assert result.tools == ["echo"]  # the repeat was not executed
    assert len(fake_groq.requests) == 2
    # transcript stays valid: every tool call has a result, then the honest message
    roles = [i.role for i in session.items]
    assert roles == ["user", "assistant", "tool", "assistant", "tool", "assistant"]
    assert "Not executed" in session.items[4].content


async def test_consecutive_tool_errors_breaker(make_loop, fake_groq) -> None:
    loop, _ = make_loop('[agent]\nmax_consecutive_tool_errors = 2\n')
    fake_groq.enqueue_tool_call("broken", {"text": "a"})
    fake_groq.enqueue_tool_call("broken", {"text": "b"})
    result = await loop.run(SessionState(chat_id="1"), "x")
    assert result.stopped_by == "tool_errors"
    assert "2" in result.text and "broken" in result.text


async def test_success_resets_the_error_count(make_loop, fake_groq) -> None:
    loop, _ = make_loop('[agent]\nmax_consecutive_tool_errors = 2\n')
    fake_groq.enqueue_tool_call("broken", {"text": "a"})
    fake_groq.enqueue_tool_call("echo", {"text": "a"})
    fake_groq.enqueue_tool_call("broken", {"text": "c"})
    fake_groq.enqueue_text("fin")
    result = await loop.run(SessionState(chat_id="1"), "x")
    assert result.stopped_by is None and result.text == "fin"


async def test_max_turns_breaker(make_loop, fake_groq) -> None:
    loop, _ = make_loop('[agent]\nmax_turns = 3\n')
    for i in range(3):
        fake_groq.enqueue_tool_call("echo", {"text": str(i)})
    result = await loop.run(SessionState(chat_id="1"), "x")
    assert result.stopped_by == "max_turns"
    assert result.text == msg.BREAKER_MAX_TURNS.format(turns=3)
    assert len(fake_groq.requests) == 3


async def test_model_unavailable_is_a_plain_message(make_loop, fake_groq) -> None:
    loop, context = make_loop(llm_extra="max_retries = 1\n")
    for _ in range(2):
        fake_groq.enqueue_error(503, "down")
    result = await loop.run(SessionState(chat_id="1"), "x")
    assert result.stopped_by == "llm_unavailable"
    assert result.text == msg.MODEL_UNAVAILABLE
    assert context.after_turns == 1
    assert len(fake_groq.requests) == 2


async def test_cancel_leaves_a_valid_transcript(make_loop, fake_groq) -> None:
    started = asyncio.Event()
    loop, _ = make_loop(reg=registry(slow=started))
    fake_groq.enqueue_tool_calls([("slow", {"text": "a"}, "s1"), ("echo", {"text": "b"}, "s2")])
    session = SessionState(chat_id="1")
    task = asyncio.create_task(loop.run(session, "x"))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    tool_items = [i for i in session.items if i.role == "tool"]
    assert [i.tool_call_id for i in tool_items] == ["s1", "s2"]
    assert all(i.content == msg.TOOL_CANCELLED for i in tool_items)


async def test_tool_use_feedback_is_a_note_for_the_rest_of_the_turn(make_loop, fake_groq):
    """After Groq could not read a tool call, the retry carries the reason as an automatic
    note the context places (not a user message appended after the person's words), and the
    turn's later calls carry the same note, so the context's automatic part stays the same."""
    loop, context = make_loop()
    fake_groq.enqueue_tool_use_failed("echo hola",
                                      message="Failed to parse tool call arguments as JSON")
    fake_groq.enqueue_tool_call("echo", {"text": "hola"})
    fake_groq.enqueue_text("Hecho.")
    result = await loop.run(SessionState(chat_id="n1"), "repite hola")
    assert result.text == "Hecho." and result.tools == ["echo"]
    first, *later = context.notes_seen
    assert first == []
    assert len(later) == 2 and later[0] == later[1] and len(later[0]) == 1
    assert "echo hola" in later[0][0]
    for request in fake_groq.requests:
        assert request["messages"][-1]["role"] in ("user", "tool")
        assert not any(str(m.get("content", "")).startswith("[Rumi") for m in request["messages"])
    assert fake_groq.requests[1]["messages"][-1]["content"] == "repite hola"
    next_turn = await loop.run(SessionState(chat_id="n2"), "otra cosa")
    assert next_turn.text == "ok" and context.notes_seen[-1] == []


async def test_groq_unreachable_says_so_not_overloaded(make_settings) -> None:
    """Issue 33: connection refused (nothing listens) is "Groq cannot be reached", not the
    5xx sentence ("saturado o caído")."""
    import socket

    with socket.socket() as probe:   # a free port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    settings = make_settings(f'[llm]\napi_key = "k"\nbase_url = "http://127.0.0.1:{port}"\n'
                             "retry_base_delay = 0\nmax_retries = 1\n")
    llm = LLMClient(settings.llm)
    try:
        result = await AgentLoop(llm, SimpleContext(), registry(), settings.agent).run(
            SessionState(chat_id="1"), "x")
    finally:
        await llm.close()
    assert result.stopped_by == "llm_unavailable"
    assert result.text == msg.MODEL_UNREACHABLE and "saturado" not in result.text

"""A turn cut by a crash resumes from the tape: the real AgentLoop, ContextEngine and tape,
the real Groq client against the fake server. A "crash" is a task cancelled while the model
thinks (nothing more is written), or a tape written up to the moment a call started; the
"restart" is a fresh engine and an empty session, as session.json is only saved at the end
of a turn."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable

import pytest

from rumi import messages as msg
from rumi.agent.loop import AgentLoop
from rumi.base.tools import Tool, ToolArgs, ToolContext, ToolRegistry
from rumi.config import Settings
from rumi.context import ContextEngine, TokenCounter
from rumi.llm.client import LLMClient
from rumi.sessions.state import SessionState
from tests.fakes.groq_server import FakeGroqServer

CHAT = "4242"


class PayArgs(ToolArgs):
    n: int


class Ledger:
    """A non-idempotent tool: every run appends a line (like `echo pago-N >> pagos.txt`)."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    async def pay(self, args: PayArgs, ctx: ToolContext) -> str:
        self.lines.append(f"pago-{args.n}")
        return "hecho"

    async def peek(self, args: PayArgs, ctx: ToolContext) -> str:
        return ",".join(self.lines)


@pytest.fixture
async def boot(make_settings: Callable[..., Settings], fake_groq: FakeGroqServer,
               counter: TokenCounter) -> AsyncIterator[Callable[[Ledger], AgentLoop]]:
    """A new process: new client, new engine, same data dir (the tape survives)."""
    clients: list[LLMClient] = []

    def start(ledger: Ledger) -> AgentLoop:
        settings = make_settings(f'[llm]\napi_key = "gsk_test"\nbase_url = '
                                 f'"{fake_groq.base_url}"\nmax_retries = 0\n')
        llm = LLMClient(settings.llm)
        clients.append(llm)
        registry = ToolRegistry()
        registry.register(Tool("pay", "Record a payment", PayArgs, ledger.pay))
        registry.register(Tool("peek", "Read the ledger", PayArgs, ledger.peek,
                               changes_state=False))
        return AgentLoop(llm, ContextEngine(settings, counter, llm), registry, settings.agent)

    yield start
    for client in clients:
        await client.close()


def tool_messages(body: dict) -> list[str]:  # type: ignore[type-arg]
    return [m["content"] for m in body["messages"] if m["role"] == "tool"]


async def test_a_crash_after_the_tool_result_resumes_without_running_it_again(
        boot, fake_groq: FakeGroqServer) -> None:
    ledger = Ledger()
    loop = boot(ledger)
    fake_groq.enqueue_tool_call("pay", {"n": 1}, call_id="c1")
    fake_groq.enqueue_text("never sent", delay=3)           # the model thinks; we crash
    task = asyncio.create_task(loop.run(SessionState(CHAT), "paga 1", channel_message_id=7))
    while len(fake_groq.requests) < 2:
        await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert ledger.lines == ["pago-1"]

    fake_groq.queue.clear()
    fake_groq.enqueue_text("Pagado.")
    session = SessionState(CHAT)                             # session.json from before the turn
    result = await boot(ledger).run(session, "paga 1", channel_message_id=7)
    assert result.text == "Pagado."
    assert ledger.lines == ["pago-1"]                        # not run a second time
    resumed = fake_groq.requests[-1]
    assert tool_messages(resumed)[-1].endswith("hecho")      # the recorded result is in context
    users = [i for i in session.items if i.role == "user"]
    assert [u.content for u in users] == ["paga 1"]          # the message is not added twice
    assert result.notice is None


async def test_a_call_cut_while_running_is_reported_not_repeated(
        boot, fake_groq: FakeGroqServer) -> None:
    ledger = Ledger()
    loop = boot(ledger)
    before = SessionState(CHAT)
    engine = loop.context
    await engine.add_message(before, "user", "paga 2", channel_message_id=8)
    calls = [{"id": "c2", "type": "function", "function": {"name": "pay",
                                                          "arguments": '{"n": 2}'}},
             {"id": "c3", "type": "function", "function": {"name": "pay",
                                                          "arguments": '{"n": 3}'}}]
    await engine.add_message(before, "assistant", "", tool_calls=calls)
    await engine.note_tool_start(before, "c2", "pay")        # then the power went off

    fake_groq.enqueue_text("Lo compruebo.")
    result = await boot(ledger).run(SessionState(CHAT), "paga 2", channel_message_id=8)
    assert ledger.lines == []                                # neither call ran after restart
    sent = tool_messages(fake_groq.requests[-1])
    assert sent[-2].endswith(msg.TOOL_MAYBE_RAN) and sent[-1].endswith(msg.TOOL_NOT_RUN)
    assert result.notice == msg.TOOL_MAYBE_RAN_NOTICE.format(tools="pay")


async def _cut_while_paying(loop: AgentLoop, message_id: int) -> None:
    """The tape of a turn whose `pay` call started and then the power went off."""
    before = SessionState(CHAT)
    await loop.context.add_message(before, "user", "paga 20", channel_message_id=message_id)
    await loop.context.add_message(before, "assistant", "", tool_calls=[
        {"id": "c20", "type": "function", "function": {"name": "pay",
                                                      "arguments": '{"n": 20}'}}])
    await loop.context.note_tool_start(before, "c20", "pay")


async def test_the_may_have_run_notice_survives_a_second_crash_before_it_was_sent(
        boot, fake_groq: FakeGroqServer) -> None:
    """Restart 1 settles the cut call and asks the model; a second crash comes while the model
    thinks, before the answer (and its notice) went out. Restart 2 still tells the person."""
    ledger = Ledger()
    await _cut_while_paying(boot(ledger), 20)
    fake_groq.enqueue_text("never sent", delay=3)
    task = asyncio.create_task(boot(ledger).run(SessionState(CHAT), "paga 20",
                                                channel_message_id=20))
    while not fake_groq.requests:
        await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    for _ in range(2):   # and any number of restarts after that
        fake_groq.queue.clear()
        fake_groq.enqueue_text("Lo compruebo.", delay=3)
        task = asyncio.create_task(boot(ledger).run(SessionState(CHAT), "paga 20",
                                                    channel_message_id=20))
        asked = len(fake_groq.requests)
        while len(fake_groq.requests) == asked:
            await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    fake_groq.queue.clear()
    fake_groq.enqueue_text("Lo compruebo.")
    result = await boot(ledger).run(SessionState(CHAT), "paga 20", channel_message_id=20)
    assert result.text == "Lo compruebo." and ledger.lines == []
    assert result.notice == msg.TOOL_MAYBE_RAN_NOTICE.format(tools="pay")
    sent = tool_messages(fake_groq.requests[-1])
    assert sum(m.endswith(msg.TOOL_MAYBE_RAN) for m in sent) == 1   # settled once, not per restart


async def test_an_answer_given_again_after_a_crash_keeps_its_notice(
        boot, fake_groq: FakeGroqServer) -> None:
    """The answer reached the tape, the crash came before the channel sent it: the answer
    given again is the one the person would have had, notice included, without the model."""
    ledger = Ledger()
    await _cut_while_paying(boot(ledger), 21)
    fake_groq.enqueue_text("Lo compruebo.")
    first = await boot(ledger).run(SessionState(CHAT), "paga 20", channel_message_id=21)
    asked = len(fake_groq.requests)
    again = await boot(ledger).run(SessionState(CHAT), "paga 20", channel_message_id=21)
    assert (again.notice, again.text) == (first.notice, first.text)
    assert first.notice == msg.TOOL_MAYBE_RAN_NOTICE.format(tools="pay")
    assert len(fake_groq.requests) == asked and ledger.lines == []


async def test_a_read_only_call_cut_while_running_is_not_announced(
        boot, fake_groq: FakeGroqServer) -> None:
    ledger = Ledger()
    loop = boot(ledger)
    before = SessionState(CHAT)
    await loop.context.add_message(before, "user", "mira", channel_message_id=9)
    await loop.context.add_message(before, "assistant", "", tool_calls=[
        {"id": "c4", "type": "function", "function": {"name": "peek", "arguments": '{"n":0}'}}])
    await loop.context.note_tool_start(before, "c4", "peek")
    fake_groq.enqueue_text("Vacío.")
    result = await boot(ledger).run(SessionState(CHAT), "mira", channel_message_id=9)
    assert result.text == "Vacío." and result.notice is None


async def test_a_turn_that_had_its_answer_is_not_asked_again(
        boot, fake_groq: FakeGroqServer) -> None:
    ledger = Ledger()
    fake_groq.enqueue_tool_call("pay", {"n": 5}, call_id="c5")
    fake_groq.enqueue_text("Pagado el 5.")
    first = await boot(ledger).run(SessionState(CHAT), "paga 5", channel_message_id=10)
    asked = len(fake_groq.requests)
    # crashed before the channel journaled the answer: the message comes back
    again = await boot(ledger).run(SessionState(CHAT), "paga 5", channel_message_id=10)
    assert again.text == first.text == "Pagado el 5."
    assert len(fake_groq.requests) == asked and ledger.lines == ["pago-5"]


async def test_a_new_message_with_another_id_starts_its_own_turn(
        boot, fake_groq: FakeGroqServer) -> None:
    ledger = Ledger()
    fake_groq.enqueue_tool_call("pay", {"n": 6}, call_id="c6")
    fake_groq.enqueue_text("Pagado el 6.")
    fake_groq.enqueue_tool_call("pay", {"n": 6}, call_id="c7")
    fake_groq.enqueue_text("Pagado otra vez.")
    loop = boot(ledger)
    session = SessionState(CHAT)
    await loop.run(session, "paga 6", channel_message_id=11)
    result = await loop.run(session, "paga 6", channel_message_id=12)
    assert result.text == "Pagado otra vez." and ledger.lines == ["pago-6", "pago-6"]

"""Twelve messages in a row, two of them running commands in the real sandbox, on a free Groq
account's limits (8,000 tokens a minute, max_tokens counted before the request runs): every
one is answered, by pacing rather than by failing.

The fake Groq and the bot's limiter share one clock that moves only when the bot waits for
the limits: the buckets refill exactly as much as the bot waited, never because the machine
was slow, so whether the limits are in the way does not depend on the machine's load. The
minute is Groq's 60 s, and the test still takes seconds (no wait is real)."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import pytest

from rumi import messages as msg
from tests.e2e.conftest import ALICE
from tests.e2e.test_sandbox_e2e import new_chat, owned_sandboxes, sandbox_settings  # noqa: F401
from tests.fakes.chat_model import latest_user_text, pending_tool_results
from tests.fakes.groq_server import ScriptedReply

pytestmark = [pytest.mark.e2e, pytest.mark.docker]

WINDOW = 60.0


class PacingClock:
    """Time that passes only while the bot waits for the limits (its pacing `sleep`)."""

    def __init__(self) -> None:
        self.now = time.monotonic()
        self.waited: list[float] = []

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.waited.append(seconds)
        self.now += max(0.0, seconds)
        await asyncio.sleep(0)
COMMANDS = {4: "echo rumi-cuatro", 9: "python3 -c 'print(9 * 9)'"}


def respond(body: dict[str, Any]) -> ScriptedReply:
    if (body.get("response_format") or {}).get("type") == "json_object":
        return ScriptedReply({"role": "assistant",
                              "content": json.dumps({"memories": [], "events": []})})
    results = pending_tool_results(body)
    if results:
        return ScriptedReply({"role": "assistant", "content": f"Salida: {results[-1]['content']}"})
    text = latest_user_text(body)
    for number, command in COMMANDS.items():
        if f"mensaje {number}:" in text:
            call = {"id": f"call_{number}", "type": "function",
                    "function": {"name": "bash", "arguments": json.dumps({"command": command})}}
            return ScriptedReply({"role": "assistant", "content": None, "tool_calls": [call]})
    number = text.split("mensaje ", 1)[-1].split(":", 1)[0]
    return ScriptedReply({"role": "assistant", "content": f"Respuesta al {number}. " * 20})


async def test_twelve_messages_on_free_tier_limits_are_all_answered(
        start_bot, bot_settings, fake_telegram, fake_groq, owned_sandboxes) -> None:  # noqa: F811
    clock = PacingClock()
    fake_groq.limiter.clock = fake_groq.cache.clock = clock
    fake_groq.free_tier()
    fake_groq.window_seconds = WINDOW
    fake_groq.responder = respond
    settings = sandbox_settings(bot_settings)
    settings.llm.rate_window_seconds = WINDOW
    bot = await start_bot(settings)
    bot.app.llm.limiter.clock = clock
    bot.app.llm.sleep = clock.sleep
    owned_sandboxes(bot.app.parts["sandbox"].instance)
    chat = new_chat()
    replies = []
    for number in range(1, 13):
        before = len(fake_telegram.sent)
        fake_telegram.push_text(ALICE, chat, f"mensaje {number}: sigue conmigo")
        sent = await fake_telegram.wait_for_sent(before + 1, timeout=90)
        replies.append(sent[before].text or "")
    for number, reply in enumerate(replies, start=1):
        assert msg.MODEL_UNAVAILABLE not in reply and "límite" not in reply, reply
        if number in COMMANDS:
            assert reply.startswith("Salida:"), reply
        else:
            assert reply.startswith(f"Respuesta al {number}."), reply
    assert "rumi-cuatro" in replies[3] and "81" in replies[8]
    stats = bot.app.llm.stats
    assert stats.failures == 0
    assert stats.rate_waits >= 1 and clock.waited  # the limits were in the way, waited out
    assert stats.usage.cached_tokens > 0
    assert fake_groq.limit_counters.rate_limited == 0  # paced, never refused

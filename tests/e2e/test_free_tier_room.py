"""A free Groq account's room: a chat of short messages on the free tier's 8,000 tokens a
minute keeps at least twenty exchanges before its first compaction, and the dashboard the model
is sent never says the high pressure level («ALTA») in those twenty.

The fake counts prompts with o200k (gpt-oss's tokenizer family, OpenAI's per-message formula),
so Rumi's calibration learns Groq-like numbers; the fake's "minute" is 3 s, and so is the
bot's. The dashboard is found by its header wherever it sits in the request, and the model
answers the newest "mensaje N:" the person wrote (wherever the automatic context sits)."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
import tiktoken

from rumi.paths import ChatPaths
from tests.conftest import TIKTOKEN_DIR, require
from tests.context.test_build_dashboard import dashboard_fields, hand_count
from tests.e2e.conftest import ALICE
from tests.e2e.test_sandbox_e2e import new_chat, owned_sandboxes, sandbox_settings  # noqa: F401
from tests.fakes.groq_server import ScriptedReply

pytestmark = [pytest.mark.e2e, pytest.mark.docker]

WINDOW = 3.0
REQUIRED = 20
MAX_EXCHANGES = 120
DASHBOARD = "=== [2] Dashboard"
LEVEL = re.compile(r"Presión de memoria: (\S+)")
NUMBER = re.compile(r"mensaje (\d+):")
# A short chat as people write it: a line each, answered in a sentence or two.
QUESTIONS = (
    "¿qué tal si salgo a correr mañana temprano?",
    "vale, ¿y qué desayuno antes?",
    "¿cuánta agua llevo para una hora?",
    "perfecto, gracias",
    "¿me recuerdas estirar después?",
)


def newest_number(body: dict[str, Any]) -> str:
    for message in reversed(body.get("messages") or []):
        if message.get("role") == "user":
            found = NUMBER.findall(str(message.get("content") or ""))
            if found:
                return found[-1]
    return "?"


def respond(body: dict[str, Any]) -> ScriptedReply:
    if (body.get("response_format") or {}).get("type") == "json_object":
        return ScriptedReply({"role": "assistant",
                              "content": json.dumps({"memories": [], "events": []})})
    if not body.get("tools"):  # a summary for compaction
        return ScriptedReply({"role": "assistant", "content": "Resumen: charla sobre correr."})
    number = newest_number(body)
    return ScriptedReply({"role": "assistant", "content":
                          f"Respuesta {number}: buena idea; empieza suave, bebe agua y "
                          "cuéntame cómo te fue."})


def dashboards(requests: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    """(level, request) for every agent request: the dashboard block found by its header."""
    found = []
    for body in requests:
        text = "\n".join(str(m.get("content") or "") for m in body.get("messages") or []
                         if DASHBOARD in str(m.get("content") or ""))
        if text:
            found.append((LEVEL.search(text).group(1), body))
    return found


def compacted(tape: Any) -> bool:
    text = tape.read_text(encoding="utf-8") if tape.exists() else ""
    return any(json.loads(line).get("event") == "compact"
               for line in text.splitlines() if line.strip())


async def test_free_tier_chat_keeps_twenty_short_exchanges_without_high_pressure(
        start_bot, bot_settings, fake_telegram, fake_groq, owned_sandboxes) -> None:  # noqa: F811
    require(TIKTOKEN_DIR.exists(), f"tiktoken cache not found at {TIKTOKEN_DIR}")
    o200k = tiktoken.get_encoding("o200k_base")
    fake_groq.free_tier()
    fake_groq.window_seconds = WINDOW
    fake_groq.prompt_counter = lambda body: hand_count(o200k, body["messages"],
                                                       body.get("tools"))
    fake_groq.responder = respond
    settings = sandbox_settings(bot_settings)
    settings.llm.rate_window_seconds = WINDOW
    bot = await start_bot(settings)
    owned_sandboxes(bot.app.parts["sandbox"].instance)
    chat = new_chat()
    tape = ChatPaths(settings.data_dir, str(chat)).tape
    exchanges = 0
    first_high: int | None = None
    for number in range(1, MAX_EXCHANGES + 1):
        before, asked = len(fake_telegram.sent), len(fake_groq.requests)
        text = f"mensaje {number}: {QUESTIONS[number % len(QUESTIONS)]}"
        fake_telegram.push_text(ALICE, chat, text)
        sent = await fake_telegram.wait_for_sent(before + 1, timeout=60)
        assert sent[before].text.startswith(f"Respuesta {number}:"), sent[before].text
        if compacted(tape):
            break
        exchanges = number
        levels = [level for level, _ in dashboards(fake_groq.requests[asked:])]
        assert levels, "no dashboard was sent"
        if first_high is None and {"ALTA", "CRÍTICA"} & set(levels):
            first_high = number
    print(f"\nfree tier: {exchanges} exchanges before the first compaction; "
          f"first high-pressure dashboard at exchange {first_high}")
    assert exchanges >= REQUIRED
    assert first_high is None or first_high > REQUIRED
    # the pressure is the conversation's: what the model was sent adds up
    level, last = dashboards(fake_groq.requests)[-1]
    conversation, room, pct, used, safe = dashboard_fields(last["messages"])
    assert safe < 8_000 and room == safe - (used - conversation)
    assert pct == round(conversation / room * 100, 1)
    # /status says in one line what the cap leaves for the conversation
    before = len(fake_telegram.sent)
    fake_telegram.push_text(ALICE, chat, "/status")
    status = (await fake_telegram.wait_for_sent(before + 1, timeout=30))[before].text or ""
    cap_line = next(line for line in status.splitlines() if "8.000 tokens/min" in line)
    print(cap_line)
    left = int(re.findall(r"([\d.]+) tokens", cap_line)[-1].replace(".", ""))
    assert abs(left - room) <= room * 0.05 and "131k" in cap_line, cap_line

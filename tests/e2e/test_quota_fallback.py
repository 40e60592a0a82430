"""Groq's limits are per model: when gpt-oss-120b's daily tokens are spent, gpt-oss-20b (the
configured fallback, with its own full day) answers at once, the person is told once per chat
and day, and 120b answers again as soon as Groq's own figure says its quota is back. When both
are spent, one clear message carries Groq's real wait.

The real bot through fake Telegram and the fake Groq's free-tier rows. The fake's "day" is
200 s in the first test (a spent 120b is back within seconds, so the test can see it return);
the second uses the real day."""

from __future__ import annotations

import asyncio
import time

import pytest

from rumi import messages as msg
from tests.e2e.conftest import ALICE

pytestmark = pytest.mark.e2e


@pytest.fixture(params=[True, False], ids=["stream", "whole"])
def telegram_stream(request: pytest.FixtureRequest) -> bool:
    """Every fault here is met on streamed answers (drafts) and on whole ones."""
    return bool(request.param)

BIG, SMALL = "openai/gpt-oss-120b", "openai/gpt-oss-20b"
NOTICE_START = msg.QUOTA_FALLBACK.split("{")[0]


async def ask(fake_telegram, text: str) -> tuple[str, float]:
    before = len(fake_telegram.sent)
    started = time.monotonic()
    fake_telegram.push_text(ALICE, ALICE, text)
    sent = await fake_telegram.wait_for_sent(before + 1, timeout=30)
    return sent[before].text or "", time.monotonic() - started


def chat_models(fake_groq, since: int) -> list[str]:
    """Which model answered each chat request (with tools) after the `since`-th answer."""
    return [u["model"] for u in fake_groq.usage_log[since:] if u["request"].get("tools")]


async def test_spent_120b_answers_with_20b_once_told_then_120b_again(
        start_bot, bot_settings, fake_telegram, fake_groq) -> None:
    fake_groq.free_tier()
    fake_groq.day_seconds = 200.0  # 200,000 tokens a "day": 1,000 drip back every second
    fake_groq.default_text = "Aquí estoy."
    await start_bot()
    reply, _ = await ask(fake_telegram, "hola")
    assert reply == "Aquí estoy." and chat_models(fake_groq, 0) == [BIG]

    fake_groq.limiter.spend(BIG, "TPD")  # the day's tokens went elsewhere
    big_before = [r["model"] for r in fake_groq.requests].count(BIG)
    done = len(fake_groq.usage_log)
    reply, took = await ask(fake_telegram, "¿sigues ahí?")
    assert took < 2
    assert reply.startswith(NOTICE_START) and reply.endswith("\n\nAquí estoy.")
    assert f"«{BIG}»" in reply and f"«{SMALL}»" in reply
    refusal = fake_groq.limiter.refusals[-1]
    assert (refusal.model, refusal.scope) == (BIG, "TPD")
    assert chat_models(fake_groq, done) == [SMALL]

    done = len(fake_groq.usage_log)
    reply, _ = await ask(fake_telegram, "¿y ahora?")
    assert reply == "Aquí estoy."  # the same chat, the same day: no second notice
    assert chat_models(fake_groq, done) == [SMALL]
    # While 120b was out it was asked once: Groq's 429 said until when, and Rumi believed it.
    assert [r["model"] for r in fake_groq.requests].count(BIG) - big_before == 1

    await asyncio.sleep(refusal.retry_after + 0.2)  # Groq's own figure has passed
    done = len(fake_groq.usage_log)
    reply, _ = await ask(fake_telegram, "¿quién responde?")
    assert reply == "Aquí estoy." and chat_models(fake_groq, done)[:1] == [BIG]
    notices = [s.text for s in fake_telegram.sent if (s.text or "").startswith(NOTICE_START)]
    assert len(notices) == 1


async def test_both_spent_is_one_clear_message_with_groqs_wait(
        start_bot, fake_telegram, fake_groq) -> None:
    fake_groq.free_tier()  # the real day: 200,000 tokens refilled over 24 h
    fake_groq.default_text = "Aquí estoy."
    await start_bot()
    fake_groq.limiter.spend(BIG, "TPD")
    fake_groq.limiter.spend(SMALL, "TPD")
    before = len(fake_telegram.sent)
    reply, took = await ask(fake_telegram, "hola")
    assert took < 2
    waits = {r.model: r.retry_after for r in fake_groq.limiter.refusals}
    assert set(waits) == {BIG, SMALL} and min(waits.values()) > 60  # minutes, from Groq
    assert reply == msg.DAILY_LIMIT.format(wait=msg.format_wait(min(waits.values())))
    await asyncio.sleep(0.5)
    assert len(fake_telegram.sent) == before + 1  # one message, nothing else
    assert fake_groq.usage_log == []  # nothing was answered by either model

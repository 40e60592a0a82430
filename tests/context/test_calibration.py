"""Calibration against the provider's reported prompt tokens (real groq client, fake server)."""

from __future__ import annotations

import re

from rumi.context import ContextEngine, TokenCounter
from rumi.llm.client import LLMClient
from rumi.sessions.state import SessionState
from tests.prompt_shape import automatic

USED = re.compile(r"· prompt ([\d.]+) /")   # Spanish numbers: 2.935


def used_on_dashboard(messages: list[dict]) -> int:
    return int(USED.search(automatic(messages)).group(1).replace(".", ""))


def llm_settings(make_settings, fake_groq, extra: str = ""):
    return make_settings(
        f'[llm]\napi_key = "gsk_test"\nbase_url = "{fake_groq.base_url}"\n'
        f"max_retries = 0\n{extra}")


async def test_factor_converges_on_reported_usage(fake_groq, make_settings,
                                                  counter: TokenCounter) -> None:
    settings = llm_settings(make_settings, fake_groq)
    llm = LLMClient(settings.llm)
    engine = ContextEngine(settings, counter, llm)
    session = SessionState(chat_id="cal")
    try:
        for n in range(8):
            await engine.add_message(session, "user", f"pregunta número {n} " * (n + 1))
            messages = await engine.build(session)
            local = engine.runtime(session).last_local
            fake_groq.enqueue_text(f"respuesta {n}", prompt_tokens=round(local * 1.3))
            reply = await llm.complete(messages)
            engine.record_usage(session, reply.usage.prompt_tokens)
            await engine.add_message(session, "assistant", reply.content)
    finally:
        await llm.close()
    cal = counter.calibration(settings.llm.model)
    assert cal is not None and cal.samples == 8
    assert abs(cal.factor - 1.3) < 0.01
    messages = await engine.build(session)
    local = engine.runtime(session).last_local
    assert abs(used_on_dashboard(messages) - 1.3 * local) <= 0.01 * local
    stored = session.metadata["context"]["calibration"][settings.llm.model]
    assert stored["samples"] == 8 and abs(stored["factor"] - 1.3) < 0.01


async def test_dashboard_tracks_a_model_with_another_tokenizer(fake_groq, make_settings,
                                                              counter: TokenCounter) -> None:
    """The fake counts 0.4 tokens per JSON character: after a few calls the dashboard's
    number for a prompt predicts what the provider reports for it."""
    fake_groq.prompt_token_factor = 0.4
    settings = llm_settings(make_settings, fake_groq)
    llm = LLMClient(settings.llm)
    engine = ContextEngine(settings, counter, llm)
    session = SessionState(chat_id="cal2")
    errors = []
    try:
        for n in range(10):
            await engine.add_message(session, "user", f"Cuéntame el paso {n} del plan, "
                                     "con detalles sobre archivos y comandos. " * 3)
            messages = await engine.build(session)
            predicted = used_on_dashboard(messages)
            reply = await llm.complete(messages)
            reported = reply.usage.prompt_tokens
            errors.append(abs(predicted - reported) / reported)
            engine.record_usage(session, reported)
            await engine.add_message(session, "assistant", "Paso explicado: " + "bla " * 20)
    finally:
        await llm.close()
    assert errors[0] > 0.10  # uncalibrated o200k is far off this "model"
    assert max(errors[3:]) < 0.03


async def test_calibration_survives_a_restart(make_settings, counter: TokenCounter) -> None:
    settings = make_settings()
    engine = ContextEngine(settings, counter, None)
    session = SessionState(chat_id="cal3")
    await engine.add_message(session, "user", "hola")
    await engine.build(session)
    engine.record_usage(session, round(engine.runtime(session).last_local * 1.2))
    restored = SessionState.from_dict(session.to_dict())
    fresh_counter = TokenCounter()
    fresh = ContextEngine(settings, fresh_counter, None)
    await fresh.open(restored)
    assert abs(fresh_counter.factor(settings.llm.model) - 1.2) < 0.01
    assert "Calibración" in fresh.status_text(restored)


def test_calibration_ignores_garbage(counter: TokenCounter) -> None:
    counter.observe("m", 1000, 0)
    counter.observe("m", 0, 50)
    assert counter.factor("m") == 1.0
    counter.observe("m", 1000, 1_000_000)
    assert counter.factor("m") == 3.0  # clamped, a broken usage report cannot explode it

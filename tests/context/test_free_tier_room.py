"""The free tier's room: once Groq tells the account's per-minute cap, the safe limit is that cap
less the answer's budget, memory pressure measures the conversation against what the fixed part
leaves of it, and `/status` says so in one line (in both languages). The real client talks to
the fake Groq with the free tier's limits (8,000 tokens a minute on gpt-oss)."""

from __future__ import annotations

import re

from rumi import messages as msg
from rumi.context import dashboard as dash
from rumi.context.status import cap_room_line
from rumi.sessions.state import SessionState
from tests.context.conftest import wired_loop


async def test_known_cap_sets_the_room_and_status_says_it(make_settings, fake_groq,
                                                          counter) -> None:
    fake_groq.free_tier()
    settings = make_settings(f'[llm]\napi_key = "gsk_test"\nbase_url = "{fake_groq.base_url}"\n'
                             "max_retries = 0\n")
    llm, engine, loop = wired_loop(settings, counter)
    session = SessionState(chat_id="free")
    await engine.open(session)
    assert engine.safe_limit == int(0.8 * settings.llm.context_window)
    assert cap_room_line(engine, session) is None  # the cap is not known yet
    fake_groq.enqueue_text("Hola, ¿en qué te ayudo?")
    try:
        await loop.run(session, "hola")
    finally:
        await llm.close()
    # 8,000 × the limiter's 3 % margin, less the whole answer budget: no second 20 %
    assert engine.safe_limit == int(8_000 * 0.97) - settings.llm.max_output_tokens
    used, conversation = engine.measure_parts(session)
    room = engine.safe_limit - (used - conversation)
    assert 0 < conversation < room < engine.safe_limit
    assert engine.pressure(session) == conversation / room * 100
    assert engine.pressure(session) < engine.cfg.optimize_threshold * 0.75  # BAJA
    with msg.use_language("en"):
        line = cap_room_line(engine, session)
    assert line == (f"Groq's 8,000 tokens/min cap leaves {room:,} tokens for the conversation "
                    "(model window 131k)")
    with msg.use_language("es"):
        line = cap_room_line(engine, session) or ""
    assert line.startswith("El límite de Groq de 8.000 tokens/min deja ")
    assert f"{room:,}".replace(",", ".") in line and "131k" in line


async def test_cap_larger_than_the_window_changes_nothing(make_settings, fake_groq,
                                                          counter) -> None:
    """A paid account's cap above 80 % of the window: the window limits, /status is silent."""
    settings = make_settings(f'[llm]\napi_key = "gsk_test"\nbase_url = "{fake_groq.base_url}"\n'
                             "max_retries = 0\ncontext_window = 8192\n")
    fake_groq.free_tier()
    llm, engine, loop = wired_loop(settings, counter)
    session = SessionState(chat_id="paid")
    fake_groq.enqueue_text("Hola.")
    try:
        await loop.run(session, "hola")
    finally:
        await llm.close()
    assert llm.tokens_per_minute() == 8_000
    assert engine.safe_limit == int(0.8 * 8_192)  # 6,553 < 7,760 − 1,024
    assert cap_room_line(engine, session) is None


def test_pressure_is_the_conversations_share_of_its_room(make_settings) -> None:
    """The same prompt, two fixed parts: the seed's used / safe would read both as 50 %; the
    conversation's pressure tells a free account's crowded room from a roomy one, and the
    hard limit still keeps the whole prompt under the safe limit."""
    cfg = make_settings().context
    roomy = dash.DashboardData(used=2_500, conversation=2_000, safe_limit=5_000,
                               disk_loaded=5, disk_total=5)
    crowded = dash.DashboardData(used=2_500, conversation=200, safe_limit=5_000,
                                 disk_loaded=5, disk_total=5)
    assert (roomy.room, crowded.room) == (4_500, 2_700)
    assert round(roomy.pressure, 1) == 44.4 and round(crowded.pressure, 1) == 7.4
    assert dash.level(crowded.pressure, cfg) == "BAJA"
    text = dash.render(crowded, cfg)
    assert re.search(r"Conversación \(7–8\): 200 / 2\.700 tokens \(7,4%\) · prompt 2\.500 / "
                     r"5\.000", text), text
    at_hard = crowded.fixed + cfg.hard_limit / 100 * crowded.room
    assert at_hard <= crowded.safe_limit
    assert dash.pressure(10, 0) == 100.0  # no room at all: compact

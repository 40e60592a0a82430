"""Reminders and scheduled tasks through the real bot, fake Telegram and fake Groq."""

from __future__ import annotations

import asyncio

import pytest

from rumi import messages as msg
from tests.e2e.conftest import ALICE
from tests.prompt_shape import person

pytestmark = pytest.mark.e2e


def reminder_texts(fake_telegram) -> list[str]:
    return [t for t in fake_telegram.texts(ALICE) if t.startswith("⏰ Recordatorio")]


async def schedule(fake_groq, fake_telegram, sent_before: int, **arguments: object) -> None:
    """The person asks; the model calls `schedule` and confirms."""
    fake_groq.enqueue_tool_call("schedule", arguments)
    fake_groq.enqueue_text("Hecho.")
    fake_telegram.push_text(ALICE, ALICE, "recuérdamelo")
    sent = await fake_telegram.wait_for_sent(sent_before + 1)
    assert sent[-1].text == "Hecho."


async def test_reminder_two_seconds_ahead_arrives_once(start_bot, fake_telegram,
                                                       fake_groq) -> None:
    await start_bot()
    await schedule(fake_groq, fake_telegram, 0, when="+2s", text="sacar la ropa")
    tool_result = fake_groq.requests[1]["messages"][-1]   # the step ends with the result (es)
    assert tool_result["role"] == "tool" and "Programado #1" in tool_result["content"]
    sent = await fake_telegram.wait_for_sent(2)
    assert sent[1].text == msg.REMINDER_FIRED.format(note="", text="sacar la ropa")
    fake_telegram.push_text(ALICE, ALICE, "/reminders")
    sent = await fake_telegram.wait_for_sent(3)
    assert sent[2].text == msg.REMINDERS_EMPTY
    assert len(reminder_texts(fake_telegram)) == 1


async def test_reminder_due_during_restart_arrives_once_after_it(
        start_bot, bot_settings, fake_telegram, fake_groq) -> None:
    settings = bot_settings("[reminders]\nlate_after_seconds = 1\n")
    bot = await start_bot(settings)
    await schedule(fake_groq, fake_telegram, 0, when="+2s", text="llamar a Ana")
    await bot.stop()
    await asyncio.sleep(3)  # Rumi is down while the reminder falls due
    assert reminder_texts(fake_telegram) == []
    await start_bot(settings)
    sent = await fake_telegram.wait_for_sent(2)
    assert sent[1].text == msg.REMINDER_FIRED.format(note=msg.REMINDER_LATE,
                                                     text="llamar a Ana")
    fake_telegram.push_text(ALICE, ALICE, "/reminders")
    sent = await fake_telegram.wait_for_sent(3)
    assert sent[2].text == msg.REMINDERS_EMPTY
    assert len(reminder_texts(fake_telegram)) == 1


async def test_cancel_stops_one(start_bot, fake_telegram, fake_groq) -> None:
    await start_bot()
    await schedule(fake_groq, fake_telegram, 0, when="+3s", text="regar las plantas")
    await schedule(fake_groq, fake_telegram, 1, when="+5s", text="apagar el horno")
    fake_telegram.push_text(ALICE, ALICE, "/reminders")
    listing = (await fake_telegram.wait_for_sent(3))[2].text or ""
    assert "#1 · " in listing and "regar las plantas" in listing and "#2 · " in listing
    fake_telegram.push_text(ALICE, ALICE, "/cancel 1")
    sent = await fake_telegram.wait_for_sent(4)
    assert sent[3].text == msg.CANCEL_DONE.format(id=1, text="regar las plantas")
    # the later one arrives; the cancelled one, due earlier, never did
    sent = await fake_telegram.wait_for_sent(5)
    assert sent[4].text == msg.REMINDER_FIRED.format(note="", text="apagar el horno")
    assert reminder_texts(fake_telegram) == [sent[4].text]
    fake_telegram.push_text(ALICE, ALICE, "/cancel 1")
    sent = await fake_telegram.wait_for_sent(6)
    assert sent[5].text == msg.CANCEL_NOT_FOUND.format(id=1)


async def test_scheduled_task_runs_a_turn_and_sends_the_result(start_bot, fake_telegram,
                                                               fake_groq) -> None:
    await start_bot()
    await schedule(fake_groq, fake_telegram, 0, when="+1s", text="dime qué día es",
                   task=True)
    fake_groq.enqueue_text("Hoy es miércoles.")
    sent = await fake_telegram.wait_for_sent(2)
    assert sent[1].text == msg.REMINDER_TASK_RESULT.format(id=1, note="",
                                                           result="Hoy es miércoles.")
    asked = person(fake_groq.requests[2])
    assert asked["role"] == "user" and "[Tarea programada #1" in asked["content"]
    assert "dime qué día es" in asked["content"]


async def test_timezone_is_per_chat_and_checked(start_bot, fake_telegram, fake_groq) -> None:
    await start_bot()
    fake_telegram.push_text(ALICE, ALICE, "/timezone Marte/Olympus")
    sent = await fake_telegram.wait_for_sent(1)
    assert sent[0].text == msg.TIMEZONE_UNKNOWN.format(name="Marte/Olympus")
    fake_telegram.push_text(ALICE, ALICE, "/timezone Europe/Madrid")
    sent = await fake_telegram.wait_for_sent(2)
    assert (sent[1].text or "").startswith("🕒 Listo: la zona horaria de este chat es ahora "
                                           "Europe/Madrid")
    await schedule(fake_groq, fake_telegram, 2, when="2099-01-01T09:30", text="brindar")
    assert "2099-01-01T09:30+01:00 Europe/Madrid" in \
        fake_groq.requests[1]["messages"][-1]["content"]
    fake_telegram.push_text(ALICE, ALICE, "/reminders")
    listing = (await fake_telegram.wait_for_sent(4))[3].text or ""
    assert "Europe/Madrid" in listing and "01/01/2099 09:30" in listing
    assert fake_groq.requests and all("Marte" not in str(r) for r in fake_groq.requests)

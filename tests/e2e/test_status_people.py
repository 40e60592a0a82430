"""`/status` answers what a person asks: model, key health, uptime, memories, today's use;
the internals only with `/status detalle`."""

from __future__ import annotations

from rumi import messages as msg
from tests.e2e.conftest import ALICE


async def ask(fake_telegram, text: str) -> str:
    before = len(fake_telegram.sent)
    fake_telegram.push_text(ALICE, ALICE, text)
    return (await fake_telegram.wait_for_sent(before + 1))[before].text or ""


async def test_status_follows_the_key_and_the_day(start_bot, fake_telegram, fake_groq) -> None:
    await start_bot()
    fresh = await ask(fake_telegram, "/status")
    assert msg.STATUS_KEY_UNTRIED in fresh and "En marcha desde hace" in fresh
    assert "Recuerdos guardados: 0" in fresh and msg.STATUS_DETAIL_HINT in fresh
    assert "Presión de memoria" not in fresh and "Calibración" not in fresh
    fake_groq.enqueue_status(401)
    assert "clave de API" in await ask(fake_telegram, "hola")
    refused = await ask(fake_telegram, "/status")
    assert msg.STATUS_KEY_REFUSED in refused and "funciona" not in refused
    fake_groq.enqueue_text("Ya funciono.")
    assert await ask(fake_telegram, "¿y ahora?") == "Ya funciono."
    await ask(fake_telegram, "/remember ciudad: Lima")
    working = await ask(fake_telegram, "/status")
    assert "Clave de Groq: funciona (última respuesta hace" in working
    assert "respuestas: 1" in working and msg.STATUS_KEY_REFUSED not in working
    assert "Recuerdos guardados: 1" in working
    detail = await ask(fake_telegram, "/status detalle")
    assert "Presión de memoria" in detail and "Calibración" in detail
    assert "Recuerdos guardados: 1" in detail and msg.STATUS_DETAIL_HINT not in detail

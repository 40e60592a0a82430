"""Telegram channel handlers via PTB's `process_update` (no polling), against the fake Bot API."""

from __future__ import annotations

import itertools

import pytest
from telegram import Update

from rumi import messages as msg
from rumi.app import build_app
from rumi.channels.telegram import TelegramChannel
from tests.fakes.telegram_server import FakeTelegramServer

TOKEN = "777:UNIT-token"
ids = itertools.count(1)


def update(user_id: int, chat_id: int, text: str, chat_type: str = "private",
           reply_to: dict | None = None) -> dict:
    message = {"message_id": next(ids), "date": 0, "text": text,
               "chat": {"id": chat_id, "type": chat_type},
               "from": {"id": user_id, "is_bot": False, "first_name": "Ana"}}
    if reply_to:
        message["reply_to_message"] = reply_to
    return {"update_id": next(ids), "message": message}


@pytest.fixture
async def channel(make_settings, fake_groq):
    server = await FakeTelegramServer(TOKEN).start()
    settings = make_settings(
        f'[telegram]\ntoken = "{TOKEN}"\nbase_url = "{server.base_url}"\n'
        f'base_file_url = "{server.base_file_url}"\nallowed_users = [1]\n'
        f'[llm]\napi_key = "k"\nbase_url = "{fake_groq.base_url}"\n'
        "[sandbox]\nenabled = false\n[memory]\nembeddings_enabled = false\n")
    app = await build_app(settings)
    chan = TelegramChannel(settings.telegram, app.assistant)
    application = chan.build()
    await application.initialize()
    chan.server = server  # type: ignore[attr-defined]
    try:
        yield chan
    finally:
        await chan.drain()
        await application.shutdown()
        await app.stop()
        await server.stop()


async def process(chan: TelegramChannel, data: dict) -> None:
    assert chan.application is not None
    await chan.application.process_update(Update.de_json(data, chan.application.bot))
    for task in list(chan._tasks):
        await task


async def test_stranger_refused_exactly_once(channel: TelegramChannel, fake_groq) -> None:
    await process(channel, update(9, 9, "hola"))
    await process(channel, update(9, 9, "hola otra vez"))
    server = channel.server  # type: ignore[attr-defined]
    assert server.texts() == [msg.NOT_AUTHORIZED.format(user_id=9)]
    assert fake_groq.requests == []


async def test_group_ignores_unaddressed_and_answers_mentions(channel: TelegramChannel,
                                                              fake_groq) -> None:
    server = channel.server  # type: ignore[attr-defined]
    await process(channel, update(1, -50, "charla normal", "group"))
    await process(channel, update(9, -50, "un extraño hablando", "group"))
    await process(channel, update(1, -50, "/status@otro_bot", "group"))
    assert server.sent == [] and fake_groq.requests == []
    fake_groq.enqueue_text("¡presente!")
    await process(channel, update(1, -50, "@rumi_test_bot ¿estás?", "group"))
    assert server.texts() == ["¡presente!"]
    user = [m for m in fake_groq.requests[0]["messages"] if m["role"] == "user"][-1]
    assert "@rumi_test_bot" not in user["content"] and "¿estás?" in user["content"]
    bot_msg = {"message_id": 5, "date": 0, "chat": {"id": -50, "type": "group"},
               "from": {"id": 777, "is_bot": True, "first_name": "Rumi"}, "text": "x"}
    fake_groq.enqueue_text("te leo")
    await process(channel, update(1, -50, "respuesta al bot", "group", reply_to=bot_msg))
    assert server.texts()[-1] == "te leo"
    await process(channel, update(1, -50, "/help@rumi_test_bot", "group"))
    assert "/remember" in server.texts()[-1]


async def test_flood_control_waits_and_resends(channel: TelegramChannel, fake_groq) -> None:
    server = channel.server  # type: ignore[attr-defined]
    server.flood(1, retry_after=1)
    fake_groq.enqueue_text("después de esperar")
    await process(channel, update(1, 1, "hola"))
    assert server.texts() == ["después de esperar"]
    assert sum(1 for m, _ in server.calls if m == "sendMessage") == 2

"""Telegram channel handlers via PTB's `process_update` (no polling), against the fake Bot API."""

from __future__ import annotations

import pytest

from rumi import messages as msg
from rumi.base.commands import CommandRequest
from rumi.base.replies import Reply
from rumi.channels.telegram import TelegramChannel
from tests.channels.telegram_harness import (
    bot_api,
    channel_config,
    ids,
    process,
    running_channel,
    update,
)
from tests.fakes.telegram_server import FakeTelegramServer
from tests.prompt_shape import person

TOKEN = "777:UNIT-token"


@pytest.fixture
async def channel(make_settings, fake_groq):
    async with bot_api(TOKEN) as server, running_channel(
            make_settings(channel_config(TOKEN, server, fake_groq))) as chan:
        chan.server = server  # type: ignore[attr-defined]
        yield chan


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
    user = person(fake_groq.requests[0])
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


def button_press(user_id: int, keyboard: dict, data: str) -> dict:
    """A press of an inline button on the bot's message `keyboard` (as Telegram sends it)."""
    return {"update_id": next(ids), "callback_query": {
        "id": f"cb{next(ids)}", "chat_instance": "ci", "data": data, "message": keyboard,
        "from": {"id": user_id, "is_bot": False, "first_name": "Ana"}}}


def bot_message(server: FakeTelegramServer, chat_id: int, message_id: int) -> dict:
    """One of the bot's sent messages as it comes back inside a reply or a button press
    (a non-zero date: Telegram's mark of a message the bot can still see)."""
    return {"message_id": message_id, "date": 1, "chat": {"id": chat_id, "type": "private"},
            "from": server.bot_user(), "text": "x"}


async def test_button_reply_gets_typing_and_can_be_pinned(channel: TelegramChannel,
                                                         fake_groq) -> None:
    """A button that asks the model: "typing…" while it works, and `/pin` as a reply to the
    answer pins the item it shows, exactly as for a typed message."""
    server = channel.server  # type: ignore[attr-defined]

    async def ask(request: CommandRequest) -> Reply:
        await server.wait_for_call("sendChatAction", timeout=5)  # a slow model, still typing
        return await channel.assistant.handle(request.chat_id, request.user_id, request.args)

    channel.assistant.register_command("ask", ask, needs_session=False)
    fake_groq.enqueue_text("La receta lleva **quinua**.")
    await process(channel, button_press(1, bot_message(server, 1, 99), "/ask ¿y la receta?"))
    assert server.texts() == ["La receta lleva <b>quinua</b>."]
    assert (1, "typing") in server.actions
    [answer] = server.sent
    session = await channel.assistant.sessions.get("1")
    item = session.items[-1]
    assert item.role == "assistant" and item.channel_message_id == answer.message_id

    await process(channel, update(1, 1, "/pin",
                                  reply_to=bot_message(server, 1, answer.message_id)))
    assert server.texts()[-1] == msg.PINNED.format(id=item.id) and item.pinned


async def test_button_failure_is_one_friendly_line(channel: TelegramChannel, fake_groq) -> None:
    """The answer cannot be sent (flood control twice): one short line, as for a message."""
    server = channel.server  # type: ignore[attr-defined]
    server.flood(2, retry_after=1)
    await process(channel, button_press(1, bot_message(server, 1, 99), "/help"))
    assert server.texts() == [msg.INTERNAL_ERROR]

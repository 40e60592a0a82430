"""What the Telegram channel's tests share: the fake Bot API, updates as Telegram sends them,
and a real `TelegramChannel` on the real app driven by PTB's `process_update` (no polling)."""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import AsyncIterator
from typing import Any

from telegram import Update

from rumi.app import build_app
from rumi.channels.telegram import TelegramChannel
from rumi.config import Settings
from tests.fakes.telegram_server import FakeTelegramServer

ids = itertools.count(1)


def update(user_id: int, chat_id: int, text: str, chat_type: str = "private",
           reply_to: dict | None = None) -> dict:  # type: ignore[type-arg]
    message = {"message_id": next(ids), "date": 0, "text": text,
               "chat": {"id": chat_id, "type": chat_type},
               "from": {"id": user_id, "is_bot": False, "first_name": "Ana"}}
    if reply_to:
        message["reply_to_message"] = reply_to
    return {"update_id": next(ids), "message": message}


@contextlib.asynccontextmanager
async def bot_api(token: str) -> AsyncIterator[FakeTelegramServer]:
    fake = await FakeTelegramServer(token).start()
    try:
        yield fake
    finally:
        await fake.stop()


def channel_config(token: str, server: FakeTelegramServer, groq: Any,  # noqa: ANN401
                   telegram: str = "") -> str:
    """A config for the fake servers: user 1 allowed, no sandbox, no embeddings; `telegram`
    adds keys to the `[telegram]` table."""
    return (f'[telegram]\ntoken = "{token}"\nbase_url = "{server.base_url}"\n'
            f'base_file_url = "{server.base_file_url}"\nallowed_users = [1]\n{telegram}'
            f'[llm]\napi_key = "k"\nbase_url = "{groq.base_url}"\n'
            "[sandbox]\nenabled = false\n[memory]\nembeddings_enabled = false\n")


@contextlib.asynccontextmanager
async def running_channel(settings: Settings, *, with_steps: bool = False,
                          **options: Any) -> AsyncIterator[TelegramChannel]:  # noqa: ANN401
    """The app and its channel, initialised; turns drained and everything stopped after.
    `with_steps`: the channel is given the app's tool steps (progress messages)."""
    app = await build_app(settings)
    if with_steps:
        options["steps"] = app.steps
    chan = TelegramChannel(settings.telegram, app.assistant, **options)
    application = chan.build()
    await application.initialize()
    try:
        yield chan
    finally:
        await chan.drain()
        await application.shutdown()
        await app.stop()


async def process(chan: TelegramChannel, data: dict) -> None:  # type: ignore[type-arg]
    """One update through PTB, then every turn it started, to the end."""
    assert chan.application is not None
    await chan.application.process_update(Update.de_json(data, chan.application.bot))
    for task in list(chan._tasks):
        await task

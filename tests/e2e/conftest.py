"""A running Rumi (real `build_app` + Telegram channel, long polling) against fake servers."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from rumi.app import App, build_app
from rumi.channels.inbox import Inbox
from rumi.channels.telegram import TelegramChannel
from rumi.config import Settings
from tests.fakes.groq_server import FakeGroqServer
from tests.fakes.telegram_server import FakeTelegramServer

TOKEN = "777:E2E-token"
ALICE = 111  # allowed
MALLORY = 666  # not allowed


@dataclass
class RunningBot:
    app: App
    channel: TelegramChannel
    stopped: bool = False

    async def stop(self) -> None:
        if self.stopped:
            return
        self.stopped = True
        await self.channel.stop()
        await self.app.stop()


@pytest.fixture
async def fake_telegram() -> AsyncIterator[FakeTelegramServer]:
    server = await FakeTelegramServer(TOKEN).start()
    try:
        yield server
    finally:
        await server.stop()


@pytest.fixture
def bot_settings(make_settings, fake_groq: FakeGroqServer, fake_telegram: FakeTelegramServer,
                 telegram_stream: bool) -> Callable[..., Settings]:
    def factory(extra: str = "", llm_extra: str = "") -> Settings:
        return make_settings(
            f'[telegram]\ntoken = "{TOKEN}"\nbase_url = "{fake_telegram.base_url}"\n'
            f'base_file_url = "{fake_telegram.base_file_url}"\n'
            f"allowed_users = [{ALICE}]\npoll_timeout = 1\n"
            f"stream = {str(telegram_stream).lower()}\n"
            f'[llm]\napi_key = "gsk_test"\nbase_url = "{fake_groq.base_url}"\n'
            "retry_base_delay = 0.05\nmax_retries = 2\ntimeout = 5\n" + llm_extra
            + "[sandbox]\nenabled = false\n[memory]\nembeddings_enabled = false\n" + extra
        )

    return factory


@pytest.fixture
async def start_bot(bot_settings) -> AsyncIterator[Callable[..., object]]:
    running: list[RunningBot] = []

    async def start(settings: Settings | None = None) -> RunningBot:
        settings = settings or bot_settings()
        app = await build_app(settings)
        channel = TelegramChannel(settings.telegram, app.assistant,
                                  Inbox(settings.data_dir / "inbox" / "telegram.jsonl"),
                                  steps=app.steps, answer_text=app.answer_text)
        await app.start()
        await channel.start()
        bot = RunningBot(app, channel)
        running.append(bot)
        return bot

    yield start
    for bot in running:
        await bot.stop()


def chat_dir(settings: Settings, chat_id: int) -> Path:
    return settings.data_dir / "chats" / str(chat_id)

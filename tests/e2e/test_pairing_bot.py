"""A stranger who writes to the running bot gets a code once; `rumi pairing approve CODE` lets
them in without a restart (and adds them to the config); nothing they sent before is answered."""

from __future__ import annotations

import argparse

import pytest

from rumi import messages as msg
from rumi.app import build_app
from rumi.channels.inbox import Inbox
from rumi.channels.pairing import PairingStore
from rumi.channels.telegram import TelegramChannel
from rumi.cli import build_parser
from rumi.config_load import load_settings
from tests.e2e.conftest import ALICE, MALLORY

pytestmark = pytest.mark.e2e


async def _run(argv: list[str], settings) -> int:
    args: argparse.Namespace = build_parser().parse_args(argv)
    result = args.handler(args, settings)
    return await result if hasattr(result, "__await__") else result


async def test_stranger_asks_owner_approves_bot_answers(bot_settings, fake_telegram, fake_groq,
                                                        capsys):
    settings = bot_settings()
    app = await build_app(settings)
    channel = TelegramChannel(settings.telegram, app.assistant,
                              Inbox(settings.data_dir / "inbox" / "telegram.jsonl"),
                              pairing=PairingStore(settings.data_dir))
    await app.start()
    await channel.start()
    try:
        fake_telegram.push_text(MALLORY, MALLORY, "hola, ¿me ayudas?")
        fake_telegram.push_text(MALLORY, MALLORY, "¿hola?")
        fake_groq.enqueue_text("para Ana")
        fake_telegram.push_text(ALICE, ALICE, "hola")
        sent = await fake_telegram.wait_for_sent(2)
        [ask] = [s for s in sent if s.chat_id == MALLORY]
        [request] = PairingStore(settings.data_dir).load().pending
        assert ask.text == msg.PAIRING_ASK.format(code=request.code)
        assert len(fake_groq.requests) == 1  # only Ana's message reached the model

        assert await _run(["pairing", "list"], settings) == 0
        assert request.code in capsys.readouterr().out
        assert await _run(["pairing", "approve", request.code], settings) == 0
        out = capsys.readouterr().out
        assert f"added {MALLORY} to telegram.allowed_users" in out
        assert MALLORY in load_settings(settings.source).telegram.allowed_users
        await fake_telegram.wait_for_sent(3)  # "you can talk to me now"
        assert fake_telegram.sent[2].text == msg.PAIRING_APPROVED

        fake_groq.enqueue_text("¡Bienvenido!")
        fake_telegram.push_text(MALLORY, MALLORY, "ahora sí")
        await fake_telegram.wait_for_sent(4)
        assert fake_telegram.sent[3].text == "¡Bienvenido!"
        assert fake_telegram.sent[3].chat_id == MALLORY
    finally:
        await channel.stop()
        await app.stop()


async def test_denied_stranger_hears_nothing_more(bot_settings, fake_telegram, fake_groq,
                                                  capsys):
    settings = bot_settings()
    store = PairingStore(settings.data_dir)
    request = store.request(MALLORY, "Mallory")
    assert await _run(["pairing", "deny", request.code], settings) == 0
    assert "denied" in capsys.readouterr().out
    assert await _run(["pairing", "approve", "NOPE1234"], settings) == 1
    assert "no pending request" in capsys.readouterr().err
    app = await build_app(settings)
    channel = TelegramChannel(settings.telegram, app.assistant, pairing=store)
    await app.start()
    await channel.start()
    try:
        fake_telegram.push_text(MALLORY, MALLORY, "hola")
        fake_groq.enqueue_text("para Ana")
        fake_telegram.push_text(ALICE, ALICE, "hola")
        sent = await fake_telegram.wait_for_sent(1)
        assert [s.chat_id for s in sent] == [ALICE]
    finally:
        await channel.stop()
        await app.stop()


@pytest.mark.parametrize("setting", ["auto", "es"])
async def test_a_stranger_is_asked_in_their_own_language(bot_settings, fake_telegram, fake_groq,
                                                       setting):
    """The pairing code reaches a stranger in the language of their Telegram app, also when
    agent.language fixes Spanish for the people Rumi serves (issue 27: it was Spanish), and
    nothing about them is remembered as a chat's language."""
    settings = bot_settings(f'[agent]\nlanguage = "{setting}"\n')
    app = await build_app(settings)
    channel = TelegramChannel(settings.telegram, app.assistant,
                              Inbox(settings.data_dir / "inbox" / "telegram.jsonl"),
                              pairing=PairingStore(settings.data_dir))
    await app.start()
    await channel.start()
    try:
        fake_telegram.push_text(MALLORY, MALLORY, "hello?", language_code="en")
        [ask] = await fake_telegram.wait_for_sent(1)
        [request] = PairingStore(settings.data_dir).load().pending
        assert ask.text == msg.text("PAIRING_ASK", "en").format(code=request.code)
        assert ask.text != msg.text("PAIRING_ASK", "es").format(code=request.code)
        assert not (settings.data_dir / "chats" / str(MALLORY) / "language").exists()
    finally:
        await channel.stop()
        await app.stop()

"""One "⏳" per waiting message, not one per restart: kill -9 `rumi run` while a message
waits behind a slow turn, again and again; the person is told it waits once."""

from __future__ import annotations

import asyncio

import pytest

from rumi import messages_es
from tests.e2e.conftest import ALICE
from tests.e2e.test_bad_updates import answers, echo_tag, run_bot, write_config
from tests.fakes.groq_server import ScriptedReply
from tests.memory.files.test_markdown_sync import eventually

pytestmark = pytest.mark.e2e

KILLS = 3


def notices(fake_telegram) -> int:  # noqa: ANN001
    return sum(t == messages_es.BUSY for t in fake_telegram.texts(ALICE))


async def crash_round(config, fake_groq, fake_telegram, *, first: bool) -> None:  # noqa: ANN001
    """Start the bot, let the second message wait (and maybe get its "⏳"), kill -9."""
    asked = len(fake_groq.requests)
    proc = await run_bot(config)
    try:
        await fake_telegram.wait_for_call("getUpdates", timeout=60)
        if first:
            fake_telegram.push_text(ALICE, ALICE, "tag-primero")
            await eventually(lambda: len(fake_groq.requests) > asked, timeout=30)
            fake_telegram.push_text(ALICE, ALICE, "tag-segundo")
            await eventually(lambda: notices(fake_telegram) == 1, timeout=30)
        else:   # both resumed: the first is with the model, the second waits again
            await eventually(lambda: len(fake_groq.requests) > asked, timeout=30)
        await asyncio.sleep(1.5)   # time for a second "⏳" to go out, if it would
    finally:
        proc.kill()
        await proc.wait()


async def test_the_waiting_notice_is_sent_once_across_crashes(
        tmp_path, fake_groq, fake_telegram):  # noqa: ANN001
    config = write_config(tmp_path, fake_groq, fake_telegram)
    slow = {"delay": 30.0}

    def respond(body):  # noqa: ANN001, ANN202
        reply = echo_tag(body)
        return ScriptedReply(reply.message, delay=slow["delay"])

    fake_groq.responder = respond
    for round_ in range(KILLS):
        await crash_round(config, fake_groq, fake_telegram, first=round_ == 0)
    slow["delay"] = 0.0
    proc = await run_bot(config)
    try:
        await eventually(lambda: answers(fake_telegram)["tag-segundo"] == 1, timeout=60)
        assert answers(fake_telegram)["tag-primero"] == 1
        assert notices(fake_telegram) == 1
    finally:
        proc.kill()
        await proc.wait()

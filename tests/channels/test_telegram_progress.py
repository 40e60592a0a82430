"""Progress on long turns in Telegram (issue 20): one status message, edited as tools run,
paced to Telegram's limits and finalised once the answer is out.

The real bot (PTB `process_update`) on the real core, against the fake Bot API and fake Groq.
"""

from __future__ import annotations

import asyncio
import logging

import pytest
from telegram import Bot, Update
from telegram.error import BadRequest

from rumi import messages as msg
from rumi.base.progress import ToolStep
from rumi.channels.formatting import markdown_to_html
from rumi.channels.telegram import TelegramChannel
from rumi.channels.telegram_progress import ChatPacer, ProgressMessage
from tests.channels.telegram_harness import (
    bot_api,
    channel_config,
    process,
    running_channel,
    update,
)
from tests.fakes.telegram_server import FakeTelegramServer

TOKEN = "778:PROGRESS-token"
NO_DRAFTS = "stream = false\n"   # the status message (private chats with drafts show steps there)


def searches(*queries: str) -> list[tuple[str, dict[str, str], None]]:
    return [("search_memory", {"query": q}, None) for q in queries]


@pytest.fixture
async def server():
    async with bot_api(TOKEN) as fake:
        yield fake


@pytest.fixture
def progress_after() -> float:
    return 0.0   # these turns take milliseconds: show their progress anyway


@pytest.fixture
async def channel(make_settings, fake_groq, server, progress_after: float):
    settings = make_settings(channel_config(TOKEN, server, fake_groq, NO_DRAFTS))
    async with running_channel(settings, with_steps=True, progress_after=progress_after) as chan:
        yield chan


def status_calls(server: FakeTelegramServer) -> list[tuple[str, str]]:
    """Every send or edit of a progress message, in order (method, text)."""
    out = []
    for method, params in server.calls:
        text = str(params.get("text", ""))
        if method in ("sendMessage", "editMessageText") and "search_memory" in text:
            out.append((method, text))
    return out


async def test_long_turn_gets_one_status_message_edited_and_finalised(
        channel: TelegramChannel, server: FakeTelegramServer, fake_groq) -> None:
    queries = [f"tema{n}" for n in range(10)]
    fake_groq.enqueue_tool_calls(searches(*queries))
    fake_groq.enqueue_text("Busqué en diez sitios y no hay nada.")
    await process(channel, update(1, 1, "busca por todas partes"))

    sends = [s for s in server.sent if s.method == "sendMessage"]
    assert [s.text for s in sends][-1] == "Busqué en diez sitios y no hay nada."
    status = [s for s in sends if "search_memory" in (s.text or "")]
    assert len(status) == 1, "one status message per turn, not one per step"
    assert sends.index(status[0]) < len(sends) - 1, "the status comes before the answer"
    assert status[0].text.startswith(msg.PROGRESS_WORKING)

    edits = [e for e in server.edits if e.message_id == status[0].message_id]
    assert edits, "the status message is edited as steps come"
    final = edits[-1].text or ""
    assert final.startswith(msg.PROGRESS_DONE.format(steps="10 pasos"))
    for query in queries:
        assert f"🔧 <code>search_memory {query}</code>" in final
    # Paced: ten steps within one model answer are shown in far fewer calls than ten.
    assert len(status_calls(server)) < 10


async def test_a_turn_without_tools_leaves_no_status_message(
        channel: TelegramChannel, server: FakeTelegramServer, fake_groq) -> None:
    fake_groq.enqueue_text("Hola, Ana.")
    await process(channel, update(1, 1, "hola"))
    assert server.texts() == ["Hola, Ana."]
    assert server.edits == [] and status_calls(server) == []


@pytest.mark.parametrize("progress_after", [600.0])
async def test_a_quick_turn_with_tools_leaves_no_status_message(
        channel: TelegramChannel, server: FakeTelegramServer, fake_groq) -> None:
    """Progress is for long turns: one that answers before `progress_after` shows none."""
    fake_groq.enqueue_tool_calls(searches("gatos", "perros"))
    fake_groq.enqueue_text("Nada.")
    await process(channel, update(1, 1, "busca"))
    assert server.texts() == ["Nada."]
    assert server.edits == [] and status_calls(server) == []


async def test_a_channel_not_given_the_apps_steps_shows_nothing(
        make_settings, fake_groq, server: FakeTelegramServer) -> None:
    settings = make_settings(channel_config(TOKEN, server, fake_groq, NO_DRAFTS))
    async with running_channel(settings, progress_after=0.0) as chan:
        fake_groq.enqueue_tool_calls(searches("gatos"))
        fake_groq.enqueue_text("Nada.")
        await process(chan, update(1, 1, "busca"))
    assert server.texts() == ["Nada."] and status_calls(server) == []


async def test_flood_control_on_an_edit_is_waited_out(
        channel: TelegramChannel, server: FakeTelegramServer, fake_groq) -> None:
    server.flood_edits(1, retry_after=1)
    fake_groq.enqueue_tool_calls(searches("uno", "dos"))
    fake_groq.enqueue_text("Hecho.")
    await process(channel, update(1, 1, "busca dos cosas"))
    assert server.texts()[-1] == "Hecho."
    edit_calls = [m for m, _ in server.calls if m == "editMessageText"]
    assert len(edit_calls) > len(server.edits) >= 1  # one refused with 429, then resent
    assert (server.edits[-1].text or "").startswith(msg.PROGRESS_DONE.format(steps="2 pasos"))


async def test_not_modified_counts_as_shown(server: FakeTelegramServer, caplog) -> None:
    """Telegram refuses an edit that changes nothing; the display must not give up on it."""
    bot = Bot(TOKEN, base_url=server.base_url)
    step = ToolStep("5", "search_memory", '{"query": "x"}')
    already = markdown_to_html(f"{msg.PROGRESS_WORKING}\n{step.line}")
    async with bot:
        sent = await bot.send_message(5, already, parse_mode="HTML")
        with pytest.raises(BadRequest, match="not modified"):
            await bot.edit_message_text(already, chat_id=5, message_id=sent.message_id,
                                        parse_mode="HTML")

        progress = ProgressMessage(bot, 5, ChatPacer(0.0), after=0.0)
        progress.message_id = sent.message_id  # as if shown before a retry
        server.calls.clear()
        with caplog.at_level(logging.WARNING, logger="rumi.channels.telegram_progress"):
            await progress.step(step)
            await server.wait_for_call("editMessageText")
            await progress.finish()
        assert [m for m, _ in server.calls].count("editMessageText") == 2  # refused, then final
        assert not any("stopped" in r.getMessage() for r in caplog.records)
        assert (server.edits[-1].text or "").startswith(msg.PROGRESS_DONE.format(steps="1 paso"))


async def test_pacer_spaces_calls_of_one_chat_but_not_of_others() -> None:
    """The pacer's schedule, read without timing: a second call for the same chat is due
    `min_interval` after the first; another chat is not held back by it."""
    pacer = ChatPacer(60.0)
    assert pacer.due(1) == 0.0
    await pacer.wait(1)
    assert pacer.due(1) > 30.0 and pacer.due(2) == 0.0
    await pacer.wait(2)   # would take a minute if chats shared one schedule
    assert pacer.due(2) > 30.0 and pacer.due(3) == 0.0
    pacer.hold(1, 120.0)
    assert pacer.due(1) > 90.0


async def test_many_steps_fold_into_one_line_and_keep_the_message_short(
        server: FakeTelegramServer) -> None:
    bot = Bot(TOKEN, base_url=server.base_url)
    async with bot:
        progress = ProgressMessage(bot, 6, ChatPacer(0.0), after=0.0)
        for n in range(40):
            await progress.step(ToolStep("6", "bash", f'{{"command": "echo {n}"}}'))
        await server.wait_for_sent(1)
        await progress.finish()
    final = server.edits[-1].text or ""
    assert final.startswith(msg.PROGRESS_DONE.format(steps="40 pasos"))
    assert msg.PROGRESS_MORE.format(steps="26 pasos") in final
    assert "<code>echo 39</code>" in final and "<code>echo 25</code>" not in final
    assert len(final.splitlines()) == 16  # header, the fold line, the last 14 steps


async def test_a_turn_stopped_with_stop_finishes_its_status_as_stopped(
        channel: TelegramChannel, server: FakeTelegramServer, fake_groq) -> None:
    """/stop cuts the turn: its status message must say it stopped, not that it is done."""
    fake_groq.enqueue_tool_calls(searches("gatos"))
    fake_groq.enqueue_text("demasiado tarde", delay=5.0)   # the turn is still thinking
    assert channel.application is not None
    bot = channel.application.bot
    await channel.application.process_update(Update.de_json(update(1, 1, "busca"), bot))
    [status] = await server.wait_for_sent(1)
    assert (status.text or "").startswith(msg.PROGRESS_WORKING)
    while len(fake_groq.requests) < 2:   # the model is answering after the tool
        await asyncio.sleep(0.02)
    await process(channel, update(1, 1, "/stop"))

    assert server.texts()[1:] == [msg.STOPPED_REPLY]   # one reply to /stop (issue 33)
    final = server.edits[-1]
    assert final.message_id == status.message_id
    assert (final.text or "").startswith(msg.PROGRESS_STOPPED.format(steps="1 paso"))
    assert "search_memory gatos" in (final.text or "")

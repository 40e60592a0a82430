"""One turn's draft (`DraftAnswer`) with the real PTB Bot against the fake Bot API; the pace,
refresh and limits are injected, never waited for by luck."""

from __future__ import annotations

import asyncio
import itertools

import pytest
from telegram import Bot

from rumi.base.answer_text import AnswerText
from rumi.base.progress import ToolStep
from rumi.base.replies import Reply
from rumi.channels.telegram_draft import DraftAnswer
from tests.channels.telegram_harness import bot_api

TOKEN = "777:DRAFT-token"
CHAT = 5


@pytest.fixture
async def server():
    async with bot_api(TOKEN) as fake:
        yield fake


async def until(condition, timeout: float = 5.0) -> None:
    async def wait() -> None:
        while not condition():
            await asyncio.sleep(0.01)
    await asyncio.wait_for(wait(), timeout)


async def test_an_unchanged_draft_is_refreshed_before_it_expires(server) -> None:
    async with Bot(TOKEN, base_url=server.base_url) as bot:
        draft = DraftAnswer(bot, CHAT, itertools.count(1), interval=0.0, refresh=0.1)
        await draft.text(AnswerText(str(CHAT), "Pensando en ello", restart=True))
        await until(lambda: len(server.drafts.history) >= 3)
        await draft.finish()
    assert {d.text for d in server.drafts.history} == {"Pensando en ello"}
    assert {d.draft_id for d in server.drafts.history} == {1}


async def test_updates_are_paced_and_show_the_latest_text(server) -> None:
    async with Bot(TOKEN, base_url=server.base_url) as bot:
        draft = DraftAnswer(bot, CHAT, itertools.count(1), interval=60, refresh=600)
        await draft.text(AnswerText(str(CHAT), "uno", restart=True))
        await until(lambda: len(server.drafts.history) == 1)   # the first goes at once
        for word in [" dos", " tres", " cuatro"]:
            await draft.text(AnswerText(str(CHAT), word))
        await asyncio.sleep(0.3)
        assert len(server.drafts.history) == 1   # the next one waits for its minute
        await asyncio.wait_for(draft.finish(), 5)   # a real message follows: no more waiting
    assert [d.text for d in server.drafts.history] == ["uno"]


async def test_steps_show_under_the_text_and_a_restart_replaces_both(server) -> None:
    async with Bot(TOKEN, base_url=server.base_url) as bot:
        draft = DraftAnswer(bot, CHAT, itertools.count(1), interval=0.0, refresh=60)
        await draft.text(AnswerText(str(CHAT), "Miro.", restart=True))
        await until(lambda: len(server.drafts.history) == 1)
        await draft.step(ToolStep(str(CHAT), "bash", '{"command": "ls"}'))
        await until(lambda: len(server.drafts.history) == 2)
        await draft.text(AnswerText(str(CHAT), "Hay dos ficheros.", restart=True))
        await until(lambda: len(server.drafts.history) == 3)
        await draft.finish()
    assert [d.text for d in server.drafts.history] == ["Miro.", "Miro.\n\n🔧 ls",
                                                      "Hay dos ficheros."]


async def test_past_the_limit_the_first_part_is_sent_and_not_again(server) -> None:
    first = "Primer párrafo. " * 200   # 3,200 characters
    second = "Segundo párrafo. " * 100
    async with Bot(TOKEN, base_url=server.base_url) as bot:
        draft = DraftAnswer(bot, CHAT, itertools.count(7), interval=0.0, refresh=60)
        await draft.text(AnswerText(str(CHAT), first.strip() + "\n\n", restart=True))
        await draft.text(AnswerText(str(CHAT), second.strip()))
        await until(lambda: len(server.sent) == 1 and server.drafts.history
                    and server.drafts.history[-1].draft_id == 8)
        await draft.finish()
        rest = draft.rest(Reply(first.strip() + "\n\n" + second.strip(), item_id=3))
    assert server.texts(CHAT) == [first.strip()]
    assert rest.text == second.strip() and rest.item_id == 3
    assert server.drafts.history[-1].text == second.strip()
    assert draft.sent_ids == [server.sent[0].message_id]


async def test_a_part_is_journaled_before_it_goes_out_and_its_id_after(server) -> None:
    """The order a crash relies on: the journal hears the part while Telegram has none of
    it, then the id Telegram returned."""
    first = "Primer párrafo. " * 200
    second = "Segundo párrafo. " * 100
    events: list[tuple[str, object, int]] = []

    async def journal(part: str):  # noqa: ANN202
        events.append(("intent", part, len(server.sent)))

        async def sent(piece: int, sent_id: int) -> None:
            events.append(("sent", sent_id, len(server.sent)))
        return sent

    async with Bot(TOKEN, base_url=server.base_url) as bot:
        draft = DraftAnswer(bot, CHAT, itertools.count(1), interval=0.0, refresh=60,
                            journal=journal)
        await draft.text(AnswerText(str(CHAT), first.strip() + "\n\n", restart=True))
        await draft.text(AnswerText(str(CHAT), second.strip()))
        await until(lambda: len(server.sent) == 1)
        await draft.finish()
    assert events == [("intent", first.strip(), 0), ("sent", server.sent[0].message_id, 1)]


async def test_a_group_chat_refuses_drafts_and_the_draft_gives_up_quietly(server) -> None:
    async with Bot(TOKEN, base_url=server.base_url) as bot:
        draft = DraftAnswer(bot, -100, itertools.count(1), interval=0.0, refresh=60)
        await draft.text(AnswerText("-100", "hola", restart=True))
        await until(lambda: any(m == "sendMessageDraft" for m, _ in server.calls))
        await draft.finish()
    assert server.drafts.history == []
    assert draft.rest(Reply("hola")).text == "hola"

"""The Telegram channel's use of the inbox journal: messages marked done once answered,
notices (the "⏳") sent once per message, redactions honoured, and after a restart the
messages never answered are answered (if recent) or the person is asked to repeat them."""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

from telegram import Message, Update

from rumi import messages as msg
from rumi.base.replies import Reply
from rumi.channels.inbox import Inbox, Pending
from rumi.channels.telegram_send import report_failure, send
from rumi.config import TelegramSettings
from rumi.core.assistant import Assistant

log = logging.getLogger("rumi.channels.telegram")   # the channel's log lines keep their name


class TelegramJournal:
    def __init__(self, inbox: Inbox | None, assistant: Assistant,
                 settings: TelegramSettings) -> None:
        self.inbox = inbox   # journal of received messages (at-least-once answering)
        self.assistant = assistant
        self.settings = settings

    async def settled(self, message: Message) -> None:
        """The message needs nothing more (answered, refused, ignored): journal it done."""
        if self.inbox is None:
            return
        try:
            await self.inbox.done(message.chat_id, message.message_id)
        except OSError:
            log.exception("could not mark message %s as answered", message.message_id)

    async def first_notice(self, message: Message, note: str) -> bool:
        """A notice (the "⏳") goes out once per waiting message, not once per restart."""
        if self.inbox is None:
            return True
        if self.inbox.noted(message.chat_id, message.message_id, note):
            return False
        try:
            await self.inbox.note(message.chat_id, message.message_id, note)
        except OSError:
            log.exception("could not journal a notice about message %s", message.message_id)
        return True

    async def erased(self, chat_id: str) -> None:
        """A redaction in `chat_id`: its answered messages' text leaves the inbox journal."""
        assert self.inbox is not None
        if chat_id.lstrip("-").isdigit():
            await self.inbox.compact_after(int(chat_id))

    async def resume(self, unanswered: list[Pending], bot: Any,
                     process: Callable[[Update], Awaitable[None]]) -> None:
        """Messages received before a crash but never answered: answered now if recent, else
        the person is asked whether to repeat (the reply may no longer fit the moment)."""
        for pending in unanswered:
            try:
                await self._resume_one(pending, bot, process)
            except Exception:   # never again at every start: told once, journaled answered
                await report_failure(bot, pending.chat_id, "resume")
                if self.inbox is not None:
                    with contextlib.suppress(OSError):
                        await self.inbox.done(pending.chat_id, pending.message_id)

    async def _resume_one(self, pending: Pending, bot: Any,
                          process: Callable[[Update], Awaitable[None]]) -> None:
        update = Update.de_json(pending.update, bot)
        if update is None or update.message is None:
            return
        if time.time() - pending.received_at <= self.settings.redeliver_max_age_minutes * 60:
            log.info("answering message %s of chat %s received before a restart",
                     pending.message_id, pending.chat_id)
            await process(update)
            return
        text = update.message.text or update.message.caption or "…"
        with msg.use_language(self.assistant.chat_language(str(pending.chat_id))):
            question = msg.INTERRUPTED_REPLY.format(text=_clip(text, 80))
        await send(bot, pending.chat_id, Reply(question, markdown=False))
        await self.settled(update.message)


def _clip(text: str, width: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"

"""The Telegram channel's use of the inbox journal: messages marked done once answered,
answers journaled as they go out (text first, then each piece's message id), notices (the
"⏳") sent once per message, redactions honoured, and after a restart an answer begun is
finished with the same text, while messages never answered are answered (if recent) or the
person is asked to repeat them."""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

from telegram import Message, Update

from rumi import messages as msg
from rumi.base.replies import Reply
from rumi.channels.inbox import Inbox, Pending, PendingReply
from rumi.channels.telegram_send import Sent, report_failure, send
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

    async def sending(self, message: Message, reply: Reply, quote: int | None
                      ) -> Sent | None:
        """Journal the answer to `message` before it is sent; returns what records each
        piece's message id as Telegram returns it (None: nothing is journaled — no inbox, or
        an answer with a document, which is made again rather than kept on disk)."""
        if self.inbox is None or reply.document is not None:
            return None
        chat_id, message_id = message.chat_id, message.message_id
        record = {"text": reply.text, "markdown": reply.markdown, "reply_to": quote,
                  "buttons": reply.buttons}
        try:
            parts = await self.inbox.sending(chat_id, message_id, record)
        except OSError:
            log.exception("could not journal the answer to message %s", message_id)
            return None
        return self._recorder(chat_id, message_id, parts)

    async def sending_part(self, message: Message, part: str) -> Sent | None:
        """Journal a part of a streamed answer before the draft sends it as a real message
        (the same order as `sending`: a crash after it finds the part, sent or not)."""
        if self.inbox is None:
            return None
        try:
            piece = await self.inbox.sending_piece(message.chat_id, message.message_id, part)
        except OSError:
            log.exception("could not journal a part of the answer to message %s",
                          message.message_id)
            return None
        return self._recorder(message.chat_id, message.message_id, piece) if piece >= 0 else None

    def _recorder(self, chat_id: int, message_id: int, offset: int = 0) -> Sent:
        """Journals each piece's id; `offset`: the pieces that came before (streamed parts)."""
        async def sent(piece: int, sent_id: int) -> None:
            assert self.inbox is not None
            try:
                await self.inbox.delivered(chat_id, message_id, offset + piece, sent_id)
            except OSError:
                log.exception("could not journal a sent piece of the answer to message %s",
                              message_id)

        return sent

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
        if pending.reply is not None:
            await self._finish_answer(pending, pending.reply, bot)
            await self.settled(update.message)
            return
        if time.time() - pending.received_at <= self.settings.redeliver_max_age_minutes * 60:
            log.info("answering message %s of chat %s received before a restart",
                     pending.message_id, pending.chat_id)
            await process(update)
            return
        await self._ask_again(pending, bot)
        await self.settled(update.message)

    async def _finish_answer(self, pending: Pending, reply: PendingReply, bot: Any) -> None:
        """The answer was being sent at the crash: what has no message id yet goes out now,
        the very text the first pieces had (no new turn, no tool run again)."""
        log.info("finishing the answer to message %s of chat %s begun before a restart "
                 "(%d pieces already sent)", pending.message_id, pending.chat_id,
                 len(reply.sent_ids))
        chat_id, message_id = pending.chat_id, pending.message_id
        for n in range(len(reply.sent_ids), len(reply.parts)):   # streamed, unconfirmed
            await send(bot, chat_id, Reply(reply.parts[n]),
                       on_sent=self._recorder(chat_id, message_id, n))
        if reply.text is None:   # cut while the model still wrote: its rest is unknown
            await self._ask_again(pending, bot)
            return
        await send(bot, chat_id,
                   Reply(reply.text, markdown=reply.markdown, buttons=reply.buttons),
                   reply_to=reply.reply_to,
                   skip=max(0, len(reply.sent_ids) - len(reply.parts)),
                   on_sent=self._recorder(chat_id, message_id, len(reply.parts)))

    async def _ask_again(self, pending: Pending, bot: Any) -> None:
        """The person is asked whether to repeat the message (its answer may be cut)."""
        update = Update.de_json(pending.update, bot)
        message = update.message if update is not None else None
        text = (message.text or message.caption or "…") if message is not None else "…"
        with msg.use_language(self.assistant.chat_language(str(pending.chat_id))):
            question = msg.INTERRUPTED_REPLY.format(text=_clip(text, 80))
        await send(bot, pending.chat_id, Reply(question, markdown=False))


def _clip(text: str, width: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"

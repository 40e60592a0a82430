"""Telegram channel: python-telegram-bot long polling, translating updates to `Assistant`.

Thin by design: this module is the PTB lifecycle and the path of one update to the core and
back; its siblings hold who is answered (`telegram_access`), what a message asks for
(`telegram_turns`), sending (`telegram_send`), the inbox journal and the resume after a
restart (`telegram_journal`) and tool-step progress (`telegram_progress`). Everything else is
the core's. Each update is handled in a task the channel owns (so a busy chat can still get
its "⏳" and the update loop never blocks); on shutdown every such task is cancelled and
awaited.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from telegram import BotCommand, Message, Update, User
from telegram.constants import ChatMemberStatus, ChatType
from telegram.error import TelegramError
from telegram.ext import (
    Application,
    CallbackQueryHandler,
    ContextTypes,
    MessageHandler,
    TypeHandler,
    filters,
)

from rumi import messages as msg
from rumi.base.answer_text import AnswerStream
from rumi.base.chats import Speaker
from rumi.base.progress import ToolSteps
from rumi.base.replies import Reply
from rumi.channels.disk_room import DiskRoom
from rumi.channels.inbox import Inbox
from rumi.channels.pairing import PairingStore
from rumi.channels.telegram_access import TelegramAccess, addressed
from rumi.channels.telegram_draft import STOPPED_GENERATION, DraftAnswer, LiveDrafts
from rumi.channels.telegram_journal import TelegramJournal
from rumi.channels.telegram_progress import SHOW_AFTER, ChatPacer, ProgressMessage
from rumi.channels.telegram_send import Sent, keep_typing, report_failure
from rumi.channels.telegram_send import send as send_reply
from rumi.channels.telegram_turns import Turn, message_turn
from rumi.channels.unparsed import UpdatesRequest
from rumi.channels.update_queue import JournaledQueue
from rumi.config import TelegramSettings
from rumi.core.assistant import Assistant

log = logging.getLogger(__name__)

STOP_GRACE_SECONDS = 0.5  # a turn under way at a stop may finish and be marked done; one
# still waiting for the model is cut and stays in the inbox journal, answered after restart
DELIVERY_GRACE_SECONDS = 0.5  # an answer being sent when the turn is cut may still go out


class TelegramChannel:
    def __init__(self, settings: TelegramSettings, assistant: Assistant,
                 inbox: Inbox | None = None, pairing: PairingStore | None = None, *,
                 steps: ToolSteps | None = None, pacer: ChatPacer | None = None,
                 progress_after: float = SHOW_AFTER,
                 answer_text: AnswerStream | None = None,
                 stop_grace: float = STOP_GRACE_SECONDS) -> None:
        self.settings = settings
        self.stop_grace = stop_grace   # config: telegram.stop_grace_seconds
        self.assistant = assistant
        self.inbox = inbox   # journal of received messages (at-least-once answering)
        self.pairing = pairing   # strangers get a code `rumi pairing approve` accepts
        self.access = TelegramAccess(settings.allowed_users, pairing, assistant)
        self.journal = TelegramJournal(inbox, assistant, settings)
        if inbox is not None:
            assistant.add_erase_listener(self.journal.erased)
        self.steps = steps or ToolSteps()   # tool steps of running turns → status messages
        self.pacer = pacer or ChatPacer()
        self.progress_after = progress_after
        self.answer_text = answer_text or AnswerStream()   # answers growing in drafts
        self.drafts = LiveDrafts()   # the drafts of turns under way
        self.application: Application[Any, Any, Any, Any, Any, Any] | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._deliveries: set[asyncio.Task[list[int]]] = set()
        # a full disk: messages wait for room (told once each), then are answered
        self.room = DiskRoom(inbox.path.parent) if inbox is not None else None
        self._told_full: set[tuple[int, int]] = set()

    # -- lifecycle ---------------------------------------------------------------------------

    def build(self) -> Application[Any, Any, Any, Any, Any, Any]:
        """Create the PTB application (no network yet); tests may `process_update` on it."""
        builder = (
            Application.builder()
            .token(self.settings.token)
            .base_url(self.settings.base_url)
            .base_file_url(self.settings.base_file_url)
            .get_updates_request(UpdatesRequest(connection_pool_size=1))
        )
        if self.inbox is not None:
            builder = builder.update_queue(JournaledQueue(self.inbox, self.room,
                                                          self._disk_full_notice))
        application = builder.build()
        application.add_handler(MessageHandler(filters.UpdateType.MESSAGE, self.on_message))
        application.add_handler(CallbackQueryHandler(self.on_button))
        application.add_handler(TypeHandler(Update, self.on_stopped_generation))
        application.add_error_handler(self.on_error)
        self.application = application
        return application

    async def start(self) -> None:
        """Connect (getMe), publish the command menu, start long polling."""
        application = self.application or self.build()
        unanswered = await self.inbox.load() if self.inbox is not None else []
        await application.initialize()
        await self._publish_commands()
        assert application.updater is not None
        await application.updater.start_polling(
            timeout=int(self.settings.poll_timeout),
            allowed_updates=[Update.MESSAGE, Update.CALLBACK_QUERY, STOPPED_GENERATION],
            drop_pending_updates=False,
        )
        await application.start()
        self.assistant.set_outbox(self.tell)
        self.assistant.set_admin_check(self.is_admin)
        await self.assistant.deliver_queued()
        await self.journal.resume(unanswered, application.bot, application.process_update)
        if not self.access.allowed and self.pairing is None:
            log.warning("telegram.allowed_users is empty: the bot will refuse everyone")
        elif not self.access.allowed:
            log.warning("telegram.allowed_users is empty: people who write get a code to "
                        "approve with `rumi pairing approve CODE`")
        log.info("telegram bot @%s polling", application.bot.username)

    async def stop(self) -> None:
        application = self.application
        if application is None:
            return
        self.assistant.set_outbox(None)
        self.assistant.set_admin_check(None)
        if application.updater is not None and application.updater.running:
            await application.updater.stop()
        await self.drain(grace=self.stop_grace)
        if application.running:
            await application.stop()
        await application.shutdown()
        self.application = None

    async def drain(self, grace: float = 0.0) -> None:
        """Let the turns under way finish for up to `grace` seconds, then cancel and await
        what is left. A cut turn's message stays in the inbox journal and is answered after
        the restart; an answer already being sent gets `DELIVERY_GRACE_SECONDS` to go out
        and be journaled, so no message is answered twice."""
        tasks = list(self._tasks)
        if tasks and grace > 0:
            await asyncio.wait(tasks, timeout=grace)
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
        if self._deliveries:   # answers already going out: sent and journaled, or left whole
            await asyncio.wait(list(self._deliveries), timeout=DELIVERY_GRACE_SECONDS)

    async def _publish_commands(self) -> None:
        """The menu in the default language; with "auto" also one per language Rumi speaks,
        which Telegram shows to people whose app uses that language."""
        assert self.application is not None
        languages = self.assistant.languages
        menus: list[tuple[str, str | None]] = [(languages.default, None)]
        if languages.fixed is None:
            menus += [(code, code) for code in msg.SUPPORTED_LANGUAGES]
        for code, scope in menus:
            with msg.use_language(code):
                commands = [BotCommand(name, description[:256])
                            for name, description in self.assistant.command_menu()]
            try:
                await self.application.bot.set_my_commands(commands, language_code=scope)
            except TelegramError as exc:
                log.warning("could not publish the command menu: %s", exc)

    # -- updates -----------------------------------------------------------------------------

    async def on_message(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        """Filter and hand the message to a task. A message that cannot be handled gets one
        friendly line and is journaled answered, so it never comes back after a restart."""
        message = update.message
        if message is None:
            return
        try:
            await self._accept(update, message, context)
        except Exception:
            await report_failure(context.bot, message.chat_id, "update")
            await self.journal.settled(message)

    async def _accept(self, update: Update, message: Message,
                      context: ContextTypes.DEFAULT_TYPE) -> None:
        user = update.effective_user
        if user is None or user.is_bot:
            await self.journal.settled(message)
            return
        text = message.text or message.caption or ""
        if message.chat.type != ChatType.PRIVATE:
            for_us, text = addressed(message, text, context.bot)
            if not for_us:
                await self.journal.settled(message)
                return
        if not await self.access.is_allowed(user.id):
            await self.access.refuse(message, user)
            await self.journal.settled(message)
            return
        task = asyncio.create_task(self._process(message, user, text),
                                   name=f"rumi-telegram-{message.chat_id}-{message.message_id}")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def on_button(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        """An inline button was pressed: it stands for a command the person could type.

        The query is answered at once (Telegram shows a spinner until then) and the keyboard
        is removed so the same choice cannot be sent twice; the command then runs like a
        typed message from that person, with the same access control. Only command texts
        (`/…`) are accepted: callback data comes from the client and is not trusted.
        """
        query, user = update.callback_query, update.effective_user
        if query is None or user is None or user.is_bot:
            return
        with contextlib.suppress(TelegramError):
            await query.answer()
        message = query.message
        data = (query.data or "").strip()
        if not isinstance(message, Message) or not data.startswith("/") or len(data.encode()) > 64:
            return
        if not await self.access.is_allowed(user.id):
            await self.access.refuse(message, user)
            return
        with contextlib.suppress(TelegramError):
            await query.edit_message_reply_markup(reply_markup=None)
        task = asyncio.create_task(self._process_button(message, user, data),
                                   name=f"rumi-telegram-{message.chat_id}-button")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _process(self, message: Message, user: User, text: str) -> None:
        if self.room is not None and not await self.room.has_room():
            await self._tell_full(message, user)   # before the turn: never half saved
            await self.room.wait()
        while await self._answer(message, user, "message", lambda: message_turn(message, text),
                                 answered=lambda: self.journal.settled(message)):
            assert self.room is not None
            await self.room.wait()   # the disk was full: still journaled, answered once room
        self._told_full.discard((message.chat_id, message.message_id))
        await self.journal.settled(message)   # not reached when cancelled: answered after a restart

    async def _disk_full_notice(self, update: Update) -> None:
        """A message arrived while not even its journal line fits: tell its sender (if
        answered at all), in their language, that it waits for room."""
        message, user = update.message, update.effective_user
        if message is None or user is None or user.is_bot:
            return
        try:
            if await self.access.is_allowed(user.id):
                await self._tell_full(message, user)
        except Exception:
            log.exception("could not tell chat %s that the disk is full", message.chat_id)

    async def _tell_full(self, message: Message, user: User) -> None:
        """Once per message: the server's disk is full, it will be answered once there is
        room (in the person's language)."""
        key = (message.chat_id, message.message_id)
        if key in self._told_full:
            return
        self._told_full.add(key)
        try:
            language = await self.assistant.language_for(str(message.chat_id),
                                                         user.language_code)
            with msg.use_language(language):
                text = msg.DISK_FULL
            await message.get_bot().send_message(message.chat_id, text)
        except Exception:
            log.exception("could not tell chat %s that the disk is full", message.chat_id)

    async def _process_button(self, message: Message, user: User, command: str) -> None:
        """`message` is Rumi's own message that carried the keyboard, not the person's: it is
        neither quoted nor passed as the person's message id."""
        async def turn() -> Turn:
            return Turn(command)

        await self._answer(message, user, "button", turn)

    async def _answer(self, message: Message, user: User, what: str,
                      prepare: Callable[[], Awaitable[Turn | None]],
                      answered: Callable[[], Awaitable[None]] | None = None) -> bool:
        """Answer one turn in `message`'s chat, however it arrived (typed or a button).

        One path so every answer gets the same treatment: "typing…" while the core works,
        the reply linked for `/pin`, and a short line instead of a traceback on failure.
        True when the disk was full: the person was told (once) and the message is to be
        answered again once there is room.
        """
        chat_id = message.chat_id
        bot = message.get_bot()
        msg.set_language(await self.assistant.language_for(str(chat_id), user.language_code))
        typing = asyncio.create_task(keep_typing(bot, chat_id))
        progress: ProgressMessage | None = None
        draft: DraftAnswer | None = None
        try:
            turn = await prepare()
            if turn is None:
                return False
            if self.settings.stream and message.chat.type == ChatType.PRIVATE:
                draft = self._draft(bot, message, user.id, journaled=answered is not None)
            else:
                progress = ProgressMessage(bot, chat_id, self.pacer, reply_to=turn.quote,
                                           after=self.progress_after)
                self.steps.watch(progress.step)   # this task runs one turn: steps go there
            reply = await self._ask_core(message, user, turn)
            typing.cancel()
            earlier: list[int] = []
            if draft is not None:
                await draft.finish()
                reply, earlier = draft.rest(reply), draft.sent_ids
            if reply.disk_full and self.room is not None and what == "message":
                if progress is not None:
                    await progress.finish(stopped=True)
                key = (chat_id, message.message_id)
                if key not in self._told_full:
                    self._told_full.add(key)
                    await self.send(bot, chat_id, reply, reply_to=turn.quote)
                return True
            sent = earlier + await self._deliver(bot, message, reply, turn.quote, answered)
            if progress is not None:
                await progress.finish(stopped=reply.is_error or reply.stopped)
            await self._link_sent(chat_id, reply, sent)
        except asyncio.CancelledError:
            raise
        except Exception:
            if progress is not None:
                with contextlib.suppress(Exception):
                    await progress.finish(stopped=True)
            await report_failure(bot, chat_id, what)
        finally:
            if draft is not None:
                self.drafts.forget(draft)
                with contextlib.suppress(Exception):
                    await draft.finish()
            typing.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await typing
        return False

    def _draft(self, bot: Any, message: Message, user_id: int, *, journaled: bool
               ) -> DraftAnswer:
        """This task's turn writes its answer into a draft (private chats): its text and
        tool steps go there. A person's message (`journaled`) has each part the draft sends
        journaled first, as its answer is."""

        async def journal(part: str) -> Sent | None:
            return await self.journal.sending_part(message, part)

        draft = self.drafts.start(bot, message.chat_id, user_id,
                                  journal=journal if journaled else None)
        self.answer_text.watch(draft.text)
        self.steps.watch(draft.step)
        return draft

    async def on_stopped_generation(self, update: Update,
                                    context: ContextTypes.DEFAULT_TYPE) -> None:
        """The person pressed a draft's stop button (Bot API 10.3): the same as `/stop`."""
        found = self.drafts.stopped(update.api_kwargs.get(STOPPED_GENERATION))
        if found is not None:   # else not a draft of a turn under way (answered, not ours)
            chat_id, user_id = found
            log.info("chat %s: the person stopped the answer from the draft", chat_id)
            await self.assistant.handle(str(chat_id), user_id, "/stop")

    async def _ask_core(self, message: Message, user: User, turn: Turn) -> Reply:
        """The core's answer to `turn`: a voice note, a photo or document, or text."""
        chat_id, bot, language = message.chat_id, message.get_bot(), user.language_code

        async def notify(note: str) -> None:
            if await self.journal.first_notice(message, note):
                await self.send(bot, chat_id, Reply(note, markdown=False))

        speaker = (None if message.chat.type == ChatType.PRIVATE
                   else Speaker(str(user.id), user.full_name))
        if turn.voice is not None:
            return await self.assistant.handle_voice(
                str(chat_id), user.id, turn.voice, duration=turn.duration,
                channel_message_id=turn.channel_message_id, notify=notify, speaker=speaker,
                language=language)
        if turn.media is not None:
            return await self.assistant.handle_media(
                str(chat_id), user.id, turn.media_kind, turn.media, caption=turn.text,
                channel_message_id=turn.channel_message_id, notify=notify, speaker=speaker,
                language=language)
        return await self.assistant.handle(
            str(chat_id), user.id, turn.text,
            channel_message_id=turn.channel_message_id,
            reply_to_message_id=turn.reply_to_message_id,
            attachment=turn.attachment, notify=notify, speaker=speaker,
            language=language,
        )

    async def _deliver(self, bot: Any, message: Message, reply: Reply, quote: int | None,
                       answered: Callable[[], Awaitable[None]] | None) -> list[int]:
        """Send the answer and journal it as one step a stop does not split (shielded; `drain`
        gives it a moment). A person's message has its answer journaled before it goes out
        and each piece's message id after, so a crash in between never makes a new answer:
        the restarted bot sends the pieces Telegram had not confirmed (`TelegramJournal`)."""

        async def send_and_journal() -> list[int]:
            on_sent = (await self.journal.sending(message, reply, quote)
                       if answered is not None else None)
            sent = await self.send(bot, message.chat_id, reply, reply_to=quote,
                                   on_sent=on_sent)
            if answered is not None:
                await answered()   # journaled at once: a stop from here on never repeats it
            return sent

        task = asyncio.create_task(send_and_journal())
        self._deliveries.add(task)
        task.add_done_callback(_forget_delivery(self._deliveries))
        return await asyncio.shield(task)

    async def _link_sent(self, chat_id: int, reply: Reply, sent: list[int]) -> None:
        """So `/pin` as a reply to the answer finds its item (the first chunk shows it).

        The answer is already out: a failure here must not add an "internal error"."""
        if reply.item_id is None or not sent:
            return
        try:
            await self.assistant.link_sent(str(chat_id), reply.item_id, sent[0])
        except Exception:
            log.exception("linking the sent reply in chat %s failed", chat_id)

    async def is_admin(self, chat_id: str, user_id: int | str) -> bool:
        """Telegram's word on whether `user_id` administers the group (creator or admin);
        asked each time, so a demoted admin loses the right at once."""
        if self.application is None:
            return False
        try:
            member = await self.application.bot.get_chat_member(int(chat_id), int(user_id))
        except TelegramError as exc:
            log.warning("getChatMember for user %s in chat %s failed: %s", user_id, chat_id, exc)
            return False
        return member.status in (ChatMemberStatus.OWNER, ChatMemberStatus.ADMINISTRATOR)

    async def tell(self, chat_id: str, text: str,
                   buttons: list[list[tuple[str, str]]] | None = None) -> None:
        """Outbox for unprompted notices from the core (e.g. memory sync conflicts)."""
        if self.application is None:
            return
        await self.send(self.application.bot, int(chat_id),
                        Reply(text, markdown=False, buttons=buttons))

    async def send(self, bot: Any, chat_id: int, reply: Reply, *,
                   reply_to: int | None = None, on_sent: Sent | None = None) -> list[int]:
        """Send a `Reply` (`telegram_send.send`: split ≤ 4096, HTML with a plain-text
        fallback, buttons on the last chunk, then any document)."""
        return await send_reply(bot, chat_id, reply, reply_to=reply_to, on_sent=on_sent)

    async def on_error(self, update: object, context: ContextTypes.DEFAULT_TYPE) -> None:
        """Log errors from PTB itself (network hiccups while polling, handler bugs)."""
        log.error("telegram error: %s", context.error, exc_info=context.error)


def _forget_delivery(deliveries: set[asyncio.Task[list[int]]]
                     ) -> Callable[[asyncio.Task[list[int]]], None]:
    """Done callback: drop the delivery and retrieve its outcome (a failure was reported to
    the turn that awaited it, or the turn was gone: then only logged)."""

    def done(task: asyncio.Task[list[int]]) -> None:
        deliveries.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.debug("delivery failed", exc_info=task.exception())

    return done

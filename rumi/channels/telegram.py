"""Telegram channel: python-telegram-bot long polling, translating updates to `Assistant`.

Thin by design: access control, group addressing, typing indicator, splitting/formatting and
file plumbing live here; everything else is the core's. Each update is handled in a task the
channel owns (so a busy chat can still get its "⏳" and the update loop never blocks); on
shutdown every such task is cancelled and awaited.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import warnings
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from telegram import BotCommand, InlineKeyboardButton, InlineKeyboardMarkup, Message, Update, User
from telegram.constants import ChatAction, ChatMemberStatus, ChatType, ParseMode
from telegram.error import BadRequest, RetryAfter, TelegramError
from telegram.ext import Application, CallbackQueryHandler, ContextTypes, MessageHandler, filters

from rumi import messages as msg
from rumi.base.chats import Speaker
from rumi.base.progress import ToolSteps
from rumi.base.replies import Attachment, Reply
from rumi.channels.formatting import markdown_to_html, split_message
from rumi.channels.inbox import Inbox, Pending
from rumi.channels.pairing import PairingError, PairingStore
from rumi.channels.telegram_progress import SHOW_AFTER, ChatPacer, ProgressMessage
from rumi.channels.update_queue import JournaledQueue
from rumi.config import TelegramSettings
from rumi.core.assistant import Assistant

log = logging.getLogger(__name__)

TYPING_EVERY = 4.5
MAX_IMPORT_BYTES = 10 * 1024 * 1024
MAX_AUDIO_DOWNLOAD_BYTES = 20 * 1024 * 1024  # the Bot API's getFile limit (any file)
MAX_FLOOD_WAIT = 30.0
STOP_GRACE_SECONDS = 1.0  # a turn under way at a stop may finish and be marked done; one
# still waiting for the model is cut and stays in the inbox journal, answered after restart
DELIVERY_GRACE_SECONDS = 0.5  # an answer being sent when the turn is cut may still go out


@dataclass(frozen=True)
class _Turn:
    """One thing for the core to answer and where its answer goes in the chat."""

    text: str
    channel_message_id: int | None = None     # the person's own message, if they typed it
    reply_to_message_id: int | None = None    # the message they replied to (for `/pin`)
    attachment: Attachment | None = None
    quote: int | None = None                  # the message our answer replies to (groups)
    voice: Attachment | None = None           # a voice note or audio file, to transcribe
    duration: float | None = None             # its length as Telegram reports it
    media: Attachment | None = None           # a photo or document for the core to read
    media_kind: str = ""                      # "photo" or "document"


class TelegramChannel:
    def __init__(self, settings: TelegramSettings, assistant: Assistant,
                 inbox: Inbox | None = None, pairing: PairingStore | None = None, *,
                 steps: ToolSteps | None = None, pacer: ChatPacer | None = None,
                 progress_after: float = SHOW_AFTER) -> None:
        self.settings = settings
        self.assistant = assistant
        self.inbox = inbox   # journal of received messages (at-least-once answering)
        self.pairing = pairing   # strangers get a code `rumi pairing approve` accepts
        if inbox is not None:
            assistant.add_erase_listener(self._erased)
        self.steps = steps or ToolSteps()   # tool steps of running turns → status messages
        self.pacer = pacer or ChatPacer()
        self.progress_after = progress_after
        self.allowed = set(settings.allowed_users)
        self.application: Application[Any, Any, Any, Any, Any, Any] | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._deliveries: set[asyncio.Task[list[int]]] = set()
        self._refused: set[int] = set()

    # -- lifecycle ---------------------------------------------------------------------------

    def build(self) -> Application[Any, Any, Any, Any, Any, Any]:
        """Create the PTB application (no network yet); tests may `process_update` on it."""
        builder = (
            Application.builder()
            .token(self.settings.token)
            .base_url(self.settings.base_url)
            .base_file_url(self.settings.base_file_url)
        )
        if self.inbox is not None:
            builder = builder.update_queue(JournaledQueue(self.inbox))
        application = builder.build()
        application.add_handler(MessageHandler(filters.UpdateType.MESSAGE, self.on_message))
        application.add_handler(CallbackQueryHandler(self.on_button))
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
            allowed_updates=[Update.MESSAGE, Update.CALLBACK_QUERY],
            drop_pending_updates=False,
        )
        await application.start()
        self.assistant.set_outbox(self.tell)
        self.assistant.set_admin_check(self.is_admin)
        await self.assistant.deliver_queued()
        await self._resume(unanswered)
        if not self.allowed and self.pairing is None:
            log.warning("telegram.allowed_users is empty: the bot will refuse everyone")
        elif not self.allowed:
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
        await self.drain(grace=STOP_GRACE_SECONDS)
        if application.running:
            await application.stop()
        await application.shutdown()
        self.application = None

    async def _resume(self, unanswered: list[Pending]) -> None:
        """Messages received before a crash but never answered: answered now if recent, else
        the person is asked whether to repeat (the reply may no longer fit the moment)."""
        assert self.application is not None
        max_age = self.settings.redeliver_max_age_minutes * 60
        for pending in unanswered:
            try:
                update = Update.de_json(pending.update, self.application.bot)
                if update is None or update.message is None:
                    continue
                if time.time() - pending.received_at <= max_age:
                    log.info("answering message %s of chat %s received before a restart",
                             pending.message_id, pending.chat_id)
                    await self.application.process_update(update)
                    continue
                text = update.message.text or update.message.caption or "…"
                with msg.use_language(self.assistant.chat_language(str(pending.chat_id))):
                    question = msg.INTERRUPTED_REPLY.format(text=_clip(text, 80))
                await self.send(self.application.bot, pending.chat_id,
                                Reply(question, markdown=False))
                await self._settled(update.message)
            except Exception:   # never again at every start: told once, journaled answered
                await self._report_failure(self.application.bot, pending.chat_id, "resume")
                if self.inbox is not None:
                    with contextlib.suppress(OSError):
                        await self.inbox.done(pending.chat_id, pending.message_id)

    async def _erased(self, chat_id: str) -> None:
        """A redaction in `chat_id`: its answered messages' text leaves the inbox journal."""
        assert self.inbox is not None
        if chat_id.lstrip("-").isdigit():
            await self.inbox.compact_after(int(chat_id))

    async def _settled(self, message: Message) -> None:
        """The message needs nothing more (answered, refused, ignored): journal it done."""
        if self.inbox is None:
            return
        try:
            await self.inbox.done(message.chat_id, message.message_id)
        except OSError:
            log.exception("could not mark message %s as answered", message.message_id)

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
            await self._report_failure(context.bot, message.chat_id, "update")
            await self._settled(message)

    async def _accept(self, update: Update, message: Message,
                      context: ContextTypes.DEFAULT_TYPE) -> None:
        user = update.effective_user
        if user is None or user.is_bot:
            await self._settled(message)
            return
        text = message.text or message.caption or ""
        if message.chat.type != ChatType.PRIVATE:
            addressed, text = self._addressed(message, text, context.bot)
            if not addressed:
                await self._settled(message)
                return
        if not await self._is_allowed(user.id):
            await self._refuse(message, user)
            await self._settled(message)
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
        if not await self._is_allowed(user.id):
            await self._refuse(message, user)
            return
        with contextlib.suppress(TelegramError):
            await query.edit_message_reply_markup(reply_markup=None)
        task = asyncio.create_task(self._process_button(message, user, data),
                                   name=f"rumi-telegram-{message.chat_id}-button")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    @staticmethod
    async def _report_failure(bot: Any, chat_id: int, what: str) -> None:
        """Details to the log only; the person gets one short line, never a traceback."""
        log.exception("telegram %s in chat %s failed", what, chat_id)
        with contextlib.suppress(Exception):
            await bot.send_message(chat_id, msg.INTERNAL_ERROR)

    def _addressed(self, message: Message, text: str, bot: Any) -> tuple[bool, str]:
        """In groups, only messages that mention the bot or reply to it are for us."""
        username = (bot.username or "").lower()
        mention = f"@{username}"
        reply = message.reply_to_message
        replied = reply is not None and reply.from_user is not None and reply.from_user.id == bot.id
        first, _, rest = text.partition(" ")
        if first.startswith("/") and "@" in first:
            name, _, target = first.partition("@")
            if target.lower() != username:
                return False, text
            return True, f"{name} {rest}".strip()
        if username and mention in text.lower():
            start = text.lower().index(mention)
            return True, (text[:start] + text[start + len(mention):]).strip()
        return replied, text

    async def _is_allowed(self, user_id: int) -> bool:
        """In telegram.allowed_users, or approved with `rumi pairing approve` (read from the
        pairing file only for people not yet known, so approval needs no restart)."""
        if user_id in self.allowed:
            return True
        if self.pairing is not None and await asyncio.to_thread(self.pairing.is_approved,
                                                                user_id):
            self.allowed.add(user_id)
            return True
        return False

    async def _refuse(self, message: Message, user: User) -> None:
        # a stranger is no chat yet: their app's language if Rumi speaks it, whatever
        # agent.language says for the people it serves (nothing of theirs is stored)
        spoken = msg.normalize_language(user.language_code)
        msg.set_language(spoken or await self.assistant.language_for(
            str(message.chat_id), user.language_code, remember=False))
        if self.pairing is not None:
            await self._ask_for_pairing(message, user)
            return
        if user.id in self._refused:
            return
        self._refused.add(user.id)
        log.info("refused telegram user %s (not in telegram.allowed_users)", user.id)
        with contextlib.suppress(TelegramError):
            await message.get_bot().send_message(
                message.chat_id, msg.NOT_AUTHORIZED.format(user_id=user.id))

    async def _ask_for_pairing(self, message: Message, user: User) -> None:
        """A stranger gets a code to pass on, at most once an hour; nothing else they send
        is read."""
        assert self.pairing is not None
        try:
            request = await asyncio.to_thread(self.pairing.request, user.id, user.full_name,
                                              user.username or "")
        except (PairingError, OSError) as exc:
            log.warning("pairing request of telegram user %s not stored: %s", user.id, exc)
            return
        if request is None:
            return
        log.info("telegram user %s asked to use the bot: pairing code %s", user.id, request.code)
        with contextlib.suppress(TelegramError):
            await message.get_bot().send_message(
                message.chat_id, msg.PAIRING_ASK.format(code=request.code))

    async def _process(self, message: Message, user: User, text: str) -> None:
        await self._answer(message, user, "message", lambda: self._message_turn(message, text),
                           answered=lambda: self._settled(message))
        await self._settled(message)   # not reached when cancelled: answered after a restart

    async def _process_button(self, message: Message, user: User, command: str) -> None:
        """`message` is Rumi's own message that carried the keyboard, not the person's: it is
        neither quoted nor passed as the person's message id."""
        async def turn() -> _Turn:
            return _Turn(command)

        await self._answer(message, user, "button", turn)

    async def _message_turn(self, message: Message, text: str) -> _Turn | None:
        """What a typed message asks for, with its document when it is an `/import`; None
        when there is nothing for the core (already answered here, or empty)."""
        chat_id = message.chat_id
        bot = message.get_bot()
        audio = message.voice or message.audio
        if audio is not None:
            return await self._voice_turn(message, audio)
        if message.photo or (message.document is not None
                             and not text.strip().startswith("/")):
            return await self._media_turn(message, text)
        attachment: Attachment | None = None
        document = message.document
        if document is not None:
            if not text.strip().startswith("/import"):
                pass   # a command captioning a document: the command alone
            elif document.file_size and document.file_size > MAX_IMPORT_BYTES:
                await self.send(bot, chat_id, Reply(
                    msg.DOCUMENT_TOO_LARGE.format(max_mb=MAX_IMPORT_BYTES // 2**20),
                    markdown=False))
                return None
            else:
                file = await document.get_file()
                data = bytes(await file.download_as_bytearray())
                attachment = Attachment(document.file_name or "archivo", data,
                                        document.mime_type)
        if not text.strip() and attachment is None:
            return None
        reply_to = message.reply_to_message
        group = message.chat.type != ChatType.PRIVATE
        return _Turn(text, channel_message_id=message.message_id,
                     reply_to_message_id=reply_to.message_id if reply_to else None,
                     attachment=attachment, quote=message.message_id if group else None)

    async def _voice_turn(self, message: Message, audio: Any) -> _Turn | None:
        """Download a voice note (Telegram's size checked first) for the core to transcribe."""
        if audio.file_size and audio.file_size > MAX_AUDIO_DOWNLOAD_BYTES:
            await self.send(message.get_bot(), message.chat_id, Reply(
                msg.VOICE_TOO_LARGE.format(size_mb=audio.file_size / 2**20,
                                           max_mb=MAX_AUDIO_DOWNLOAD_BYTES // 2**20),
                markdown=False))
            return None
        file = await audio.get_file()
        data = bytes(await file.download_as_bytearray())
        default = "voice.ogg" if message.voice is not None else "audio"
        name = getattr(audio, "file_name", None) or default
        group = message.chat.type != ChatType.PRIVATE
        return _Turn("", channel_message_id=message.message_id,
                     quote=message.message_id if group else None,
                     voice=Attachment(name, data, audio.mime_type),
                     duration=_seconds(audio))

    async def _media_turn(self, message: Message, caption: str) -> _Turn | None:
        """Download a photo (its largest size) or a document for the core to read; a
        document that is an image is read as a photo."""
        if message.photo:
            file_ref: Any = message.photo[-1]
            kind, name, mime = "photo", "foto.jpg", "image/jpeg"
        else:
            file_ref = message.document
            name = file_ref.file_name or "archivo"
            mime = file_ref.mime_type
            kind = "photo" if (mime or "").startswith("image/") else "document"
        if file_ref.file_size and file_ref.file_size > MAX_AUDIO_DOWNLOAD_BYTES:
            await self.send(message.get_bot(), message.chat_id, Reply(
                msg.DOCUMENT_TOO_LARGE.format(max_mb=MAX_AUDIO_DOWNLOAD_BYTES // 2**20),
                markdown=False))
            return None
        file = await file_ref.get_file()
        data = bytes(await file.download_as_bytearray())
        group = message.chat.type != ChatType.PRIVATE
        return _Turn(caption, channel_message_id=message.message_id,
                     quote=message.message_id if group else None,
                     media=Attachment(name, data, mime), media_kind=kind)

    async def _answer(self, message: Message, user: User, what: str,
                      prepare: Callable[[], Awaitable[_Turn | None]],
                      answered: Callable[[], Awaitable[None]] | None = None) -> None:
        """Answer one turn in `message`'s chat, however it arrived (typed or a button).

        One path so every answer gets the same treatment: "typing…" while the core works,
        the reply linked for `/pin`, and a short line instead of a traceback on failure.
        """
        chat_id = message.chat_id
        bot = message.get_bot()
        language = user.language_code
        msg.set_language(await self.assistant.language_for(str(chat_id), language))
        typing = asyncio.create_task(self._typing(bot, chat_id))
        progress: ProgressMessage | None = None
        try:
            turn = await prepare()
            if turn is None:
                return

            async def notify(note: str) -> None:
                if await self._first_notice(message, note):
                    await self.send(bot, chat_id, Reply(note, markdown=False))

            speaker = (None if message.chat.type == ChatType.PRIVATE
                       else Speaker(str(user.id), user.full_name))
            progress = ProgressMessage(bot, chat_id, self.pacer, reply_to=turn.quote,
                                       after=self.progress_after)
            self.steps.watch(progress.step)   # this task runs one turn: steps go to `progress`
            if turn.voice is not None:
                reply = await self.assistant.handle_voice(
                    str(chat_id), user.id, turn.voice, duration=turn.duration,
                    channel_message_id=turn.channel_message_id, notify=notify, speaker=speaker,
                    language=language)
            elif turn.media is not None:
                reply = await self.assistant.handle_media(
                    str(chat_id), user.id, turn.media_kind, turn.media, caption=turn.text,
                    channel_message_id=turn.channel_message_id, notify=notify, speaker=speaker,
                    language=language)
            else:
                reply = await self.assistant.handle(
                    str(chat_id), user.id, turn.text,
                    channel_message_id=turn.channel_message_id,
                    reply_to_message_id=turn.reply_to_message_id,
                    attachment=turn.attachment, notify=notify, speaker=speaker,
                    language=language,
                )
            typing.cancel()
            sent = await self._deliver(bot, chat_id, reply, turn.quote, answered)
            await progress.finish(stopped=reply.is_error or reply.stopped)
            await self._link_sent(chat_id, reply, sent)
        except asyncio.CancelledError:
            raise
        except Exception:
            if progress is not None:
                with contextlib.suppress(Exception):
                    await progress.finish(stopped=True)
            await self._report_failure(bot, chat_id, what)
        finally:
            typing.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await typing

    async def _deliver(self, bot: Any, chat_id: int, reply: Reply, quote: int | None,
                       answered: Callable[[], Awaitable[None]] | None) -> list[int]:
        """Send the answer and journal it as one step a stop does not split (shielded; `drain`
        gives it a moment): cut in between, the restarted bot would answer it again."""

        async def send_and_journal() -> list[int]:
            sent = await self.send(bot, chat_id, reply, reply_to=quote)
            if answered is not None:
                await answered()   # journaled at once: a stop from here on never repeats it
            return sent

        task = asyncio.create_task(send_and_journal())
        self._deliveries.add(task)
        task.add_done_callback(_forget_delivery(self._deliveries))
        return await asyncio.shield(task)

    async def _first_notice(self, message: Message, note: str) -> bool:
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

    async def _link_sent(self, chat_id: int, reply: Reply, sent: list[int]) -> None:
        """So `/pin` as a reply to the answer finds its item (the first chunk shows it).

        The answer is already out: a failure here must not add an "internal error"."""
        if reply.item_id is None or not sent:
            return
        try:
            await self.assistant.link_sent(str(chat_id), reply.item_id, sent[0])
        except Exception:
            log.exception("linking the sent reply in chat %s failed", chat_id)

    async def _typing(self, bot: Any, chat_id: int) -> None:
        """Keep "typing…" visible while the core works (Telegram shows it for ~5 s)."""
        while True:
            try:
                await bot.send_chat_action(chat_id, ChatAction.TYPING)
            except TelegramError as exc:
                log.debug("typing indicator failed: %s", exc)
            await asyncio.sleep(TYPING_EVERY)

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
                   reply_to: int | None = None) -> list[int]:
        """Send a `Reply`: text split ≤ 4096 (HTML, plain-text fallback), then any document.

        `reply.buttons` become an inline keyboard on the last text chunk."""
        ids: list[int] = []
        chunks = split_message(reply.text)
        for n, chunk in enumerate(chunks, start=1):
            markup = _keyboard(reply.buttons) if n == len(chunks) else None
            ids.append(await self._send_chunk(bot, chat_id, chunk, reply.markdown, reply_to,
                                              markup))
            reply_to = None
        if reply.document is not None:
            sent = await bot.send_document(
                chat_id, document=reply.document.data, filename=reply.document.filename,
                caption=reply.document.caption)
            ids.append(sent.message_id)
        return ids

    async def _send_chunk(self, bot: Any, chat_id: int, chunk: str, markdown: bool,
                          reply_to: int | None, markup: InlineKeyboardMarkup | None = None
                          ) -> int:
        try:
            return await self._send_formatted(bot, chat_id, chunk, markdown, reply_to, markup)
        except RetryAfter as exc:
            with warnings.catch_warnings():  # int today, timedelta in PTB's next major
                warnings.simplefilter("ignore", DeprecationWarning)
                wait = exc.retry_after
            seconds = wait.total_seconds() if hasattr(wait, "total_seconds") else float(wait)
            log.warning("telegram flood control: waiting %.0fs before resending", seconds)
            await asyncio.sleep(min(seconds, MAX_FLOOD_WAIT))
            return await self._send_formatted(bot, chat_id, chunk, markdown, reply_to, markup)

    async def _send_formatted(self, bot: Any, chat_id: int, chunk: str, markdown: bool,
                              reply_to: int | None,
                              markup: InlineKeyboardMarkup | None = None) -> int:
        if markdown:
            try:
                sent = await bot.send_message(chat_id, markdown_to_html(chunk),
                                              parse_mode=ParseMode.HTML,
                                              reply_to_message_id=reply_to,
                                              reply_markup=markup)
                return int(sent.message_id)
            except BadRequest as exc:
                if "parse" not in str(exc).lower():
                    raise
                log.warning("telegram rejected formatting (%s); resending as plain text", exc)
        sent = await bot.send_message(chat_id, chunk, reply_to_message_id=reply_to,
                                      reply_markup=markup)
        return int(sent.message_id)

    async def on_error(self, update: object, context: ContextTypes.DEFAULT_TYPE) -> None:
        """Log errors from PTB itself (network hiccups while polling, handler bugs)."""
        log.error("telegram error: %s", context.error, exc_info=context.error)


def _seconds(audio: Any) -> float | None:
    """An audio's duration in seconds (int today, timedelta in PTB's next major)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        value = audio.duration
    if hasattr(value, "total_seconds"):
        return float(value.total_seconds())
    return float(value) if value else None


def _keyboard(rows: list[list[tuple[str, str]]] | None) -> InlineKeyboardMarkup | None:
    """Inline keyboard for `Reply.buttons`; a button's data is the command it sends."""
    if not rows:
        return None
    return InlineKeyboardMarkup([[InlineKeyboardButton(label, callback_data=command)
                                  for label, command in row] for row in rows])


def _clip(text: str, width: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def _forget_delivery(deliveries: set[asyncio.Task[list[int]]]
                     ) -> Callable[[asyncio.Task[list[int]]], None]:
    """Done callback: drop the delivery and retrieve its outcome (a failure was reported to
    the turn that awaited it, or the turn was gone: then only logged)."""

    def done(task: asyncio.Task[list[int]]) -> None:
        deliveries.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.debug("delivery failed", exc_info=task.exception())

    return done

"""The channel-agnostic heart: one message for one chat in, one `Reply` out.

Channels (Telegram, terminal) only translate their updates into `Assistant.handle(...)` and
render the `Reply`. Commands are routed here too; parts that own a command (memory, archive)
register a handler with `register_command`, and unregistered commands answer honestly that
the feature is coming. The registry, /status, the built-in commands, the turn under the chat
lock and the notice queue are siblings in `rumi/core/`; this class puts them together.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable

from rumi import messages as msg
from rumi.agent.loop import AgentLoop
from rumi.base.chats import Speaker
from rumi.base.commands import CommandHandler, CommandRequest, Description, GroupAdmin
from rumi.base.feature import MediaReader, StatusProvider, Transcribe
from rumi.base.replies import Attachment, InputRefused, Reply
from rumi.chat_language import ChatLanguages
from rumi.core.builtins import BuiltinCommands
from rumi.core.commands import (
    CommandRegistry,
    as_reply,
    group_refusal,
    help_reply,
    refused_in_group,
    unregistered_reply,
)
from rumi.core.notices import Buttons, Notices
from rumi.core.ports import AdminCheck, ContextForCore, Notify, Outbox
from rumi.core.status import StatusReport
from rumi.core.turn import ChatTurns, Outcome
from rumi.fileio import is_disk_full
from rumi.sessions.manager import SessionManager

log = logging.getLogger("rumi.core")   # the per-message line keeps its name in the logs


class Assistant:
    def __init__(self, sessions: SessionManager, context: ContextForCore, agent: AgentLoop,
                 languages: ChatLanguages | None = None) -> None:
        self.sessions = sessions
        self.context = context
        self.agent = agent
        self.languages = languages or ChatLanguages()
        self.commands = CommandRegistry()
        self.status = StatusReport(sessions, context)
        self.notices = Notices()
        self.turns = ChatTurns(sessions, context, agent)
        self._erase_listeners: list[Callable[[str], Awaitable[None]]] = []
        self._transcribe: Transcribe | None = None
        self._media: dict[str, MediaReader] = {}
        self._admin_check: AdminCheck | None = None
        BuiltinCommands(sessions, context).register(self.commands)

    # -- extension points -------------------------------------------------------------------

    def register_command(
        self,
        name: str,
        handler: CommandHandler,
        *,
        description: Description | None = None,
        needs_session: bool = True,
        group_admin: GroupAdmin = False,
    ) -> None:
        """Route `/name args` to `handler`; a later registration replaces an earlier one.

        `description` is best a callable (`lambda: msg.X`) so /help and the menu read it in
        each chat's language; without one, `msg.COMMAND_DESCRIPTIONS[name]` is used.

        With `needs_session=True` the handler runs holding the chat lock (queued behind a
        running message) and gets the session in `request.session`.

        `group_admin` (True, or a test of the request) marks a command that changes what a
        whole group shares: in a group only its admins may run it, checked here before the
        handler (and before any lock), so a refusal changes nothing. Private chats are not
        affected.
        """
        self.commands.register(name, handler, description=description,
                               needs_session=needs_session, group_admin=group_admin)

    def add_status_provider(self, provider: StatusProvider, *, detail: bool = False) -> None:
        """Add a line to /status (e.g. sandbox container, memory stats); `detail=True` lines
        are internals shown only by `/status detalle` (`details`)."""
        self.status.add(provider, detail=detail)

    def chat_language(self, chat_id: str) -> str:
        """The language notices to `chat_id` are written in (no message in hand)."""
        return self.languages.for_chat(chat_id)

    async def language_for(self, chat_id: str, hint: str | None = None, *,
                           remember: bool = True) -> str:
        """The language to answer a message from `chat_id` in; `hint` is the channel's
        idea of the person's language (Telegram's `language_code`, the terminal's locale)."""
        return await self.languages.resolve(chat_id, hint, remember=remember)

    def add_erase_listener(self, listener: Callable[[str], Awaitable[None]]) -> None:
        """Told a chat id after words of that chat were erased at the person's request (a
        redaction), so a channel can drop its own copies (Telegram's inbox journal)."""
        self._erase_listeners.append(listener)

    async def erased(self, chat_id: str) -> None:
        for listener in self._erase_listeners:
            try:
                await listener(chat_id)
            except Exception:
                log.exception("erase listener %s failed for chat %s", listener, chat_id)

    def set_outbox(self, outbox: Outbox | None) -> None:
        """The channel's way to message a chat unprompted: `await outbox(chat_id, text)`."""
        self.notices.set_outbox(outbox)

    def set_transcriber(self, transcribe: Transcribe | None) -> None:
        """Speech-to-text for `handle_voice` (rumi/voice wires it when enabled)."""
        self._transcribe = transcribe

    @property
    def transcribes(self) -> bool:
        """Whether voice notes can be heard (speech-to-text wired and enabled)."""
        return self._transcribe is not None

    def set_admin_check(self, check: AdminCheck | None) -> None:
        """How the channel tells a group's admins (Telegram's getChatMember)."""
        self._admin_check = check

    def set_media_reader(self, kind: str, reader: MediaReader | None) -> None:
        """What turns a "photo" or "document" into words (rumi/media wires them)."""
        if reader is None:
            self._media.pop(kind, None)
        else:
            self._media[kind] = reader

    @property
    def can_tell(self) -> bool:
        """A channel is connected (so unprompted messages can go out now)."""
        return self.notices.connected

    async def tell(self, chat_id: str, text: str, buttons: Buttons | None = None, *,
                   keep: bool = True) -> bool:
        """Send an unprompted notice (e.g. a MEMORY.md edit kept aside); False if not sent now.

        Without a channel yet (problems found at start-up), or when the channel does not
        serve that chat, the notice is queued and sent by `deliver_queued` once one does, so
        nothing found early is said to no one. `keep=False` is for senders that retry by
        themselves (reminders): nothing is queued, or it would arrive twice.
        """
        return await self.notices.tell(chat_id, text, buttons, keep=keep)

    async def deliver_queued(self) -> int:
        """Send the notices queued before a channel was set; channels call it after set_outbox."""
        return await self.notices.deliver_queued()

    def command_menu(self) -> list[tuple[str, str]]:
        """(name, description) of every command the person can use, for menus and /help."""
        return self.commands.menu()

    # -- the flow ----------------------------------------------------------------------------

    async def handle(
        self,
        chat_id: str,
        user_id: int | str,
        text: str,
        *,
        channel_message_id: int | None = None,
        reply_to_message_id: int | None = None,
        attachment: Attachment | None = None,
        notify: Notify | None = None,
        speaker: Speaker | None = None,
        language: str | None = None,
    ) -> Reply:
        """Handle one message; never raises for the person's input or a failing part.

        `notify` lets the core say something before the final reply (the "⏳" when busy).
        `speaker`: who wrote it, in a group chat (their messages are labelled with it).
        `language` is the channel's hint of the person's language (see `language_for`).
        """
        with msg.use_language(await self.language_for(chat_id, language)):
            return await self._handle(chat_id, user_id, text, channel_message_id,
                                      reply_to_message_id, attachment, notify, speaker)

    async def _handle(self, chat_id: str, user_id: int | str, text: str,
                      channel_message_id: int | None, reply_to_message_id: int | None,
                      attachment: Attachment | None, notify: Notify | None,
                      speaker: Speaker | None) -> Reply:
        started = time.monotonic()
        outcome = Outcome("message")
        try:
            text = text.strip()
            if text.startswith("/"):
                name, _, args = text[1:].partition(" ")
                name = name.split("@", 1)[0].lower()
                outcome.kind = f"/{name}"
                request = CommandRequest(chat_id, user_id, name, args.strip(),
                                         attachment=attachment,
                                         channel_message_id=channel_message_id,
                                         reply_to_message_id=reply_to_message_id,
                                         speaker=speaker,
                                         admin_check=self._admin_for(chat_id, user_id))
                reply = await self._command(request, notify)
            elif attachment is not None and not text:
                reply = Reply(msg.ATTACHMENT_IGNORED)
            elif not text:
                outcome.kind = "empty"
                reply = Reply("")
            else:
                reply = await self.turns.run(chat_id, text, channel_message_id, notify,
                                             outcome, speaker)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            if is_disk_full(exc):   # not "it was logged": nothing can be written now
                log.error("chat %s: the disk is full (%s); the message waits for room",
                          chat_id, exc)
                reply = Reply(msg.DISK_FULL, is_error=True, markdown=False, disk_full=True)
            else:
                log.exception("handling a message in chat %s failed", chat_id)
                reply = Reply(msg.INTERNAL_ERROR, is_error=True, markdown=False)
        result = outcome.result
        log.info(
            "chat=%s kind=%s tokens=%d tools=%s turns=%d stopped=%s duration=%.2fs",
            chat_id, outcome.kind, result.tokens if result else 0,
            ",".join(result.tools) if result and result.tools else "-",
            result.turns if result else 0, (result.stopped_by if result else None) or "-",
            time.monotonic() - started,
        )
        log.debug("chat=%s in=%r out=%r", chat_id, text, reply.text)
        return reply

    async def handle_voice(
        self,
        chat_id: str,
        user_id: int | str,
        audio: Attachment,
        *,
        duration: float | None = None,
        channel_message_id: int | None = None,
        notify: Notify | None = None,
        speaker: Speaker | None = None,
        language: str | None = None,
    ) -> Reply:
        """A voice note: transcribed, shown briefly ("🎙️ «…»"), then handled as if typed.

        The tape keeps it as a user message that says it was a voice note (and its length),
        so the model and later readers know the words came through speech-to-text."""
        msg.set_language(await self.language_for(chat_id, language))
        if self._transcribe is None:
            return Reply(msg.VOICE_DISABLED, markdown=False)
        try:
            text, seconds = await self._transcribe(chat_id, audio, duration)
        except InputRefused as exc:
            return Reply(str(exc), markdown=False)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("transcribing a voice note in chat %s failed", chat_id)
            return Reply(msg.INTERNAL_ERROR, is_error=True, markdown=False)
        if notify is not None:
            shown = text if len(text) <= 300 else text[:299] + "…"
            await notify(msg.VOICE_HEARD.format(text=shown))
        origin = msg.VOICE_ORIGIN.format(seconds=f"{seconds:.0f}" if seconds else "?")
        return await self.handle(chat_id, user_id, f"{origin} {text}",
                                 channel_message_id=channel_message_id, notify=notify,
                                 speaker=speaker, language=language)

    async def handle_media(
        self,
        chat_id: str,
        user_id: int | str,
        kind: str,
        file: Attachment,
        *,
        caption: str = "",
        channel_message_id: int | None = None,
        notify: Notify | None = None,
        speaker: Speaker | None = None,
        language: str | None = None,
    ) -> Reply:
        """A photo or document: its reader turns it into the person's message (a description,
        or where it was saved, plus the caption), which is then handled as if typed."""
        msg.set_language(await self.language_for(chat_id, language))
        reader = self._media.get(kind)
        if reader is None:
            return Reply(msg.ATTACHMENT_IGNORED, markdown=False)
        try:
            text = await reader(chat_id, file, caption.strip())
        except InputRefused as exc:
            return Reply(str(exc), markdown=False)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("reading a %s in chat %s failed", kind, chat_id)
            return Reply(msg.INTERNAL_ERROR, is_error=True, markdown=False)
        return await self.handle(chat_id, user_id, text,
                                 channel_message_id=channel_message_id, notify=notify,
                                 speaker=speaker, language=language)

    def _admin_for(self, chat_id: str,
                   user_id: int | str) -> Callable[[], Awaitable[bool]] | None:
        check = self._admin_check
        if check is None:
            return None

        async def ask() -> bool:
            return await check(chat_id, user_id)

        return ask

    async def _command(self, request: CommandRequest, notify: Notify | None) -> Reply:
        name = request.name
        if name == "start":
            return Reply(msg.START, markdown=False)
        if name == "help":
            return help_reply(self.commands.menu())
        if name == "status":
            return await self.status.reply(request.chat_id, request.args)
        if name == "stop":
            # one reply, not two: the stopped turn answers its own message with STOPPED_REPLY
            stopped = self.sessions.stop(request.chat_id)
            return Reply("" if stopped else msg.NOTHING_TO_STOP, markdown=False)
        command = self.commands.get(name)
        if command is None:
            return unregistered_reply(name)
        if await refused_in_group(command, request):
            return group_refusal(name)
        if not command.needs_session:
            return as_reply(await command.handler(request))
        locked = await self.turns.lock(request.chat_id, notify)
        if isinstance(locked, Reply):
            return locked
        request.session = locked
        try:
            return as_reply(await command.handler(request))
        finally:
            await self.sessions.release(request.chat_id)

    async def link_sent(self, chat_id: str, item_id: int, channel_message_id: int) -> bool:
        """The channel sent `Reply.item_id` as `channel_message_id`: remember it, so `/pin`
        as a reply to Rumi's own message finds the item. No lock: it only tags the item
        (one synchronous step), and the session is saved with the next release. A session
        that ended meanwhile (/reset) is not brought back just for this."""
        if not self.sessions.is_loaded(chat_id):
            return False
        session = await self.sessions.get(chat_id)
        return await self.context.link_channel_message(session, item_id, channel_message_id)

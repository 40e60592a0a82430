"""The channel-agnostic heart: one message for one chat in, one `Reply` out.

Channels (Telegram, terminal) only translate their updates into `Assistant.handle(...)` and
render the `Reply`. Commands are routed here too; parts that own a command (memory, archive)
register a handler with `register_command`, and unregistered commands answer honestly that
the feature is coming.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from rumi import messages as msg
from rumi.agent.loop import AgentLoop
from rumi.agent.turn import TurnResult
from rumi.base.chats import Speaker
from rumi.base.commands import CommandHandler, CommandRequest, Description, GroupAdmin
from rumi.base.feature import MediaReader, StatusProvider, Transcribe
from rumi.base.replies import Attachment, InputRefused, Reply
from rumi.chat_language import ChatLanguages
from rumi.sessions.events import SessionEvent
from rumi.sessions.manager import QueueFull, SessionManager
from rumi.sessions.state import ContextItem, SessionState

log = logging.getLogger(__name__)


Notify = Callable[[str], Awaitable[None]]
AdminCheck = Callable[[str, "int | str"], Awaitable[bool]]   # (chat_id, user_id) -> admin?
Outbox = Callable[..., Awaitable[bool | None]]   # (chat_id, text[, buttons=…])
QUEUED_NOTICES = 200


class ContextForCore(Protocol):
    async def open(self, session: SessionState) -> None: ...
    def status_text(self, session: SessionState) -> str: ...
    async def clear(self, session: SessionState) -> list[ContextItem]: ...
    async def pin(self, session: SessionState, item_id: int) -> bool: ...
    async def unpin(self, session: SessionState, item_id: int) -> bool: ...
    def find_item_by_channel_message(self, session: SessionState,
                                     channel_message_id: int) -> ContextItem | None: ...
    async def link_channel_message(self, session: SessionState, item_id: int,
                                   channel_message_id: int) -> bool: ...
    async def note_reply(self, session: SessionState, text: str, reason: str) -> None: ...


@dataclass
class _Command:
    handler: CommandHandler
    description: Description
    needs_session: bool
    group_admin: GroupAdmin = False


@dataclass
class _Outcome:
    kind: str
    result: TurnResult | None = None
    extra: dict[str, Any] = field(default_factory=dict)


BUILTIN_IMMEDIATE = ("start", "help", "status", "stop")
DETAIL_WORDS = frozenset({"detalle", "detalles", "details", "detail"})
MODEL_FAILURES = frozenset({"llm_unavailable", "context_full", "rate_limited", "auth_failed",
                            "model_gone", "tool_call_failed"})


class Assistant:
    def __init__(self, sessions: SessionManager, context: ContextForCore, agent: AgentLoop,
                 languages: ChatLanguages | None = None) -> None:
        self.sessions = sessions
        self.context = context
        self.agent = agent
        self.languages = languages or ChatLanguages()
        self.started_at = time.time()
        self._commands: dict[str, _Command] = {}
        self._status_providers: list[StatusProvider] = []
        self._erase_listeners: list[Callable[[str], Awaitable[None]]] = []
        self._detail_providers: list[StatusProvider] = []
        self._outbox: Outbox | None = None
        self._queued: list[tuple[str, str, list[list[tuple[str, str]]] | None]] = []
        self._transcribe: Transcribe | None = None
        self._media: dict[str, MediaReader] = {}
        self._admin_check: AdminCheck | None = None
        self.register_command("reset", self._cmd_reset, needs_session=False, group_admin=True)
        self.register_command("clear", self._cmd_clear, group_admin=True)
        self.register_command("pin", self._cmd_pin)
        self.register_command("unpin", self._cmd_unpin)

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
        name = name.lstrip("/").lower()
        if name in BUILTIN_IMMEDIATE:
            raise ValueError(f"/{name} is built in")
        self._commands[name] = _Command(handler, description or "", needs_session,
                                        group_admin)

    def add_status_provider(self, provider: StatusProvider, *, detail: bool = False) -> None:
        """Add a line to /status (e.g. sandbox container, memory stats); `detail=True` lines
        are internals shown only by `/status detalle` (`details`)."""
        (self._detail_providers if detail else self._status_providers).append(provider)

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
        self._outbox = outbox

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
        return self._outbox is not None

    async def tell(self, chat_id: str, text: str,
                   buttons: list[list[tuple[str, str]]] | None = None, *,
                   keep: bool = True) -> bool:
        """Send an unprompted notice (e.g. a MEMORY.md edit kept aside); False if not sent now.

        Without a channel yet (problems found at start-up), or when the channel does not
        serve that chat, the notice is queued and sent by `deliver_queued` once one does, so
        nothing found early is said to no one. `keep=False` is for senders that retry by
        themselves (reminders): nothing is queued, or it would arrive twice.
        """
        if self._outbox is None:
            if keep:
                log.info("no channel yet: queueing a notice to chat %s", chat_id)
                self._queued = [*self._queued, (chat_id, text, buttons)][-QUEUED_NOTICES:]
            return False
        try:
            if buttons:
                taken = await self._outbox(chat_id, text, buttons=buttons)
            else:
                taken = await self._outbox(chat_id, text)
        except Exception:
            log.exception("delivering a notice to chat %s failed", chat_id)
            return False
        if taken is False:   # not a chat this channel serves (the terminal): keep it for later
            if keep:
                self._queued = [*self._queued, (chat_id, text, buttons)][-QUEUED_NOTICES:]
            return False
        return True

    async def deliver_queued(self) -> int:
        """Send the notices queued before a channel was set; channels call it after set_outbox."""
        queued, self._queued = self._queued, []
        sent = 0
        for chat_id, text, buttons in queued:
            sent += await self.tell(chat_id, text, buttons)
        return sent

    def command_menu(self) -> list[tuple[str, str]]:
        """(name, description) of every command the person can use, for menus and /help."""
        names = list(msg.COMMAND_DESCRIPTIONS)
        names += [n for n in self._commands if n not in names]
        return [(n, self._describe(n)) for n in names]

    def _describe(self, name: str) -> str:
        """In the active language: the registered callable, else the catalogue's entry."""
        command = self._commands.get(name)
        described = command.description if command else ""
        if callable(described):
            return described()
        return msg.COMMAND_DESCRIPTIONS.get(name) or described or name

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
        outcome = _Outcome("message")
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
                reply = await self._message(chat_id, text, channel_message_id, notify, outcome,
                                            speaker)
        except asyncio.CancelledError:
            raise
        except Exception:
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

    async def _lock(self, chat_id: str, notify: Notify | None) -> SessionState | Reply:
        session = await self.sessions.acquire(chat_id)
        if session is None:
            if self.sessions.queued(chat_id) >= self.sessions.settings.max_queued_messages:
                return Reply(msg.BUSY_QUEUE_FULL, markdown=False)
            if notify is not None:
                await notify(msg.BUSY)
            try:
                session = await self.sessions.acquire(chat_id, wait=True)
            except QueueFull:
                return Reply(msg.BUSY_QUEUE_FULL, markdown=False)
        assert session is not None
        try:
            await self.context.open(session)
        except BaseException:
            await self.sessions.release(chat_id)
            raise
        return session

    def _admin_for(self, chat_id: str,
                   user_id: int | str) -> Callable[[], Awaitable[bool]] | None:
        check = self._admin_check
        if check is None:
            return None

        async def ask() -> bool:
            return await check(chat_id, user_id)

        return ask

    async def _message(self, chat_id: str, text: str, channel_message_id: int | None,
                       notify: Notify | None, outcome: _Outcome,
                       speaker: Speaker | None = None) -> Reply:
        locked = await self._lock(chat_id, notify)
        if isinstance(locked, Reply):
            return locked
        session = locked
        task = asyncio.create_task(
            self.agent.run(session, text, channel_message_id=channel_message_id,
                           speaker=speaker),
            name=f"rumi-turn-{chat_id}",
        )
        self.sessions.set_task(chat_id, task)  # type: ignore[arg-type]
        try:
            try:
                result = await task
            except asyncio.CancelledError:
                current = asyncio.current_task()
                if current is not None and current.cancelling():
                    with contextlib.suppress(BaseException):
                        await asyncio.wait({task})
                    raise
                outcome.kind = "message(stopped)"
                await self.context.note_reply(session, msg.STOPPED_REPLY, "stopped")
                return Reply(msg.STOPPED_REPLY, markdown=False, stopped=True)
            outcome.result = result
            await self.sessions.emit(SessionEvent(
                "message", chat_id, session,
                data={"tools": list(result.tools), "tokens": result.tokens,
                      "stopped_by": result.stopped_by},
            ))
            text = f"{result.notice}\n\n{result.text}" if result.notice else result.text
            return Reply(text, is_error=result.stopped_by in MODEL_FAILURES,
                         markdown=result.stopped_by is None, item_id=result.item_id)
        finally:
            await self.sessions.release(chat_id)

    async def _command(self, request: CommandRequest, notify: Notify | None) -> Reply:
        name = request.name
        if name == "start":
            return Reply(msg.START, markdown=False)
        if name == "help":
            lines = [msg.HELP_HEADER, ""]
            lines += [f"/{n} — {d}" for n, d in self.command_menu()]
            lines += ["", msg.HELP_FOOTER]
            return Reply("\n".join(lines), markdown=False)
        if name == "status":
            return await self._status(request.chat_id,
                                      detail=request.args.strip().lower() in DETAIL_WORDS)
        if name == "stop":
            stopped = self.sessions.stop(request.chat_id)
            return Reply(msg.STOPPED if stopped else msg.NOTHING_TO_STOP, markdown=False)
        command = self._commands.get(name)
        if command is None:
            text = msg.FEATURE_COMING if name in msg.COMMAND_DESCRIPTIONS else msg.UNKNOWN_COMMAND
            return Reply(text.format(name=name), markdown=False)
        if await self._refused_in_group(command, request):
            refusals = msg.GROUP_ADMIN_REFUSALS
            text = refusals.get(name) or msg.GROUP_ADMIN_ONLY.format(name=name)
            return Reply(text, markdown=False)
        if not command.needs_session:
            return _as_reply(await command.handler(request))
        locked = await self._lock(request.chat_id, notify)
        if isinstance(locked, Reply):
            return locked
        request.session = locked
        try:
            return _as_reply(await command.handler(request))
        finally:
            await self.sessions.release(request.chat_id)

    @staticmethod
    async def _refused_in_group(command: _Command, request: CommandRequest) -> bool:
        """A group member who is not an admin asking for a command that changes what the
        whole group shares."""
        if not request.in_group:
            return False
        wanted = command.group_admin
        if callable(wanted):
            wanted = wanted(request)
        return bool(wanted) and not await request.is_admin()

    async def _status(self, chat_id: str, *, detail: bool = False) -> Reply:
        """What a person asks (model, key, uptime, memories, sandbox, today's use); with
        `detail` the context internals and every part's diagnostics as well."""
        session = await self.sessions.get(chat_id)
        await self.context.open(session)
        lines = [msg.STATUS_HEADER]
        busy = self.sessions.is_busy(chat_id)
        lines.append(msg.STATUS_BUSY if busy else msg.STATUS_IDLE)
        lines.append(msg.STATUS_UPTIME.format(
            uptime=msg.format_duration(time.time() - self.started_at)))
        lines += await self._status_lines(chat_id, session, self._status_providers)
        if not detail:
            lines.append(msg.STATUS_DETAIL_HINT)
            return Reply("\n".join(lines), markdown=False)
        lines += ["", self.context.status_text(session)]
        lines += await self._status_lines(chat_id, session, self._detail_providers)
        return Reply("\n".join(lines), markdown=False)

    @staticmethod
    async def _status_lines(chat_id: str, session: SessionState,
                            providers: list[StatusProvider]) -> list[str]:
        lines: list[str] = []
        for provider in providers:
            try:
                line = await provider(chat_id, session)
            except Exception:
                log.exception("status provider %s failed", provider)
                continue
            if line:
                lines.append(line)
        return lines

    async def link_sent(self, chat_id: str, item_id: int, channel_message_id: int) -> bool:
        """The channel sent `Reply.item_id` as `channel_message_id`: remember it, so `/pin`
        as a reply to Rumi's own message finds the item. No lock: it only tags the item
        (one synchronous step), and the session is saved with the next release. A session
        that ended meanwhile (/reset) is not brought back just for this."""
        if not self.sessions.is_loaded(chat_id):
            return False
        session = await self.sessions.get(chat_id)
        return await self.context.link_channel_message(session, item_id, channel_message_id)

    # -- built-in commands that need the manager ------------------------------------------

    async def _cmd_reset(self, request: CommandRequest) -> Reply:
        """Stop whatever runs, end the session (fires `reset` and `ended`), start fresh."""
        self.sessions.stop(request.chat_id)
        session = await self.sessions.acquire(request.chat_id, wait=True)
        assert session is not None
        try:
            await self.sessions.end(request.chat_id, "reset")
        finally:
            await self.sessions.release(request.chat_id, save=False)
        return Reply(msg.RESET_DONE, markdown=False)

    async def _cmd_clear(self, request: CommandRequest) -> Reply:
        """Empty the active conversation; subscribers of `cleared` get the removed items."""
        assert request.session is not None
        removed = await self.context.clear(request.session)
        await self.sessions.emit(SessionEvent(
            "cleared", request.chat_id, request.session, reason="clear",
            data={"removed": removed},
        ))
        count = msg.count_of(len(removed), "ITEMS")
        return Reply(msg.CLEAR_DONE.format(count=count), markdown=False)

    async def _cmd_pin(self, request: CommandRequest) -> Reply:
        return await self._set_pin(request, True)

    async def _cmd_unpin(self, request: CommandRequest) -> Reply:
        return await self._set_pin(request, False)

    async def _set_pin(self, request: CommandRequest, pinned: bool) -> Reply:
        """`/pin 12` (the [#12] id) or `/pin` as a reply to a message (yours or Rumi's)."""
        assert request.session is not None
        item_id: int | None = None
        raw = request.args.strip().lstrip("#[").rstrip("]")
        if raw.isdigit():
            item_id = int(raw)
        elif request.reply_to_message_id is not None:
            item = self.context.find_item_by_channel_message(request.session,
                                                             request.reply_to_message_id)
            item_id = item.id if item is not None else None
        if item_id is None:
            return Reply(msg.PIN_USAGE.format(name=request.name), markdown=False)
        action = self.context.pin if pinned else self.context.unpin
        if not await action(request.session, item_id):
            return Reply(msg.PIN_NOT_FOUND.format(id=item_id), markdown=False)
        text = msg.PINNED if pinned else msg.UNPINNED
        return Reply(text.format(id=item_id), markdown=False)


def _as_reply(value: Reply | str) -> Reply:
    return value if isinstance(value, Reply) else Reply(value)

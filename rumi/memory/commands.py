"""The memory commands people type (/remember /forget /clear /reset /export /import /memory
/search) and the agent's memory tools (`remember`, `forget`, `search_memory`).

Handlers are channel-agnostic: they take the core's `CommandRequest` and return a `Reply`, so
Telegram and the terminal behave the same. /forget with several matches does not guess: it
lists them numbered and waits for `/forget 2` (or `/forget todos`) within five minutes; the
reply also carries buttons (`Reply.buttons`: `/forget #id`, todos, cancel) that Telegram shows
inline, while the terminal relies on the typed answer.

/search and `search_memory` understand relative time ("/search pizza la semana pasada",
"/search ayer"): the expression is resolved in the chat's timezone at the time of the search
(`relative_time`), its words are not searched for, and hits from that span come first — only
those when nothing else was asked.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from pydantic import Field

from rumi import messages as msg
from rumi.base.chats import Speaker
from rumi.base.commands import CommandRequest
from rumi.base.replies import Reply, ReplyDocument
from rumi.base.tools import Tool, ToolArgs, ToolContext, ToolError
from rumi.memory import fts, relative_time
from rumi.memory.archive import ArchiveRejected, export_chat, import_archive
from rumi.memory.codec import clip
from rumi.memory.editing import Forgotten
from rumi.memory.journal import Journal, utc_now
from rumi.memory.lifecycle import MemoryLifecycle
from rumi.memory.models import Memory, MemoryInputError, MemorySource, MemoryType, NewMemory
from rumi.memory.switch import MemorySwitch
from rumi.memory.tape_index import TapeIndex
from rumi.paths import ChatPaths

log = logging.getLogger(__name__)

CONFIRM_SECONDS = 300
TOOL_MEMORY_OFF = ("Long-term memory is switched off in this chat (/memory off): nothing can be "
                   "saved or searched. Answer from the conversation itself.")
BUTTON_CHARS = 48
ALL_WORDS = ("todos", "todo", "all")
KEY_VALUE = re.compile(r"^([^\s:][^:\n]{0,39}):\s*(\S.*)$", re.S)


def parse_remember(text: str) -> tuple[str | None, str]:
    """`key: value` (a short key of at most four words) or free text."""
    text = text.strip()
    match = KEY_VALUE.match(text)
    if match and len(match.group(1).split()) <= 4 and "http" not in match.group(1):
        return "_".join(match.group(1).strip().lower().split()), match.group(2).strip()
    return None, text


def _line(memory: Memory) -> str:
    key = f"{memory.key}: " if memory.key else ""
    owner = ""
    if memory.owner_id is not None:
        name = str(memory.metadata.get("owner_name") or memory.owner_id)
        owner = f" ({msg.MEMORY_OWNER.format(name=name)})"
    return f"#{memory.id} {key}{memory.content}{owner}"


def _ids(memories: list[Memory]) -> str:
    return ", ".join(f"#{m.id}" for m in memories)


def _left(others: list[Memory]) -> str:
    """Said when a group member's /forget matched other members' memories too."""
    return msg.FORGET_OTHERS_LEFT.format(count=len(others)) if others else ""


def _last_speaker(ctx: ToolContext) -> Speaker | None:
    """Who wrote the message the agent is answering (None in a private chat)."""
    session = ctx.session
    for item in reversed(getattr(session, "items", None) or []):
        if item.role == "user":
            return item.speaker
    return None


@dataclass
class _PendingForget:
    ids: list[int]
    expires: float
    query: str | None = None


class MemoryCommands:
    """Command handlers and tools over one store, lifecycle and journal."""

    def __init__(
        self,
        data_dir: Path,
        *,
        store: Any,
        lifecycle: MemoryLifecycle,
        journal: Journal,
        sessions: Any = None,
        stop_sandbox: Callable[[str], Awaitable[Any]] | None = None,
        monotonic: Callable[[], float] = time.monotonic,
        switch: MemorySwitch | None = None,
        tape_index: TapeIndex | None = None,
        timezone: Callable[[str], Awaitable[ZoneInfo]] | None = None,
        clock: Callable[[], datetime] = utc_now,
        redact: Any = None,
    ) -> None:
        self.data_dir = Path(data_dir)
        self.timezone = timezone
        self.clock = clock
        self.store = store
        self.tape_index = tape_index or TapeIndex(data_dir, store)
        self.lifecycle = lifecycle
        self.journal = journal
        self.sessions = sessions
        self.stop_sandbox = stop_sandbox
        self.monotonic = monotonic
        self.switch = switch
        self._pending: dict[str, _PendingForget] = {}
        self.redact = redact  # RedactCommand: offers to remove the words from the conversation

    def register(self, assistant: Any) -> None:
        """Register every command on the core `Assistant`."""
        assistant.register_command("remember", self.cmd_remember, needs_session=False)
        assistant.register_command("forget", self.cmd_forget, needs_session=False)
        assistant.register_command("memory", self.cmd_memory, needs_session=False)
        assistant.register_command("search", self.cmd_search, needs_session=False)
        if self.lifecycle.sync is not None:
            assistant.register_command("memorymd", self.cmd_memorymd, needs_session=False,
                                       description=lambda: msg.MD_COMMAND_DESCRIPTION,
                                       group_admin=_answers_md_question)
        assistant.register_command("clear", self.cmd_clear, needs_session=True,
                                   group_admin=True)
        assistant.register_command("export", self.cmd_export, needs_session=True)
        assistant.register_command("import", self.cmd_import, needs_session=True,
                                   group_admin=True)
        if self.sessions is not None:
            assistant.register_command("reset", self.cmd_reset, needs_session=False,
                                       group_admin=True)

    # --- /remember -----------------------------------------------------------------------

    async def remember(self, chat_id: str, text: str, *, type_: MemoryType | None = None,
                       key: str | None = None, by_user: bool = True,
                       owner: Speaker | None = None) -> Memory:
        """Save a memory; a new value for an existing key supersedes it.

        `by_user`: the person asked (/remember) — source explicit, high importance. The
        agent's `remember` tool passes False: the model may have been talked into it by
        text it read (a web page, a file), so its saves are `auto` with ordinary weight and
        never look user-confirmed in recall or MEMORY.md.
        """
        if key is None:
            key, text = parse_remember(text)
        if not text.strip():
            raise MemoryInputError(msg.REMEMBER_EMPTY)
        new = NewMemory(content=text.strip(), type=type_ or MemoryType.FACT, key=key,
                        source=MemorySource.EXPLICIT if by_user else MemorySource.AUTO,
                        importance=0.9 if by_user else 0.6,
                        confidence=1.0 if by_user else 0.8,
                        owner_id=owner.user_id if owner else None,
                        metadata={"owner_name": owner.safe_name} if owner else {})
        if key:
            owner_id = owner.user_id if owner else None
            same_key = [m for m in await self.store.list(chat_id, key=key, limit=50)
                        if m.owner_id == owner_id]
            if same_key and all(m.content != new.content for m in same_key):
                memory = await self.store.supersede(chat_id, same_key[0].id, new)
                await self._after_change(chat_id)
                return memory
        memory = (await self.store.save(chat_id, new)).memory
        await self._after_change(chat_id)
        return memory

    async def _after_change(self, chat_id: str) -> None:
        await self.lifecycle.mark_dirty(chat_id)
        await self.lifecycle.write_markdown(chat_id)

    async def cmd_remember(self, request: CommandRequest) -> Reply:
        if not request.args.strip():
            return Reply(msg.REMEMBER_USAGE, markdown=False)
        if not await self.enabled(request.chat_id):
            return Reply(msg.REMEMBER_MEMORY_OFF, markdown=False)
        try:
            memory = await self.remember(request.chat_id, request.args, owner=request.speaker)
        except MemoryInputError as exc:
            return Reply(msg.REMEMBER_FAILED.format(reason=exc), markdown=False, is_error=True)
        return Reply(msg.REMEMBERED.format(line=_line(memory)), markdown=False)

    # --- /forget -------------------------------------------------------------------------

    async def find(self, chat_id: str, query: str, limit: int = 10) -> list[Memory]:
        """Memories a /forget query names: `#id`, an exact key, or matching words."""
        query = query.strip()
        if re.fullmatch(r"#\d+", query):
            found = await self.store.get(chat_id, int(query[1:]))
            return [found] if found is not None and found.status == "active" else []
        by_key = await self.store.list(chat_id, key=query, limit=limit)
        if by_key:
            return by_key
        folded = query.casefold()
        active = await self.store.list(chat_id, limit=5_000)
        hits = [m for m in active if folded in m.content.casefold()
                or (m.key and folded in m.key.casefold())]
        if not hits:
            ranked = await self.store.keyword_search(chat_id, query, limit, match_all=True)
            hits = await self.store.get_many(chat_id, [i for i, _ in ranked])
        return hits[:limit]

    async def forget_ids(self, chat_id: str, ids: list[int]) -> Forgotten:
        forgotten = Forgotten()
        for memory_id in ids:
            gone = await self.store.forget(chat_id, memory_id=memory_id)
            forgotten += gone
            forgotten.history += gone.history
        if forgotten:
            await self._after_change(chat_id)
        return forgotten

    async def cmd_forget(self, request: CommandRequest) -> Reply:
        chat_id, args = request.chat_id, request.args.strip()
        if not args:
            return Reply(msg.FORGET_USAGE, markdown=False)
        pending = self._pending.get(chat_id)
        if pending is not None and pending.expires < self.monotonic():
            self._pending.pop(chat_id, None)
            pending = None
        choice = args.casefold()
        if pending is None and (choice.isdigit() or choice in ALL_WORDS):
            # an answer to a list that expired (or a stale button): never a search for "2"
            return Reply(msg.FORGET_LIST_EXPIRED, markdown=False)
        if pending is not None and (choice.isdigit() or choice in ALL_WORDS):
            if choice.isdigit():
                index = int(choice)
                if not 1 <= index <= len(pending.ids):
                    return Reply(msg.FORGET_PICK_NUMBER.format(count=len(pending.ids)),
                                 markdown=False)
                ids = [pending.ids[index - 1]]
            else:
                ids = list(pending.ids)
            self._pending.pop(chat_id, None)
            allowed, others = await self._permitted(request,
                                                    await self.store.get_many(chat_id, ids))
            if others and not allowed:
                return Reply(msg.FORGET_NOT_YOURS.format(ids=_ids(others)), markdown=False)
            forgotten = await self.forget_ids(chat_id, [m.id for m in allowed])
            return await self._forgot_reply(request, forgotten, pending.query, _left(others))
        if choice in ("no", "cancelar", "cancel", "none"):
            self._pending.pop(chat_id, None)
            return Reply(msg.FORGET_CANCELLED, markdown=False)
        matches, others = await self._permitted(request, await self.find(chat_id, args))
        if others and not matches:
            return Reply(msg.FORGET_NOT_YOURS.format(ids=_ids(others)), markdown=False)
        if not matches:
            return Reply(msg.FORGET_NO_MATCH.format(query=args), markdown=False)
        if len(matches) == 1:
            forgotten = await self.forget_ids(chat_id, [matches[0].id])
            return await self._forgot_reply(request, forgotten, args, _left(others))
        self._pending[chat_id] = _PendingForget([m.id for m in matches],
                                                self.monotonic() + CONFIRM_SECONDS, args)
        lines = [msg.FORGET_MATCHES.format(count=len(matches)) + _left(others)]
        lines += [f"{n}. {_line(m)}" for n, m in enumerate(matches, start=1)]
        lines += ["", msg.FORGET_WHICH]
        # Buttons name the memory by id, not by position, so a stale keyboard can never
        # forget a different memory than the one it shows.
        buttons = [[(clip(f"{n}. {_line(m)}", BUTTON_CHARS), f"/forget #{m.id}")]
                   for n, m in enumerate(matches, start=1)]
        buttons.append([(msg.FORGET_ALL_BUTTON, "/forget todos"),
                        (msg.FORGET_CANCEL_BUTTON, "/forget no")])
        return Reply("\n".join(lines), markdown=False, buttons=buttons)

    async def _forgot_reply(self, request: CommandRequest, forgotten: Forgotten,
                            query: str | None, left: str = "") -> Reply:
        """The forget's reply, and the offer to redact when its text was also said: the
        memories' texts and the words searched with (not an id or a key such as «dni»,
        which would match every message that merely names the subject). In a group the
        history is everyone's: only an admin is offered to erase words from it."""
        chat_id = request.chat_id
        text = self._forgot_text(forgotten) + left
        if not forgotten or self.redact is None:
            return Reply(text, markdown=False)
        if request.in_group and not await request.is_admin():
            return Reply(text, markdown=False)
        texts = [m.content for m in forgotten]
        q = (query or "").strip()
        if q and not re.fullmatch(r"#?\d+", q) and not any(
                m.key and m.key.casefold() == "_".join(q.casefold().split()) for m in forgotten):
            texts.append(q)
        offer = await self.redact.offer(chat_id, texts, self._forgot_what(forgotten))
        if offer is None:
            return Reply(text, markdown=False)
        question, buttons = offer
        return Reply(f"{text}\n\n{question}", markdown=False, buttons=buttons)

    @staticmethod
    async def _permitted(request: CommandRequest, memories: list[Memory]
                         ) -> tuple[list[Memory], list[Memory]]:
        """(may forget, may not): in a group a member forgets only memories about them;
        the group's admins (asked only when needed) and private chats forget anything."""
        if not request.in_group or not memories:
            return memories, []
        assert request.speaker is not None
        mine = [m for m in memories if m.owner_id == request.speaker.user_id]
        if len(mine) == len(memories) or await request.is_admin():
            return memories, []
        return mine, [m for m in memories if m.owner_id != request.speaker.user_id]

    @staticmethod
    def _forgot_text(forgotten: Forgotten) -> str:
        """What was erased, by id only: repeating the text would write it again (chat, tape)."""
        if not forgotten:
            return msg.FORGET_NOT_ACTIVE
        return msg.FORGOT_REPLY.format(what=MemoryCommands._forgot_what(forgotten))

    @staticmethod
    def _forgot_what(forgotten: Forgotten) -> str:
        ids = ", ".join(f"#{m.id}" for m in forgotten)
        what = (msg.FORGOT_ONE if len(forgotten) == 1 else msg.FORGOT_MANY).format(
            ids=ids, count=len(forgotten))
        if forgotten.history:
            what += (msg.FORGOT_HISTORY_ONE if forgotten.history == 1
                     else msg.FORGOT_HISTORY).format(count=forgotten.history)
        return what

    # --- /clear and /reset ---------------------------------------------------------------

    async def cmd_clear(self, request: CommandRequest) -> Reply:
        assert request.session is not None
        snapshot, result, removed = await self.lifecycle.clear(request.session)
        if self.sessions is not None:
            from rumi.sessions.events import SessionEvent

            await self.sessions.emit(SessionEvent("cleared", request.chat_id, request.session,
                                                  reason="clear", data={"removed": removed}))
        parts = [msg.CLEARED.format(count=len(removed))]
        if snapshot is not None:
            parts.append(msg.CLEARED_SNAPSHOT.format(name=snapshot.name))
        if result.saved:
            parts.append(msg.CLEARED_LEARNED.format(count=result.saved))
        if result.pending:
            parts.append(msg.CLEARED_PENDING)
        parts.append(msg.CLEARED_MEMORY_INTACT)
        return Reply(" ".join(parts), markdown=False)

    async def cmd_reset(self, request: CommandRequest) -> Reply:
        """Learn, end the session (fires `reset`/`ended`), stop the sandbox, start fresh."""
        chat_id = request.chat_id
        self.sessions.stop(chat_id)
        session = await self.sessions.acquire(chat_id, wait=True)
        try:
            result = await self.lifecycle.learn(chat_id, session.items, reason="reset",
                                                session=session)
            await self.sessions.end(chat_id, "reset")
        finally:
            await self.sessions.release(chat_id, save=False)
        if self.stop_sandbox is not None:
            try:
                await self.stop_sandbox(chat_id)
            except Exception:
                log.exception("stopping the sandbox of chat %s failed", chat_id)
        text = msg.RESET_FRESH
        if result.saved:
            text += msg.RESET_LEARNED.format(count=result.saved)
        return Reply(text + msg.RESET_MEMORY_KEPT, markdown=False)

    # --- /export and /import -------------------------------------------------------------

    async def cmd_export(self, request: CommandRequest) -> Reply:
        await self.lifecycle.write_markdown(request.chat_id)
        name, data = await export_chat(self.data_dir, request.chat_id, self.store)
        return Reply(msg.EXPORT_READY, document=ReplyDocument(name, data, caption=name),
                     markdown=False)

    async def cmd_import(self, request: CommandRequest) -> Reply:
        if request.attachment is None:
            return Reply(msg.IMPORT_USAGE, markdown=False)
        try:
            report = await import_archive(self.data_dir, request.chat_id,
                                          request.attachment.data, self.store)
        except ArchiveRejected as exc:
            return Reply(msg.IMPORT_REJECTED.format(reason=exc), markdown=False, is_error=True)
        except MemoryInputError as exc:
            return Reply(msg.IMPORT_REJECTED.format(reason=exc), markdown=False, is_error=True)
        await self._after_change(request.chat_id)
        text = msg.IMPORTED.format(added=report.memories_added,
                                   written=len(report.files_written),
                                   merged=len(report.files_merged))
        if report.memories_forgotten:
            text += msg.IMPORT_SKIPPED_FORGOTTEN.format(count=report.memories_forgotten)
        if report.files_kept:
            text += msg.IMPORT_KEPT.format(files=", ".join(report.files_kept))
        if report.memory_errors:
            shown = "; ".join(msg.IMPORT_ERROR_LINE.format(line=n, reason=why)
                              for n, why in report.memory_errors[:3])
            more = "…" if len(report.memory_errors) > 3 else ""
            text += msg.IMPORT_INVALID.format(count=len(report.memory_errors),
                                              shown=shown + more)
        return Reply(text, markdown=False)

    # --- /memory and /search -------------------------------------------------------------

    async def enabled(self, chat_id: str) -> bool:
        return self.switch is None or await self.switch.enabled(chat_id)

    async def switch_status(self, chat_id: str, session: Any) -> str | None:
        """A /status line when this chat's long-term memory is off."""
        return None if await self.enabled(chat_id) else msg.MEMORY_STATE_OFF

    async def cmd_memory_switch(self, request: CommandRequest) -> Reply:
        """`/memory off|on`: in a group only an admin may, as it decides for everyone."""
        choice = request.args.strip().casefold()
        if choice not in ("on", "off") or self.switch is None:
            return Reply(msg.MEMORY_SWITCH_USAGE, markdown=False)
        if not await request.is_admin():
            return Reply(msg.MEMORY_SWITCH_ADMIN_ONLY, markdown=False)
        on = choice == "on"
        changed = await self.switch.set(request.chat_id, on, by=str(request.user_id))
        if on:
            return Reply(msg.MEMORY_ON_DONE if changed else msg.MEMORY_ALREADY_ON,
                         markdown=False)
        return Reply(msg.MEMORY_OFF_DONE if changed else msg.MEMORY_ALREADY_OFF, markdown=False)

    async def cmd_memory(self, request: CommandRequest) -> Reply:
        chat_id = request.chat_id
        if request.args.strip():
            return await self.cmd_memory_switch(request)
        stats = await self.store.stats(chat_id)
        by_type = stats.get("by_type", {})
        lines = [msg.MEMORY_ACTIVE.format(count=stats.get("active", 0)),
                 msg.MEMORY_STATE_ON if await self.enabled(chat_id) else msg.MEMORY_STATE_OFF]
        if by_type:
            labels = msg.MEMORY_TYPE_LABELS
            lines.append(", ".join(f"{labels.get(t, t)}: {n}"
                                   for t, n in sorted(by_type.items())))
        recent = sorted(await self.store.list(chat_id, limit=200),
                        key=lambda m: (m.created_at, m.id), reverse=True)[:5]
        if recent:
            lines.append(msg.MEMORY_RECENT)
            lines += [f"- {m.created_at:%Y-%m-%d} {_line(m)}" for m in recent]
        md = ChatPaths(self.data_dir, chat_id).memory_md
        size = await asyncio.to_thread(lambda: md.stat().st_size if md.exists() else None)
        lines.append(msg.MEMORY_MD_SIZE.format(size=size) if size is not None
                     else msg.MEMORY_MD_MISSING)
        pending = await self.lifecycle.pending(chat_id)
        if pending:
            lines.append(msg.MEMORY_PENDING.format(count=len(pending)))
        if self.lifecycle.sync is not None:
            lines += await self.lifecycle.sync.status_lines(chat_id)
        if self.redact is not None:
            done, messages = await self.redact.redactor.count(chat_id)
            lines.append(msg.REDACTIONS_COUNT.format(count=done, messages=messages))
        return Reply("\n".join(lines), markdown=False)

    async def cmd_memorymd(self, request: CommandRequest) -> Reply:
        """The answer to a held MEMORY.md edit (the buttons send `/memorymd si|no`)."""
        choice = request.args.strip().casefold()
        assert self.lifecycle.sync is not None
        if choice in MD_YES:
            text = await self.lifecycle.sync.confirm(request.chat_id, True)
        elif choice in MD_NO:
            text = await self.lifecycle.sync.confirm(request.chat_id, False)
        else:
            text = msg.MD_CONFIRM_USAGE
        return Reply(text, markdown=False)

    async def search(self, chat_id: str, query: str, limit: int = 8,
                     spans: list[relative_time.Span] | None = None) -> list[str]:
        """Dated hits from long-term memory, the tape and the daily logs/snapshots.

        A relative time expression in `query` ("ayer", "last week") puts the hits from its
        span first; with no other words, it lists what that span holds. `spans`: the query's
        already resolved (`_spans`)."""
        if spans is None:
            spans = await self._spans(chat_id, query)
        words = relative_time.without(query, [s.expression for s in spans]) if spans else query
        only_span = bool(spans) and not fts.terms(words)

        def in_span(when: datetime | None) -> bool:
            return when is not None and any(s.contains(when) for s in spans)

        found: list[tuple[bool, str]] = []
        if only_span:
            ids = await self.store.ids_between(chat_id, [(s.start, s.end) for s in spans],
                                               limit, self.clock())
        else:
            ids = [i for i, _ in await self.store.keyword_search(chat_id, words, limit)]
        for memory in await self.store.get_many(chat_id, ids):
            found.append((in_span(memory.created_at),
                          f"🧠 {memory.created_at:%Y-%m-%d} {_line(memory)}"))
        tape = await self._search_tape(
            chat_id, words, limit if not spans else 10 * limit,
            [(s.start, s.end) for s in spans] if only_span else None)
        marked = [(in_span(when), line) for when, line in tape]
        found += sorted(marked, key=lambda f: not f[0])[:limit]
        zone = await self._zone(chat_id)
        days = {d for s in spans for d in _local_days(s, zone)}
        for hit in await self.journal.search(chat_id, words, limit,
                                             days=days if only_span else None):
            found.append((hit.day in days, f"📓 {hit.day} {hit.line}"))
        if spans:
            found.sort(key=lambda f: not f[0])  # stable: each source keeps its own order
        return [line for _, line in found]

    async def _zone(self, chat_id: str) -> ZoneInfo:
        return await self.timezone(chat_id) if self.timezone is not None else ZoneInfo("UTC")

    async def _spans(self, chat_id: str, query: str) -> list[relative_time.Span]:
        if not relative_time.mentions(query):
            return []
        zone = await self._zone(chat_id)
        return await asyncio.to_thread(relative_time.resolve, query, self.clock(), zone)

    async def _search_tape(
        self, chat_id: str, query: str, limit: int,
        spans: list[tuple[datetime, datetime]] | None = None,
    ) -> list[tuple[datetime | None, str]]:
        """(time, line) of conversation hits, the chat's own tape and the ones /import kept
        (`imp…:id`), newest first; with `spans`, only messages from them."""
        hits = await self.tape_index.search(chat_id, query, limit, spans or ())
        return [(hit.when, f"💬 {hit.day} [#{hit.ref}] {hit.text}") for hit in hits]

    async def cmd_search(self, request: CommandRequest) -> Reply:
        query = request.args.strip()
        if not query:
            return Reply(msg.SEARCH_USAGE, markdown=False)
        spans = await self._spans(request.chat_id, query)
        hits = await self.search(request.chat_id, query, spans=spans)
        period = ""
        if spans:  # what "ayer" was taken to mean, so the person can check it
            zone = await self._zone(request.chat_id)
            period = msg.SEARCH_PERIOD.format(
                periods="; ".join(f"«{s.expression.text}» = {_period_text(s, zone)}"
                                  for s in spans)) + "\n"
        if not hits:
            return Reply(period + msg.SEARCH_NONE.format(query=query), markdown=False)
        return Reply(msg.SEARCH_RESULTS.format(query=query) + "\n" + period + "\n".join(hits[:20]),
                     markdown=False)

    # --- agent tools ---------------------------------------------------------------------

    def tools(self) -> list[Tool]:
        return [
            Tool("remember", "Save a lasting fact about the user (third person, the user's "
                 "language). Give one-value facts a `key` (e.g. 'ciudad'): a new value replaces "
                 "the old.", RememberArgs, self._tool_remember),
            Tool("forget", "Forget long-term memories by memory_id (preferred) or by a query "
                 "on key or text.", ForgetArgs, self._tool_forget),
            Tool("search_memory", "Search long-term memory, past conversations and daily logs "
                 "by words; a relative time in the query ('ayer', 'la semana pasada', 'last "
                 "week') puts hits from that time first.", SearchArgs, self._tool_search),
        ]

    async def _tool_remember(self, args: RememberArgs, ctx: ToolContext) -> str:
        if not await self.enabled(ctx.chat_id):
            raise ToolError(TOOL_MEMORY_OFF)
        try:
            memory = await self.remember(ctx.chat_id, args.content, type_=MemoryType(args.type),
                                         key=args.key or None, by_user=False,
                                         owner=_last_speaker(ctx))
        except MemoryInputError as exc:
            raise ToolError(str(exc)) from exc
        return f"Saved memory {_line(memory)}"

    async def _tool_forget(self, args: ForgetArgs, ctx: ToolContext) -> str:
        if args.memory_id is not None:
            ids = [args.memory_id]
        elif args.query:
            matches = await self.find(ctx.chat_id, args.query)
            if len(matches) > 1:
                listing = "; ".join(_line(m) for m in matches)
                raise ToolError(f"Several memories match: {listing}. Call again with memory_id.")
            ids = [m.id for m in matches]
        else:
            raise ToolError("Give memory_id or query.")
        speaker = _last_speaker(ctx)
        if speaker is not None:   # a group: the agent cannot ask Telegram who is an admin
            found = await self.store.get_many(ctx.chat_id, ids)
            if any(m.owner_id != speaker.user_id for m in found):
                raise ToolError("In a group you may only forget memories about the person "
                                "speaking; others' (or the group's) need an admin's /forget.")
        forgotten = await self.forget_ids(ctx.chat_id, ids)
        if not forgotten:
            raise ToolError("No active memory matched.")
        return "Forgot (erased with its history): " + ", ".join(f"#{m.id}" for m in forgotten)

    async def _tool_search(self, args: SearchArgs, ctx: ToolContext) -> str:
        if not await self.enabled(ctx.chat_id):
            raise ToolError(TOOL_MEMORY_OFF)
        hits = await self.search(ctx.chat_id, args.query, args.limit)
        return "\n".join(hits) if hits else "No results."


def _parse_time(stamp: str) -> datetime | None:
    try:
        when = datetime.fromisoformat(stamp) if stamp else None
    except ValueError:
        return None
    return when.replace(tzinfo=UTC) if when is not None and when.tzinfo is None else when


def _period_text(span: relative_time.Span, zone: ZoneInfo) -> str:
    """24/11/2026 · 16/11/2026–22/11/2026 · 24/11/2026 12:00–21:00 (local)."""
    start = span.start.astimezone(zone)
    last = (span.end - timedelta(microseconds=1)).astimezone(zone)
    if start.hour or start.minute or span.end - span.start < timedelta(days=1):
        return f"{start:%d/%m/%Y %H:%M}–{span.end.astimezone(zone):%H:%M}"
    if start.date() == last.date():
        return f"{start:%d/%m/%Y}"
    return f"{start:%d/%m/%Y}–{last:%d/%m/%Y}"


def _local_days(span: relative_time.Span, zone: ZoneInfo) -> list[str]:
    """The local dates (YYYY-MM-DD, the daily logs' names) a span touches."""
    day, last = span.start.astimezone(zone).date(), (span.end.astimezone(zone)
                                                     - timedelta(microseconds=1)).date()
    out = []
    while day <= last:
        out.append(day.isoformat())
        day += timedelta(days=1)
    return out


class RememberArgs(ToolArgs):
    content: str = Field(min_length=1, max_length=2_000)
    key: str | None = Field(default=None, max_length=80)
    type: str = Field(default="fact", pattern="^(fact|preference|decision|entity|profile)$")


class ForgetArgs(ToolArgs):
    memory_id: int | None = None
    query: str | None = Field(default=None, max_length=200)


class SearchArgs(ToolArgs):
    query: str = Field(min_length=1, max_length=200)
    limit: int = Field(default=8, ge=1, le=30)


MD_YES = frozenset({"si", "sí", "s", "y", "yes"})
MD_NO = frozenset({"no", "n"})


def _answers_md_question(request: CommandRequest) -> bool:
    """`/memorymd si|no` decides a MEMORY.md change for everyone; the usage line does not."""
    return request.args.strip().casefold() in MD_YES | MD_NO

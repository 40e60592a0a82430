"""The memory commands people type, and the one object install wires in.

`MemoryCommands` handles /remember and /forget itself and owns the rest: `ChatCommands`
(/clear /reset /export /import /memory /memorymd), `MemorySearch` (/search) and
`MemoryTools` (the agent's `remember`, `forget`, `search_memory`).

Handlers are channel-agnostic: they take the core's `CommandRequest` and return a `Reply`, so
Telegram and the terminal behave the same. /forget with several matches does not guess: it
lists them numbered and waits for `/forget 2` (or `/forget todos`) within five minutes; the
reply also carries buttons (`Reply.buttons`: `/forget #id`, todos, cancel) that Telegram shows
inline, while the terminal relies on the typed answer.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from rumi import messages as msg
from rumi.base.chats import Speaker
from rumi.base.commands import CommandRequest
from rumi.base.pending import PendingQuestions
from rumi.base.replies import Reply
from rumi.base.tools import Tool
from rumi.memory.chat_commands import ChatCommands, answers_md_question
from rumi.memory.files.journal import Journal, utc_now
from rumi.memory.forget_earlier import EarlierHits, erase_earlier, find_earlier, named
from rumi.memory.learning.lifecycle import MemoryLifecycle
from rumi.memory.lines import ids_text, memory_line, others_left
from rumi.memory.recall import relative_time
from rumi.memory.search_command import MemorySearch
from rumi.memory.store.codec import clip
from rumi.memory.store.editing import Forgotten
from rumi.memory.store.models import Memory, MemoryInputError, MemorySource, MemoryType, NewMemory
from rumi.memory.store.switch import MemorySwitch
from rumi.memory.store.tape_index import TapeIndex
from rumi.memory.tools import MemoryTools

log = logging.getLogger(__name__)

CONFIRM_SECONDS = 300
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


@dataclass
class _PendingForget:
    ids: list[int]
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
        self.tape_index = tape_index or TapeIndex(
            data_dir, store.tape_db if store is not None else None)
        self.lifecycle = lifecycle
        self.journal = journal
        self.sessions = sessions
        self.stop_sandbox = stop_sandbox
        self.switch = switch
        self._pending: PendingQuestions[_PendingForget] = PendingQuestions(CONFIRM_SECONDS,
                                                                           monotonic)
        self.redact = redact  # RedactCommand: offers to remove the words from the conversation
        self.searching = MemorySearch(store, self.tape_index, journal, timezone=timezone,
                                      clock=clock)
        self.chat = ChatCommands(self)

    def register(self, assistant: Any) -> None:
        """Register every command on the core `Assistant`."""
        assistant.register_command("remember", self.cmd_remember, needs_session=False)
        assistant.register_command("forget", self.cmd_forget, needs_session=False)
        assistant.register_command("memory", self.chat.cmd_memory, needs_session=False)
        assistant.register_command("search", self.searching.cmd_search, needs_session=False)
        if self.lifecycle.sync is not None:
            assistant.register_command("memorymd", self.chat.cmd_memorymd, needs_session=False,
                                       description=lambda: msg.MD_COMMAND_DESCRIPTION,
                                       group_admin=answers_md_question)
        assistant.register_command("clear", self.chat.cmd_clear, needs_session=True,
                                   group_admin=True)
        assistant.register_command("export", self.chat.cmd_export, needs_session=True)
        assistant.register_command("import", self.chat.cmd_import, needs_session=True,
                                   group_admin=True)
        if self.sessions is not None:
            assistant.register_command("reset", self.chat.cmd_reset, needs_session=False,
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
                await self.after_change(chat_id)
                return memory
        memory = (await self.store.save(chat_id, new)).memory
        await self.after_change(chat_id)
        return memory

    async def after_change(self, chat_id: str) -> None:
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
        return Reply(msg.REMEMBERED.format(line=memory_line(memory)), markdown=False)

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
            await self.after_change(chat_id)
        return forgotten

    async def cmd_forget(self, request: CommandRequest) -> Reply:
        chat_id, args = request.chat_id, request.args.strip()
        if not args:
            return Reply(msg.FORGET_USAGE, markdown=False)
        pending = self._pending.get(chat_id)
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
            self._pending.close(chat_id)
            allowed, others = await self._permitted(request,
                                                    await self.store.get_many(chat_id, ids))
            if others and not allowed:
                return Reply(msg.FORGET_NOT_YOURS.format(ids=ids_text(others)), markdown=False)
            forgotten = await self.forget_ids(chat_id, [m.id for m in allowed])
            return await self._forgot_reply(request, forgotten, pending.query, others_left(others))
        if choice in ("no", "cancelar", "cancel", "none"):
            self._pending.close(chat_id)
            return Reply(msg.FORGET_CANCELLED, markdown=False)
        matches, others = await self._permitted(request, await self.find(chat_id, args))
        if others and not matches:
            return Reply(msg.FORGET_NOT_YOURS.format(ids=ids_text(others)), markdown=False)
        if not matches:
            return await self._forget_earlier(request, args)
        if len(matches) == 1:
            forgotten = await self.forget_ids(chat_id, [matches[0].id])
            also = await self._also_earlier(request, args, forgotten)
            return await self._forgot_reply(request, forgotten, args,
                                            others_left(others) + also)
        self._pending.ask(chat_id, _PendingForget([m.id for m in matches], args))
        lines = [msg.FORGET_MATCHES.format(count=len(matches)) + others_left(others)]
        lines += [f"{n}. {memory_line(m)}" for n, m in enumerate(matches, start=1)]
        lines += ["", msg.FORGET_WHICH]
        # Buttons name the memory by id, not by position, so a stale keyboard can never
        # forget a different memory than the one it shows.
        buttons = [[(clip(f"{n}. {memory_line(m)}", BUTTON_CHARS), f"/forget #{m.id}")]
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
        text = _forgot_text(forgotten) + left
        if not forgotten or self.redact is None:
            return Reply(text, markdown=False)
        if request.in_group and not await request.is_admin():
            return Reply(text, markdown=False)
        texts = [m.content for m in forgotten]
        q = (query or "").strip()
        if q and not re.fullmatch(r"#?\d+", q) and not any(
                m.key and m.key.casefold() == "_".join(q.casefold().split()) for m in forgotten):
            texts.append(q)
        offer = await self.redact.offer(chat_id, texts, _forgot_what(forgotten))
        if offer is None:
            return Reply(text, markdown=False)
        question, buttons = offer
        return Reply(f"{text}\n\n{question}", markdown=False, buttons=buttons)

    async def _earlier(self, request: CommandRequest, query: str
                       ) -> tuple[EarlierHits, int, list[Memory]]:
        """Erase the earlier versions holding `query` that the speaker may forget; returns
        them, how many versions went, and the ones left because they are someone else's."""
        hits = await find_earlier(self.store, request.chat_id, query)
        hits.rows, others = await self._permitted(request, hits.rows)
        hits.edited, more = await self._permitted(request, hits.edited)
        gone = await erase_earlier(self.store, request.chat_id, query, hits) if hits else 0
        if hits:
            await self.after_change(request.chat_id)
        return hits, gone, others + more

    async def _also_earlier(self, request: CommandRequest, query: str,
                            forgotten: Forgotten) -> str:
        """After forgetting by words: other memories' earlier versions saying them go too
        (not for an id or a key, which name a memory rather than words)."""
        q = query.strip()
        if re.fullmatch(r"#?\d+", q) or any(
                m.key and m.key.casefold() == "_".join(q.casefold().split()) for m in forgotten):
            return ""
        hits, gone, _ = await self._earlier(request, q)
        return msg.FORGOT_EARLIER_ALSO.format(count=msg.count_of(gone, "EARLIER_SAYING"),
                                              ids=named(hits)) if hits else ""

    async def _forget_earlier(self, request: CommandRequest, query: str) -> Reply:
        """No current memory says it: its earlier versions may (`forget_earlier`)."""
        chat_id = request.chat_id
        hits, gone, others = await self._earlier(request, query)
        if not hits:
            return Reply(msg.FORGET_NOT_YOURS.format(ids=ids_text(others)) if others
                         else msg.FORGET_NO_MATCH.format(query=query), markdown=False)
        text = msg.FORGOT_EARLIER.format(count=msg.count_of(gone, "EARLIER_SAYING"),
                                         ids=named(hits))
        if self.redact is None or (request.in_group and not await request.is_admin()):
            return Reply(text, markdown=False)
        offer = await self.redact.offer(chat_id, [query], msg.FORGOT_EARLIER_WHAT.format(
            count=msg.count_of(gone, "EARLIER_VERSIONS"), ids=named(hits)))
        if offer is None:
            return Reply(text, markdown=False)
        return Reply(f"{text}\n\n{offer[0]}", markdown=False, buttons=offer[1])

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


    # --- switch, search, tools -------------------------------------------------------------

    async def enabled(self, chat_id: str) -> bool:
        return self.switch is None or await self.switch.enabled(chat_id)

    async def switch_status(self, chat_id: str, session: Any) -> str | None:
        """A /status line when this chat's long-term memory is off."""
        return None if await self.enabled(chat_id) else msg.MEMORY_STATE_OFF

    async def search(self, chat_id: str, query: str, limit: int = 8,
                     spans: list[relative_time.Span] | None = None) -> list[str]:
        """`MemorySearch.search`: dated hits from memories, conversations and daily logs."""
        return await self.searching.search(chat_id, query, limit, spans)

    def tools(self) -> list[Tool]:
        return MemoryTools(self).tools()


def _forgot_text(forgotten: Forgotten) -> str:
    """What was erased, by id only: repeating the text would write it again (chat, tape)."""
    if not forgotten:
        return msg.FORGET_NOT_ACTIVE
    return msg.FORGOT_REPLY.format(what=_forgot_what(forgotten))


def _forgot_what(forgotten: Forgotten) -> str:
    ids = ", ".join(f"#{m.id}" for m in forgotten)
    what = (msg.FORGOT_ONE if len(forgotten) == 1 else msg.FORGOT_MANY).format(
        ids=ids, count=len(forgotten))
    if forgotten.history:
        what += (msg.FORGOT_HISTORY_ONE if forgotten.history == 1
                 else msg.FORGOT_HISTORY).format(count=forgotten.history)
    return what

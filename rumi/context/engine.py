"""ContextEngine: assembles every prompt from the eight SMMA sections and keeps it in budget.

The core calls, per message: `open` → `add_message(user)` → loop { `build` → LLM →
`record_usage` → `add_message(assistant)` → tools → `add_message(tool)` } → `after_turn`.
Everything that enters sections 7–8 gets a persistent id and is on the tape before the
call returns, so nothing the agent later prunes or summarises is lost.

The prompt's layout and parts are in `prompt.py`; the dashboard's figures in `pressure.py`;
a chat's runtime state in `runtime.py`; compaction, disk files, `/status` and the system
calls in their own modules, which see the engine through `host.py`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from rumi import messages as msg
from rumi.base.chats import Speaker
from rumi.base.tools import Tool
from rumi.config import Settings
from rumi.context import dashboard as dash
from rumi.context import pressure as figures
from rumi.context.builder import render_item, tool_name_for
from rumi.context.compaction import CompactionResult, Summarizer, compact
from rumi.context.prompt import (
    AUTO_ROLE,
    SEP,
    SYSTEM_MESSAGES,
    SYSTEM_OVERHEAD,
    BlockTokens,
    RecallProvider,
    auto_blocks,
    lead_blocks,
    newest_person_index,
    recall_into,
)
from rumi.context.resume import TOOL_START, RecordedTurn, recorded_turn
from rumi.context.runtime import ChatRuntime
from rumi.context.sections import DISK_SECTIONS, SectionFiles
from rumi.context.status import render_status
from rumi.context.syscalls import build_tools
from rumi.context.tape import Tape, event, tape_record
from rumi.context.tokens import REPLY_PRIMING, TokenCounter
from rumi.llm.client import LLMClient
from rumi.paths import ChatPaths
from rumi.sessions.state import ContextItem, SessionState

log = logging.getLogger(__name__)

TEMPLATES_DIR = "smma_defaults"

CompactionHook = Callable[[SessionState, list[ContextItem]], Awaitable[None]]


class ContextEngine:
    """The SMMA context: sections, dashboard, ids, tape, system calls and the safety net."""

    def __init__(self, settings: Settings, tokens: TokenCounter, llm: LLMClient | None,
                 recall: RecallProvider | None = None) -> None:
        self.settings = settings
        self.cfg = settings.context
        self.tokens = tokens
        self.llm = llm
        self.recall = recall
        self.model = settings.llm.model
        self.before_compaction: list[CompactionHook] = []
        self.summarizer = Summarizer(llm, tokens, settings.llm.context_window)
        self._chats: dict[str, ChatRuntime] = {}
        self._blocks = BlockTokens(tokens)

    @property
    def safe_limit(self) -> int:
        """The largest prompt a request may carry (see `pressure.safe_limit`)."""
        return figures.safe_limit(self.settings.llm.context_window, self.llm)

    def binding_cap(self) -> int | None:
        """The account's tokens-per-minute cap when it, not the model's window, sets the safe
        limit (for `/status`); None while Groq has not told it, or when it is larger."""
        return figures.binding_cap(self.settings.llm.context_window, self.llm)

    # --- lifecycle -----------------------------------------------------------------------

    def runtime(self, session: SessionState) -> ChatRuntime:
        rt = self._chats.get(session.chat_id)
        if rt is None:
            paths = ChatPaths(self.settings.data_dir, session.chat_id)
            files = SectionFiles(paths.smma, self.cfg.section_budgets, self.tokens,
                                 templates=paths.data_dir / TEMPLATES_DIR)
            rt = ChatRuntime(paths, Tape(paths.tape), files)
            self._chats[session.chat_id] = rt
        return rt

    async def open(self, session: SessionState) -> None:
        """Idempotent: create `.smma/` from the packaged defaults, load sections 3–6, and make
        sure new ids continue after the highest id already on this chat's tape."""
        rt = self.runtime(session)
        if not rt.opened:
            await rt.files.ensure_defaults(msg.current_language())
            rt.opened = True
        if rt.max_id == 0:
            # Until this chat has an id, look again: `/import` into a fresh chat writes the
            # archived tape after the chat was opened, and its ids must not be reused.
            rt.max_id = await rt.tape.max_id()
        # A new SessionState for the same chat (after expiry or /reset) must not reuse ids.
        session.next_id = max(session.next_id, rt.max_id + 1)
        cal = session.metadata.get("context", {}).get("calibration", {}).get(self.model)
        self.tokens.seed_calibration(self.model, cal)
        await rt.files.refresh()

    def forget_chat(self, chat_id: str) -> None:
        """Drop cached per-chat state (call when a session ends)."""
        self._chats.pop(chat_id, None)

    async def note_redaction(self, session: SessionState, ids: list[int], token: str) -> None:
        """Record on the tape that a redaction of `ids` happens now (never what it removes);
        written before the tape is rewritten, so the record survives a crash midway."""
        await self.runtime(session).tape.append(event("redaction", ids=ids, redaction=token))

    def prepare_recall(self, chat_id: str, query: str) -> None:
        """A message arrived: let the recall provider start on it (the query's embedding)
        while the turn is set up, so the prompt's recall finds it done."""
        prefetch = getattr(self.recall, "prefetch", None)
        if prefetch is None or not query.strip():
            return
        try:
            prefetch(chat_id, query)
        except Exception:
            log.exception("recall prefetch failed for chat %s", chat_id)

    # --- messages ------------------------------------------------------------------------

    async def add_message(self, session: SessionState, role: str, content: str | None, *,
                          tool_calls: list[dict[str, Any]] | None = None,
                          tool_call_id: str | None = None, name: str | None = None,
                          channel_message_id: int | None = None,
                          is_error: bool = False,
                          speaker: Speaker | None = None) -> ContextItem:
        """Allocate the next id, append to the tape (durably), then to the session.

        `speaker`: the group member who wrote a user message, kept on the item and the tape
        so the label survives restarts, compaction and `recall_original`."""
        rt = self.runtime(session)
        if not rt.opened or rt.max_id == 0 or session.next_id <= rt.max_id:
            await self.open(session)
        if role == "tool" and not name:
            name = tool_name_for(session.items, tool_call_id)
        item = ContextItem(
            id=session.allocate_id(), role=role,  # type: ignore[arg-type]
            content=content or "", tool_calls=tool_calls or None, tool_call_id=tool_call_id,
            name=name, channel_message_id=channel_message_id, is_error=is_error,
            speaker_id=speaker.user_id if speaker else None,
            speaker_name=speaker.name if speaker else None,
        )
        self.tokens.item_tokens(item, render_item(item))
        await rt.tape.append(tape_record(item))
        rt.max_id = max(rt.max_id, item.id)
        session.items.append(item)
        session.touch()
        rt.track_progress(item)
        return item

    async def note_tool_start(self, session: SessionState, call_id: str, name: str) -> None:
        """On the tape before a tool call runs: after a crash, a call with this mark and no
        result may have run, and is never run again blindly."""
        await self.runtime(session).tape.append(event(TOOL_START, call_id=call_id, tool=name))

    async def resume_turn(self, session: SessionState,
                          channel_message_id: int) -> RecordedTurn | None:
        """The recorded turn of a message handed back after a crash, its steps put back in
        the session (those session.json did not keep); None if the tape never got it."""
        await self.open(session)
        turn = recorded_turn(await self.runtime(session).tape.records(), channel_message_id)
        if turn is None:
            return None
        held = {item.id for item in session.items}
        for item in (turn.user, *turn.steps):
            if item.id not in held:
                self.tokens.item_tokens(item, render_item(item))
                session.items.append(item)
                self.runtime(session).track_progress(item)
        session.touch()
        return turn

    async def link_channel_message(self, session: SessionState, item_id: int,
                                   channel_message_id: int) -> bool:
        """Remember which Telegram message shows an item (so `/pin` as a reply finds it)."""
        item = self.item(session, item_id)
        if item is None:
            return False
        item.channel_message_id = channel_message_id
        return True

    def item(self, session: SessionState, item_id: int) -> ContextItem | None:
        return next((i for i in session.items if i.id == item_id), None)

    async def original(self, session: SessionState, message_id: int) -> dict[str, Any] | None:
        """The tape record of `message_id` exactly as first written (None if never there)."""
        return await self.runtime(session).tape.get(message_id)

    async def imported_original(self, session: SessionState, tag: str,
                                message_id: int) -> dict[str, Any] | None:
        """The record of `message_id` on the tape an `/import` kept beside this chat's own,
        named by `tag` (None if there is no such tape or message)."""
        rt = self.runtime(session)
        tape = rt.imported.get(tag)
        if tape is None:
            path = rt.paths.imported_tape(tag)
            if path is None or not await asyncio.to_thread(path.is_file):
                return None
            tape = rt.imported.setdefault(tag, Tape(path))
        return await tape.get(message_id)

    def find_item_by_channel_message(self, session: SessionState,
                                     channel_message_id: int) -> ContextItem | None:
        return next(
            (i for i in session.items if i.channel_message_id == channel_message_id), None
        )

    # --- the prompt ----------------------------------------------------------------------

    async def build(self, session: SessionState, *, query: str | None = None,
                    tools: list[dict[str, Any]] | None = None,
                    notes: Sequence[str] = ()) -> list[dict[str, Any]]:
        """API-ready messages: the stable system message (sections 1 and 3–6), sections 7–8
        labelled `[#id]`, and the automatic message (the memories recalled for `query`,
        `notes`, the dashboard) right before the person's newest message, so the person's
        words are the last user message and a turn's requests extend one another.

        Pass `tools` (the specs sent with the request) so their tokens are counted too, and
        `notes` (automatic feedback for the model, e.g. why its tool call could not be read)
        on every later call of the same turn, so the automatic message stays identical.
        """
        rt = self.runtime(session)
        await self.open(session)
        if query is not None and query != rt.recall_query:
            await recall_into(rt, self.recall, session.chat_id, query,
                              self.cfg.section_budgets.get("recalled_memories", 1_500),
                              self.tokens)
        if tools is not None:
            key = tuple(t.get("function", {}).get("name", "") for t in tools)
            if key != rt.tools_key:
                rt.tools_key, rt.tools_tokens = key, self.tokens.count_tools(tools)
        messages, sources = self._render(session, rt)
        log_tokens, work_tokens = self._blocks.messages(sources, messages)
        lead = [text for _, text in lead_blocks(rt)]
        auto = auto_blocks(rt, notes)
        fixed = self._blocks.joined(lead) + sum(self._blocks.block(b + SEP) for b in auto)
        before_dash = (REPLY_PRIMING + SYSTEM_MESSAGES * SYSTEM_OVERHEAD + fixed
                       + log_tokens + work_tokens + rt.tools_tokens)
        rt.section_tokens = {s.name: rt.files.sections[s.name].tokens for s in DISK_SECTIONS}
        rt.section_tokens.update(action_log=log_tokens, workspace=work_tokens,
                                 recalled_memories=rt.recall_tokens)
        anchor = newest_person_index(session.items)
        turn = session.items[anchor].id if anchor is not None else 0
        block, dash_tokens = figures.turn_dashboard(self, session, rt, turn, before_dash)
        rt.last_dash_tokens = dash_tokens
        rt.section_tokens["dashboard"] = dash_tokens
        rt.system_tokens = SYSTEM_MESSAGES * SYSTEM_OVERHEAD + fixed + dash_tokens
        rt.last_local = before_dash + dash_tokens
        # With no message of the person left (pruned, or an empty chat) the block opens the
        # conversation: never after tool results, where the model would meet a user turn.
        at = anchor if anchor is not None else 0
        return [
            {"role": "system", "content": SEP.join(lead)},
            *messages[:at],
            {"role": AUTO_ROLE, "content": SEP.join([*auto, block])},
            *messages[at:],
        ]

    def _render(self, session: SessionState,
                rt: ChatRuntime) -> tuple[list[dict[str, Any]], list[ContextItem]]:
        return rt.renderer.render(session.items), session.items

    def lead_blocks(self, rt: ChatRuntime) -> list[tuple[str, str]]:
        """(name, text) of the leading system message's blocks (see `prompt.lead_blocks`)."""
        return lead_blocks(rt)

    # --- dashboard and status ------------------------------------------------------------

    def dashboard_data(self, session: SessionState, rt: ChatRuntime, used: int, *,
                       conversation: int | None = None) -> dash.DashboardData:
        """The dashboard's numbers for a prompt of `used` tokens whose sections 7–8 take
        `conversation` (default: as the last build counted them)."""
        return figures.dashboard_data(self, session, rt, used, conversation=conversation)

    def measure(self, session: SessionState) -> int:
        """Calibrated tokens the next prompt would use (system part as of the last build)."""
        return self.measure_parts(session)[0]

    def measure_parts(self, session: SessionState) -> tuple[int, int]:
        """(whole prompt, conversation) in calibrated tokens; the conversation is sections
        7–8 (action log, workspace, recalled memories), everything else is the fixed part."""
        rt = self.runtime(session)
        messages, sources = self._render(session, rt)
        log_tokens, work_tokens = self._blocks.messages(sources, messages)
        system = rt.system_tokens
        if not system:  # never built: estimate the dashboard
            system = (SYSTEM_MESSAGES * SYSTEM_OVERHEAD + 250
                      + self._blocks.joined([text for _, text in lead_blocks(rt)])
                      + sum(self._blocks.block(b + SEP) for b in auto_blocks(rt)))
        local = REPLY_PRIMING + system + log_tokens + work_tokens + rt.tools_tokens
        conversation = log_tokens + work_tokens + rt.recall_tokens
        return (self.tokens.calibrated(self.model, local),
                self.tokens.calibrated(self.model, conversation))

    def pressure(self, session: SessionState) -> float:
        """P_m of the next prompt: its conversation against the room the fixed part leaves
        under the safe limit (see rumi/context/dashboard.py)."""
        used, conversation = self.measure_parts(session)
        return dash.pressure(conversation,
                             dash.conversation_room(self.safe_limit, used - conversation))

    def status_text(self, session: SessionState) -> str:
        """The live dashboard plus every section's size, for `/status` (call `open` first)."""
        return render_status(self, session)

    # --- calibration ---------------------------------------------------------------------

    def record_usage(self, session: SessionState, prompt_tokens: int,
                     model: str | None = None) -> None:
        """Compare the provider's prompt tokens with our count of the last build."""
        rt = self.runtime(session)
        model = model or self.model
        rt.last_reported = prompt_tokens
        if rt.last_local <= 0 or prompt_tokens <= 0:
            return
        cal = self.tokens.observe(model, rt.last_local, prompt_tokens)
        store = session.metadata.setdefault("context", {}).setdefault("calibration", {})
        store[model] = cal.to_dict()

    # --- pins, clear, runaway ------------------------------------------------------------

    async def pin(self, session: SessionState, item_id: int) -> bool:
        return await self._set_pin(session, item_id, True)

    async def unpin(self, session: SessionState, item_id: int) -> bool:
        return await self._set_pin(session, item_id, False)

    async def _set_pin(self, session: SessionState, item_id: int, pinned: bool) -> bool:
        item = self.item(session, item_id)
        if item is None:
            return False
        item.pinned = pinned
        await self.runtime(session).tape.append(event("pin" if pinned else "unpin", ids=[item_id]))
        return True

    async def clear(self, session: SessionState) -> list[ContextItem]:
        """Empty sections 7–8 (a human reset); everything stays on the tape."""
        rt = self.runtime(session)
        removed = list(session.items)
        session.items.clear()
        rt.syscalls, rt.runaway = 0, False
        rt.notices.clear()
        rt.recall_query, rt.recall_text, rt.recall_tokens = None, "", 0
        await rt.tape.append(event("clear", ids=[i.id for i in removed]))
        return removed

    def runaway(self, session: SessionState) -> bool:
        """True once the memory-syscall loop guard tripped (until the next user message)."""
        return self.runtime(session).runaway

    # --- system calls and the safety net -------------------------------------------------

    def tools(self) -> list[Tool]:
        return build_tools(self)

    async def after_turn(self, session: SessionState) -> CompactionResult | None:
        """Compact automatically when pressure crossed the hard limit; None when not needed.

        A compaction notice stays on the dashboard (so the agent learns what happened) until
        the end of a turn that needed no compaction; it is cleared here, not mid-turn."""
        result = await self.ensure_room(session)
        if result is None:
            self.runtime(session).notices.pop("compaction", None)
        return result

    async def ensure_room(self, session: SessionState, *,
                          force: bool = False) -> CompactionResult | None:
        """Compact now if the next prompt would be at or over the hard limit (or `force`,
        after the provider said the prompt was too long: our count was off).

        The agent loop calls this before every LLM call of a turn, not only after it: one
        turn can add a dozen large tool results, and waiting for `after_turn` would send an
        over-long prompt (HTTP 400) instead of compacting. None when nothing was needed.
        After a `before_compaction` hook failed, the rest of the turn does not try again
        (each try would repeat the memory flush and its LLM call); the next user message does.
        """
        if not force and (self.runtime(session).compaction_blocked
                          or self.pressure(session) < self.cfg.hard_limit):
            return None
        return await self.compact(session)

    async def note_reply(self, session: SessionState, text: str, reason: str) -> None:
        """Put on the tape a reply the user saw that is not a context item (model down,
        `/stop`), so the tape matches the conversation as the person saw it."""
        await self.runtime(session).tape.append(event("system_reply", reason=reason,
                                                      content=text))

    async def compact(self, session: SessionState) -> CompactionResult:
        """Progressive compaction now (hooks first); see `compaction.compact`."""
        return await compact(self, session)

"""ContextEngine: assembles every prompt from the eight SMMA sections and keeps it in budget.

The core calls, per message: `open` → `add_message(user)` → loop { `build` → LLM →
`record_usage` → `add_message(assistant)` → tools → `add_message(tool)` } → `after_turn`.
Everything that enters sections 7–8 gets a persistent id and is on the tape before the
call returns, so nothing the agent later prunes or summarises is lost.

Prompt layout. The provider caches the longest prefix a request shares with earlier ones
(system message, then tool definitions, then messages), and a chat model answers the LATEST
user-role message (gpt-oss's published chat template renders each as a new user turn). So:
a leading system message with what rarely changes (identity, sections 3–6, the header of the
message list); the conversation; and, as its own message right BEFORE the person's newest
message, the automatic block (recalled memories, this turn's automatic notes, the dashboard).
The person's words are therefore the last user message of every request, and during tool
steps the request ends with the tool results, as harmony expects (call → result → the model
continues). A separate message, not a block glued to the person's, keeps the person's item
exactly as stored (and as the model sees it in later turns), and lets the block be dropped
from history without touching the item.

The automatic message is byte-identical for every call of one turn: the dashboard is frozen
at the turn's first build and drawn again only when something the model must act on changes
(the pressure level, an alert, a warning, a failing tool, a pin, a section problem); live
figures stay in `/status`. A turn's tool steps thus extend the cached prefix. Earlier turns'
automatic blocks are not kept, so each new turn loses from the cache only the previous
exchange (the person's last message onward). It has the user role and says it is automatic:
gpt-oss's template silently drops any system message after the first, and a dashboard the
model never sees would break SMMA without a trace. Nothing before it may carry a counter, a
timestamp or per-turn text.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from rumi import messages as msg
from rumi.base.chats import Speaker
from rumi.base.tools import Tool
from rumi.config import Settings
from rumi.context import dashboard as dash
from rumi.context import model_text
from rumi.context.builder import IncrementalRenderer, render_item, tool_name_for
from rumi.context.compaction import CompactionResult, Summarizer, compact, plan_middle
from rumi.context.resume import TOOL_START, RecordedTurn, recorded_turn
from rumi.context.sections import DISK_SECTIONS, SectionFiles
from rumi.context.status import render_status
from rumi.context.syscalls import build_tools
from rumi.context.tape import Tape, event, tape_record
from rumi.context.tokens import REPLY_PRIMING, TokenCounter
from rumi.llm.client import LLMClient
from rumi.paths import ChatPaths
from rumi.sessions.state import ContextItem, SessionState

log = logging.getLogger(__name__)

SYSCALL_NAMES = frozenset({
    "prune_messages", "summarize_range", "recall_original",
    "save_to_disk", "load_from_disk", "edit_section",
})
FAILING_TOOL_THRESHOLD = 3
SYSTEM_OVERHEAD = 4
MIN_WINDOW = 2_048  # below this no conversation fits; the request is refused instead
SEP = "\n\n"
TEMPLATES_DIR = "smma_defaults"
WORKSPACE_KINDS = ("loaded_file", "recalled")
# sections 7–8 as `section_tokens` names them: what P_m measures (the rest is the fixed part)
CONVERSATION_SECTIONS = ("action_log", "workspace", "recalled_memories")
SYSTEM_MESSAGES = 2  # the leading (stable) and the automatic (per-turn) message
# gpt-oss's chat template reads only the FIRST system message and drops later ones, so the
# per-turn part travels as a user-role message that says plainly it is not the person's.
AUTO_ROLE = "user"
AUTO_MARKER = model_text.SPANISH.auto_marker   # each language's: model_text.<LANG>.auto_marker
AUTO_MARKERS = (model_text.SPANISH.auto_marker, model_text.ENGLISH.auto_marker)


def newest_person_index(items: list[ContextItem]) -> int | None:
    """Index of the person's newest message: the last user-role item (only the people in the
    chat write user items; summaries, tool results and loaded files have other roles)."""
    for index in range(len(items) - 1, -1, -1):
        if items[index].role == "user":
            return index
    return None


class RecallProvider(Protocol):
    async def recall_block(self, chat_id: str, query: str, budget_tokens: int) -> str: ...


CompactionHook = Callable[[SessionState, list[ContextItem]], Awaitable[None]]


@dataclass(frozen=True)
class TurnDashboard:
    """The dashboard as drawn for one turn (keyed by the id of the person's message it
    precedes) and what, if it changed, would make it worth drawing again."""

    turn: int
    key: tuple[Any, ...]
    block: str
    tokens: int


@dataclass
class ChatRuntime:
    """Per-chat state that is not part of the session JSON (caches, counters, notices)."""

    paths: ChatPaths
    tape: Tape
    files: SectionFiles
    opened: bool = False
    max_id: int = 0
    system_tokens: int = 0
    tools_tokens: int = 0
    tools_key: tuple[str, ...] = ()
    last_local: int = 0
    last_reported: int | None = None
    last_dash_tokens: int = 0
    turn_dashboard: TurnDashboard | None = None
    recall_query: str | None = None
    recall_text: str = ""
    recall_tokens: int = 0
    syscalls: int = 0
    runaway: bool = False
    compaction_blocked: bool = False
    notices: dict[str, str] = field(default_factory=dict)
    section_tokens: dict[str, int] = field(default_factory=dict)
    renderer: IncrementalRenderer = field(default_factory=IncrementalRenderer)
    imported: dict[str, Tape] = field(default_factory=dict)   # tag -> a tape /import kept


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
        self._block_cache: dict[str, int] = {}

    @property
    def safe_limit(self) -> int:
        """The largest prompt a request may carry (100 % on the dashboard's prompt line).

        On the model's window: 80 % of it, the seed's margin for the answer and for counting
        error. Once Groq has told the account's tokens-per-minute cap, the cap less the
        answer's budget when that is smaller (a free account's 8,000 tokens a minute count
        the prompt and `max_tokens` together, so the prompt must stay under it, not under
        131k). That figure already has the answer taken out exactly and the limiter's own
        margin for counting error, so it gets no second 20 %: on a free account the 20 % would
        be ~1,300 tokens, a third of what the conversation has."""
        safe = dash.safe_limit(self.settings.llm.context_window)
        room = self.llm.prompt_room() if self.llm is not None else None
        if room is not None:
            safe = min(safe, max(dash.safe_limit(MIN_WINDOW), room))
        return safe

    def binding_cap(self) -> int | None:
        """The account's tokens-per-minute cap when it, not the model's window, sets the safe
        limit (for `/status`); None while Groq has not told it, or when it is larger."""
        if self.llm is None:
            return None
        tpm, room = self.llm.tokens_per_minute(), self.llm.prompt_room()
        if tpm is None or room is None:
            return None
        return tpm if room < dash.safe_limit(self.settings.llm.context_window) else None

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
        self._track_progress(rt, item)
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
                self._track_progress(self.runtime(session), item)
        session.touch()
        return turn

    def _track_progress(self, rt: ChatRuntime, item: ContextItem) -> None:
        """Anything but a memory system call counts as progress for the runaway guard."""
        if item.role == "user":
            rt.runaway = False
            rt.compaction_blocked = False  # a new turn may try the failed save once more
            rt.recall_query = None  # recall once per turn, fresh (memories may have changed)
        progress = (
            item.role == "user"
            or (item.role == "tool" and item.name not in SYSCALL_NAMES)
            or (item.role == "assistant" and not item.tool_calls)
        )
        if progress:
            rt.syscalls = 0

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
            await self._recall(session, rt, query)
        if tools is not None:
            key = tuple(t.get("function", {}).get("name", "") for t in tools)
            if key != rt.tools_key:
                rt.tools_key, rt.tools_tokens = key, self.tokens.count_tools(tools)
        messages, sources = self._render(session, rt)
        log_tokens, work_tokens = self._message_tokens(sources, messages)
        lead = [text for _, text in self.lead_blocks(rt)]
        auto = self._auto_blocks(rt, notes)
        fixed = self._joined_tokens(lead) + sum(self._block_tokens(b + SEP) for b in auto)
        before_dash = (REPLY_PRIMING + SYSTEM_MESSAGES * SYSTEM_OVERHEAD + fixed
                       + log_tokens + work_tokens + rt.tools_tokens)
        rt.section_tokens = {s.name: rt.files.sections[s.name].tokens for s in DISK_SECTIONS}
        rt.section_tokens.update(action_log=log_tokens, workspace=work_tokens,
                                 recalled_memories=rt.recall_tokens)
        anchor = newest_person_index(session.items)
        turn = session.items[anchor].id if anchor is not None else 0
        block, dash_tokens = self._turn_dashboard(session, rt, turn, before_dash)
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

    def _turn_dashboard(self, session: SessionState, rt: ChatRuntime, turn: int,
                        before_dash: int) -> tuple[str, int]:
        """The dashboard block and its tokens: this turn's frozen one while nothing the model
        must act on changed (its counters would otherwise break the provider's cache at
        every tool step), else drawn again with the current figures."""
        frozen = rt.turn_dashboard if rt.turn_dashboard and rt.turn_dashboard.turn == turn \
            else None
        dash_tokens = frozen.tokens if frozen else (rt.last_dash_tokens or 200)
        data = self.dashboard_data(
            session, rt, self.tokens.calibrated(self.model, before_dash + dash_tokens))
        if frozen is not None and frozen.key == dash.actionable(data, self.cfg):
            return frozen.block, frozen.tokens
        for _ in range(4):  # the dashboard counts itself: iterate to the fixed point
            data.used = self.tokens.calibrated(self.model, before_dash + dash_tokens)
            block, counted = self._dashboard_block(data)
            if counted == dash_tokens:
                break
            dash_tokens = counted
        rt.turn_dashboard = TurnDashboard(turn, dash.actionable(data, self.cfg), block,
                                          dash_tokens)
        return block, dash_tokens

    def _render(self, session: SessionState,
                rt: ChatRuntime) -> tuple[list[dict[str, Any]], list[ContextItem]]:
        return rt.renderer.render(session.items), session.items

    def _message_tokens(self, sources: list[ContextItem],
                        messages: list[dict[str, Any]]) -> tuple[int, int]:
        log_tokens = work_tokens = 0
        for item, message in zip(sources, messages, strict=True):
            n = item.token_count
            if n is None:
                n = self.tokens.item_tokens(item, message)
            if item.role == "tool" or item.kind in WORKSPACE_KINDS:
                work_tokens += n
            else:
                log_tokens += n
        return log_tokens, work_tokens

    def _block_tokens(self, block: str) -> int:
        """The system message is blocks joined by a blank line. Counted with its following
        separator (BPE may merge "\n\n" into a preceding "."), each block starts a fresh
        pre-token, so the message's tokens are exactly the sum (cached: blocks rarely change)."""
        cached = self._block_cache.get(block)
        if cached is None:
            if len(self._block_cache) > 512:
                self._block_cache.clear()
            cached = self._block_cache[block] = self.tokens.count(block)
        return cached

    def _joined_tokens(self, blocks: list[str]) -> int:
        """Tokens of `SEP.join(blocks)` (see `_block_tokens`)."""
        if not blocks:
            return 0
        return (sum(self._block_tokens(b + SEP) for b in blocks[:-1])
                + self._block_tokens(blocks[-1]))

    def lead_blocks(self, rt: ChatRuntime) -> list[tuple[str, str]]:
        """(name, text) of the leading system message's blocks: identity, sections 3–6 and
        the header of the message list. Only human or `edit_section` edits change them, so
        the request prefix stays byte-identical from call to call and turn to turn."""
        files = rt.files.sections
        t = model_text.for_language()   # the chat's language: stable within the chat
        # the reply language follows agent.language (with "auto", this chat's person)
        blocks = [("identity", t.identity_header + files["identity"].text.strip() + "\n\n"
                   + msg.MODEL_REPLY_LANGUAGE)]
        for spec in DISK_SECTIONS:
            if spec.number == 1:
                continue
            section = files[spec.name]
            body = (section.text.strip() if section.loaded
                    else t.not_loaded.format(why=section.error or t.file_missing))
            title = t.section_titles[spec.name]
            blocks.append((spec.name, f"=== [{spec.number}] {title} ({spec.name}) ===\n\n"
                                      f"{body or t.empty}"))
        blocks.append(("messages_header", t.messages_header))
        return blocks

    def _auto_blocks(self, rt: ChatRuntime, notes: Sequence[str] = ()) -> list[str]:
        """The automatic message's blocks before the dashboard (which goes last)."""
        t = model_text.for_language()
        recalled = [t.recall_header + rt.recall_text] if rt.recall_text else []
        noted = [t.notes_header + "\n".join(f"- {n}" for n in notes)] if notes else []
        return [t.auto_marker, *recalled, *noted]

    async def _recall(self, session: SessionState, rt: ChatRuntime, query: str) -> None:
        rt.recall_query = query
        rt.recall_text, rt.recall_tokens = "", 0
        if self.recall is None or not query.strip():
            return
        budget = self.cfg.section_budgets.get("recalled_memories", 1_500)
        try:
            block = await self.recall.recall_block(session.chat_id, query, budget)
        except Exception:
            log.exception("recall failed for chat %s", session.chat_id)
            rt.notices["recall"] = model_text.for_language().recall_failed
            return
        rt.notices.pop("recall", None)
        block = (block or "").strip()
        if self.tokens.count(block) > budget:
            block = self.tokens.truncate(block, budget)
        rt.recall_text, rt.recall_tokens = block, self.tokens.count(block)

    # --- dashboard and status ------------------------------------------------------------

    def _dashboard_block(self, data: dash.DashboardData) -> tuple[str, int]:
        """Section 2 with its header, and its tokens (it ends its message: no separator follows),
        kept within the dashboard budget by dropping whole lines, least important first
        (section sizes before pins before failing tools before alerts; the five fixed
        lines always stay), so the warning that matters most is the last to go."""
        lines = dash.render_lines(data, self.cfg)
        t = model_text.for_language()
        block = t.dashboard_header + "\n".join(text for _, text in lines)
        tokens = self.tokens.count(block)
        budget = self.cfg.section_budgets.get("dashboard", 300)
        more = t.more_notes
        while tokens > budget:
            droppable = [k for k, (priority, _) in enumerate(lines) if priority < dash.FIXED]
            if not droppable:
                break
            del lines[min(droppable, key=lambda k: (lines[k][0], -k))]
            block = t.dashboard_header + "\n".join([*(text for _, text in lines), more])
            tokens = self.tokens.count(block)
        return block, tokens

    def dashboard_data(self, session: SessionState, rt: ChatRuntime, used: int, *,
                       conversation: int | None = None) -> dash.DashboardData:
        """The dashboard's numbers for a prompt of `used` tokens whose sections 7–8 take
        `conversation` (default: as the last build counted them)."""
        loaded, total = rt.files.loaded_count()
        failing: dict[str, list[int]] = {}
        for item in session.items:
            if item.role == "tool" and item.is_error:
                failing.setdefault(item.name or "desconocida", []).append(item.id)
        failing = {k: v for k, v in failing.items() if len(v) >= FAILING_TOOL_THRESHOLD}
        budgets = self.cfg.section_budgets
        alerts = []
        if rt.runaway:
            alerts.append("Bucle de llamadas de memoria detenido: responde al usuario.")
        if "compaction" in rt.notices:
            alerts.append(rt.notices["compaction"])
        if not rt.tape.health.clean:
            alerts.append("Registro inmutable con líneas dañadas tras un corte (se ignoran; "
                          "el resto es legible).")
        warnings = [text for key, text in rt.notices.items() if key != "compaction"]
        cal = self.tokens.calibration(self.model)
        log_tokens = rt.section_tokens.get("action_log", 0)
        over = []
        if log_tokens > budgets.get("action_log", 20_000):
            over.append(("action_log", log_tokens, budgets.get("action_log", 20_000)))
        if conversation is None:
            conversation = self.tokens.calibrated(self.model, sum(
                rt.section_tokens.get(name, 0) for name in CONVERSATION_SECTIONS))
        p = dash.pressure(conversation, dash.conversation_room(self.safe_limit,
                                                               used - conversation))
        return dash.DashboardData(
            used=used, safe_limit=self.safe_limit, disk_loaded=loaded, disk_total=total,
            section_tokens=dict(rt.section_tokens),
            items=len(session.items),
            first_id=session.items[0].id if session.items else None,
            last_id=session.items[-1].id if session.items else None,
            pinned=[i.id for i in session.items if i.pinned],
            failing_tools=failing,
            truncated_sections=[(s.spec.name, s.raw_tokens, s.limit)
                                for s in rt.files.sections.values() if s.truncated],
            over_budget=over, alerts=alerts, warnings=warnings,
            optimize_hint=self._hint(session) if p >= self.cfg.optimize_threshold else "",
            fallback_tokenizer=self.tokens.is_fallback,
            calibration_factor=cal.factor if cal else 1.0,
            calibration_samples=cal.samples if cal else 0,
            conversation=conversation,
        )

    def _hint(self, session: SessionState) -> str:
        """Concrete ids to act on: the oldest closed range and the biggest outputs."""
        parts = []
        middle = plan_middle(session.items, self.cfg.keep_first, self.cfg.keep_last)
        if middle:
            first, last = session.items[middle[0]].id, session.items[middle[-1]].id
            parts.append(f"summarize_range sobre #{first}–#{last}")
        big = sorted((i for i in session.items if i.role == "tool" and not i.pinned),
                     key=lambda i: i.token_count or 0, reverse=True)[:3]
        if big:
            parts.append("prune_messages de salidas obsoletas, p. ej. "
                         + ", ".join(f"#{i.id} ({i.token_count or 0:,} tok)" for i in big))
        return "; ".join(parts) or "resume o poda lo que ya no necesites"

    def measure(self, session: SessionState) -> int:
        """Calibrated tokens the next prompt would use (system part as of the last build)."""
        return self.measure_parts(session)[0]

    def measure_parts(self, session: SessionState) -> tuple[int, int]:
        """(whole prompt, conversation) in calibrated tokens; the conversation is sections
        7–8 (action log, workspace, recalled memories), everything else is the fixed part."""
        rt = self.runtime(session)
        messages, sources = self._render(session, rt)
        log_tokens, work_tokens = self._message_tokens(sources, messages)
        system = rt.system_tokens
        if not system:  # never built: estimate the dashboard
            system = (SYSTEM_MESSAGES * SYSTEM_OVERHEAD + 250
                      + self._joined_tokens([text for _, text in self.lead_blocks(rt)])
                      + sum(self._block_tokens(b + SEP) for b in self._auto_blocks(rt)))
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

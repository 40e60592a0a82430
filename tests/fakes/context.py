"""A minimal stand-in for `rumi.context.ContextEngine` (same methods), for loop/core unit tests.

It keeps every item in `session.items` and renders them all; the real engine (sections,
budgets, compaction) is exercised by its own tests and by the end-to-end tests.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rumi.sessions.state import ContextItem, SessionState


class SimpleContext:
    def __init__(self) -> None:
        self.tape: list[tuple[str, int, str, str]] = []
        self.usage: list[int] = []
        self.after_turns = 0
        self.opened: set[str] = set()
        self.tools_seen: list[list[str]] = []
        self.notes_seen: list[list[str]] = []  # the automatic notes of every build
        self.events: list[tuple[str, str, str]] = []  # (chat_id, reason, text)
        self.started: list[str] = []  # tool call ids marked as started
        self.prefetched: list[tuple[str, str]] = []  # (chat_id, query) handed to recall early
        self.runaway_after: int | None = None  # report a runaway after this many tool results

    async def open(self, session: SessionState) -> None:
        self.opened.add(session.chat_id)

    def prepare_recall(self, chat_id: str, query: str) -> None:
        self.prefetched.append((chat_id, query))

    async def add_message(self, session: SessionState, role: str, content: str | None, *,
                          tool_calls: list[dict[str, Any]] | None = None,
                          tool_call_id: str | None = None, name: str | None = None,
                          channel_message_id: int | None = None,
                          is_error: bool = False, speaker: Any = None) -> ContextItem:
        item = ContextItem(id=session.allocate_id(), role=role, content=content or "",  # type: ignore[arg-type]
                           tool_calls=tool_calls, tool_call_id=tool_call_id, name=name,
                           channel_message_id=channel_message_id, is_error=is_error,
                           speaker_id=speaker.user_id if speaker else None,
                           speaker_name=speaker.name if speaker else None)
        session.items.append(item)
        self.tape.append((session.chat_id, item.id, role, item.content))
        return item

    async def build(self, session: SessionState, *, query: str | None = None,
                    tools: list[dict[str, Any]] | None = None,
                    notes: Sequence[str] = ()) -> list[dict[str, Any]]:
        self.tools_seen.append([t["function"]["name"] for t in tools or []])
        self.notes_seen.append(list(notes))
        out: list[dict[str, Any]] = [{"role": "system", "content": "You are Rumi."}]
        for item in session.items:
            message: dict[str, Any] = {"role": item.role, "content": item.content}
            if item.tool_calls:
                message["tool_calls"] = item.tool_calls
            if item.tool_call_id:
                message["tool_call_id"] = item.tool_call_id
            out.append(message)
        return out

    def record_usage(self, session: SessionState, prompt_tokens: int) -> None:
        self.usage.append(prompt_tokens)

    async def ensure_room(self, session: SessionState, *, force: bool = False) -> None:
        return None

    def measure(self, session: SessionState) -> int:
        """No token count here: the LLM client estimates the prompt itself (0 = unknown)."""
        return 0

    def runaway(self, session: SessionState) -> bool:
        results = sum(1 for i in session.items if i.role == "tool")
        return self.runaway_after is not None and results >= self.runaway_after

    async def note_tool_start(self, session: SessionState, call_id: str, name: str) -> None:
        self.started.append(call_id)

    async def resume_turn(self, session: SessionState, channel_message_id: int) -> None:
        """Nothing survives a restart here: every message starts its turn afresh (the real
        engine's resume is tested with its tape, tests/context/test_resume.py)."""
        return None

    async def note_reply(self, session: SessionState, text: str, reason: str) -> None:
        self.events.append((session.chat_id, reason, text))

    async def link_channel_message(self, session: SessionState, item_id: int,
                                   channel_message_id: int) -> bool:
        for item in session.items:
            if item.id == item_id:
                item.channel_message_id = channel_message_id
                return True
        return False

    async def after_turn(self, session: SessionState) -> None:
        self.after_turns += 1

    def status_text(self, session: SessionState) -> str:
        return f"items: {len(session.items)}"

    async def pin(self, session: SessionState, item_id: int) -> bool:
        return self._set_pin(session, item_id, True)

    async def unpin(self, session: SessionState, item_id: int) -> bool:
        return self._set_pin(session, item_id, False)

    def _set_pin(self, session: SessionState, item_id: int, pinned: bool) -> bool:
        for item in session.items:
            if item.id == item_id:
                item.pinned = pinned
                return True
        return False

    def find_item_by_channel_message(self, session: SessionState,
                                     channel_message_id: int) -> ContextItem | None:
        return next((i for i in session.items if i.channel_message_id == channel_message_id),
                    None)

    async def clear(self, session: SessionState) -> list[ContextItem]:
        """Like the engine: a human reset empties sections 7–8, pins included."""
        removed = list(session.items)
        session.items = []
        return removed

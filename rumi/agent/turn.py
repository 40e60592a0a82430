"""What one turn carries: the result the core replies with, the state that lives only while a
message is handled, and the part of the context engine the loop uses."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from rumi.base.chats import Speaker
from rumi.context.resume import RecordedTurn
from rumi.sessions.state import ContextItem, SessionState


class Compaction(Protocol):
    compacted: bool


class ContextLike(Protocol):
    """The part of `rumi.context.ContextEngine` the loop uses."""

    async def add_message(self, session: SessionState, role: str, content: str, *,
                          tool_calls: list[dict[str, Any]] | None = None,
                          tool_call_id: str | None = None, name: str | None = None,
                          channel_message_id: int | None = None,
                          is_error: bool = False,
                          speaker: Speaker | None = None) -> ContextItem: ...

    async def build(self, session: SessionState, *, query: str | None = None,
                    tools: list[dict[str, Any]] | None = None,
                    notes: Sequence[str] = ()) -> list[dict[str, Any]]: ...

    def record_usage(self, session: SessionState, prompt_tokens: int) -> None: ...

    async def ensure_room(self, session: SessionState, *,
                          force: bool = False) -> Compaction | None: ...

    def runaway(self, session: SessionState) -> bool: ...

    def measure(self, session: SessionState) -> int: ...

    async def note_reply(self, session: SessionState, text: str, reason: str) -> None: ...

    async def note_tool_start(self, session: SessionState, call_id: str, name: str
                              ) -> None: ...

    async def resume_turn(self, session: SessionState,
                          channel_message_id: int) -> RecordedTurn | None: ...

    async def after_turn(self, session: SessionState) -> object: ...


@dataclass
class TurnResult:
    """What one handled message produced, for the reply and the one log line."""

    text: str
    turns: int = 0
    tools: list[str] = field(default_factory=list)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    # repeated_call | tool_errors | memory_loop | max_turns | llm_unavailable | context_full
    # | rate_limited | auth_failed | model_gone | tool_call_failed | stream_broken | stopped
    stopped_by: str | None = None
    cached_tokens: int = 0
    reasoning_tokens: int = 0
    model: str | None = None
    item_id: int | None = None  # the context item `text` shows (None: not in the context)
    notice: str | None = None  # ours, said before the answer (e.g. the model was replaced)
    shown: str = ""  # the answer's text streamed so far (what a stop keeps)

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


@dataclass
class TurnState:
    """What lives only while one message is handled: the reasoning behind its tool steps,
    keyed by the first call id of the step (replayed to the model, never stored), and the
    automatic notes for the model (sent before the person's message on every later call)."""

    reasoning: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def with_reasoning(messages: list[dict[str, Any]], turn: TurnState) -> list[dict[str, Any]]:
    """This turn's tool steps carry their reasoning back (gpt-oss guidance); older turns'
    reasoning is never sent, nor stored."""
    if not turn.reasoning:
        return messages
    out = []
    for message in messages:
        calls = message.get("tool_calls") or []
        first = calls[0].get("id") if calls else None
        if message.get("role") == "assistant" and first in turn.reasoning:
            message = {**message, "reasoning": turn.reasoning[first]}
        out.append(message)
    return out

"""Think → act → observe: the tool-calling loop, with circuit breakers that end honestly.

Each iteration asks the context engine for the API-ready messages (so compaction and the
dashboard apply mid-task), calls the model with the registry's tools, and records every step
(assistant message with its tool calls, each tool result) through the engine, which appends
it to the immutable tape before returning. The loop stops with a plain Spanish message when
the model repeats the same call, when tools keep failing, after `max_turns`, or when the model
is unavailable — never with a traceback.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Protocol

from rumi import messages as msg
from rumi.agent.llm import LLMClient, LLMUnavailable
from rumi.agent.tools import ToolContext, ToolRegistry
from rumi.config import AgentSettings
from rumi.sessions.state import ContextItem, SessionState

log = logging.getLogger(__name__)


class ContextLike(Protocol):
    """The part of `rumi.context.ContextEngine` the loop uses."""

    async def add_message(self, session: SessionState, role: str, content: str, *,
                          tool_calls: list[dict[str, Any]] | None = None,
                          tool_call_id: str | None = None, name: str | None = None,
                          channel_message_id: int | None = None) -> ContextItem: ...

    async def build(self, session: SessionState, *, query: str | None = None
                    ) -> list[dict[str, Any]]: ...

    def record_usage(self, session: SessionState, prompt_tokens: int) -> None: ...

    async def after_turn(self, session: SessionState) -> None: ...


@dataclass
class TurnResult:
    """What one handled message produced, for the reply and the one log line."""

    text: str
    turns: int = 0
    tools: list[str] = field(default_factory=list)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    stopped_by: str | None = None  # repeated_call | tool_errors | max_turns | llm_unavailable

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


class AgentLoop:
    def __init__(
        self,
        llm: LLMClient,
        context: ContextLike,
        registry: ToolRegistry,
        settings: AgentSettings,
        *,
        tool_extras: dict[str, Any] | None = None,
    ) -> None:
        self.llm = llm
        self.context = context
        self.registry = registry
        self.settings = settings
        self.tool_extras = tool_extras or {}

    async def run(
        self, session: SessionState, user_text: str, *, channel_message_id: int | None = None
    ) -> TurnResult:
        """Handle one user message to the end; the user message itself is recorded first."""
        await self.context.add_message(session, "user", user_text,
                                       channel_message_id=channel_message_id)
        result = TurnResult(text="")
        try:
            await self._iterate(session, user_text, result)
        finally:
            await asyncio.shield(self._after_turn(session))
        return result

    async def _after_turn(self, session: SessionState) -> None:
        try:
            await self.context.after_turn(session)
        except Exception:
            log.exception("after_turn failed for chat %s", session.chat_id)

    async def _iterate(self, session: SessionState, query: str, result: TurnResult) -> None:
        calls_seen: Counter[tuple[str, str]] = Counter()
        consecutive_errors = 0
        ctx = ToolContext(chat_id=session.chat_id, session=session, extras=dict(self.tool_extras))
        for _ in range(self.settings.max_turns):
            result.turns += 1
            messages = await self.context.build(session, query=query)
            try:
                response = await self.llm.complete(messages, tools=self.registry.specs() or None)
            except LLMUnavailable as exc:
                log.warning("model unavailable for chat %s: %s", session.chat_id, exc)
                result.text, result.stopped_by = msg.MODEL_UNAVAILABLE, "llm_unavailable"
                return
            result.prompt_tokens += response.usage.prompt_tokens
            result.completion_tokens += response.usage.completion_tokens
            self.context.record_usage(session, response.usage.prompt_tokens)
            calls = response.tool_calls
            await self.context.add_message(session, "assistant", response.content,
                                           tool_calls=calls or None)
            if not calls:
                result.text = response.content.strip() or msg.EMPTY_REPLY
                return
            pending = list(calls)
            try:
                while pending:
                    call = pending[0]
                    name = call["function"]["name"]
                    arguments = call["function"].get("arguments") or "{}"
                    key = (name, _canonical(arguments))
                    calls_seen[key] += 1
                    if calls_seen[key] >= self.settings.max_repeated_calls:
                        await self._skip(session, pending, "repeated call")
                        pending = []
                        await self._stop(session, result, "repeated_call",
                                         msg.BREAKER_REPEATED.format(tool=name))
                        return
                    result.tools.append(name)
                    outcome = await self.registry.execute(name, arguments, ctx)
                    await self.context.add_message(session, "tool", outcome.content,
                                                   tool_call_id=call["id"], name=name)
                    pending.pop(0)
                    consecutive_errors = consecutive_errors + 1 if outcome.is_error else 0
                    if consecutive_errors >= self.settings.max_consecutive_tool_errors:
                        await self._skip(session, pending, "too many tool errors")
                        pending = []
                        await self._stop(
                            session, result, "tool_errors",
                            msg.BREAKER_TOOL_ERRORS.format(count=consecutive_errors, tool=name),
                        )
                        return
            except asyncio.CancelledError:
                # Keep the transcript valid for the next request: every tool call gets a result.
                await asyncio.shield(self._skip(session, pending, None))
                raise
        await self._stop(session, result, "max_turns",
                         msg.BREAKER_MAX_TURNS.format(turns=self.settings.max_turns))

    async def _skip(self, session: SessionState, pending: list[dict[str, Any]],
                    reason: str | None) -> None:
        text = msg.TOOL_CANCELLED if reason is None else msg.TOOL_SKIPPED.format(reason=reason)
        for call in pending:
            await self.context.add_message(session, "tool", text, tool_call_id=call["id"],
                                           name=call["function"]["name"])

    async def _stop(self, session: SessionState, result: TurnResult, why: str, text: str) -> None:
        log.warning("agent loop for chat %s stopped: %s", session.chat_id, why)
        result.text, result.stopped_by = text, why
        await self.context.add_message(session, "assistant", text)


def _canonical(arguments: str) -> str:
    """Same call = same name and same arguments, whatever the key order or spacing."""
    try:
        return json.dumps(json.loads(arguments), sort_keys=True, ensure_ascii=False)
    except (json.JSONDecodeError, TypeError):
        return arguments.strip()

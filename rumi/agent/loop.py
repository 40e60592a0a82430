"""Think → act → observe: the tool-calling loop, with circuit breakers that end honestly.

Each iteration asks the context engine for the API-ready messages (with the tool definitions,
so they count in the memory pressure), lets it compact first when the prompt would cross the
hard limit (one turn can pile up many large tool results, so waiting for the end of the turn
is too late), calls the model with the registry's tools, and records every step (assistant
message with its tool calls, each tool result with its error flag) through the engine, which
appends it to the immutable tape before returning. If the provider still says the prompt is
too long, the loop compacts once more and retries. It stops with a plain Spanish message when
the model repeats the same call, when tools keep failing, when the agent loops on memory calls,
after `max_turns`, or when the model is unavailable — never with a traceback.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Protocol

from rumi import messages as msg
from rumi.agent.llm import ContextTooLong, LLMClient, LLMResponse, LLMUnavailable
from rumi.agent.tools import ToolContext, ToolRegistry
from rumi.config import AgentSettings
from rumi.context.builder import strip_id_prefix
from rumi.sessions.state import ContextItem, SessionState

log = logging.getLogger(__name__)


class Compaction(Protocol):
    compacted: bool


class ContextLike(Protocol):
    """The part of `rumi.context.ContextEngine` the loop uses."""

    async def add_message(self, session: SessionState, role: str, content: str, *,
                          tool_calls: list[dict[str, Any]] | None = None,
                          tool_call_id: str | None = None, name: str | None = None,
                          channel_message_id: int | None = None,
                          is_error: bool = False) -> ContextItem: ...

    async def build(self, session: SessionState, *, query: str | None = None,
                    tools: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]: ...

    def record_usage(self, session: SessionState, prompt_tokens: int) -> None: ...

    async def ensure_room(self, session: SessionState, *,
                          force: bool = False) -> Compaction | None: ...

    def runaway(self, session: SessionState) -> bool: ...

    async def note_reply(self, session: SessionState, text: str, reason: str) -> None: ...

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
    stopped_by: str | None = None
    item_id: int | None = None  # the context item `text` shows (None: not in the context)

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
            # Read per call: a tool can be withdrawn mid-turn (the sandbox's engine went away
            # during a tool call), and the next request must not offer it again.
            specs = self.registry.specs() or None
            response = await self._complete(session, query, specs, result)
            if response is None:
                return
            calls = response.tool_calls
            item = await self.context.add_message(session, "assistant", response.content,
                                                  tool_calls=calls or None)
            if not calls:
                # The tape keeps the raw text; the person never sees imitated "[#12]" labels.
                result.text = strip_id_prefix(response.content).strip() or msg.EMPTY_REPLY
                result.item_id = item.id
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
                                                   tool_call_id=call["id"], name=name,
                                                   is_error=outcome.is_error)
                    pending.pop(0)
                    if self.context.runaway(session):
                        await self._skip(session, pending, "memory call loop")
                        pending = []
                        await self._stop(session, result, "memory_loop", msg.MEMORY_LOOP)
                        return
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

    async def _complete(self, session: SessionState, query: str,
                        specs: list[dict[str, Any]] | None,
                        result: TurnResult) -> LLMResponse | None:
        """One model call on a prompt that fits; None (and `result` filled) when it failed.

        The prompt is built first so the pressure check sees exactly what will be sent
        (dashboard and tool definitions included); only if the engine compacted is it built
        again. A context-length 400 means our count was off (calibration not settled yet):
        compact once more and retry, else tell the person plainly.
        """
        messages = await self.context.build(session, query=query, tools=specs)
        if await self.context.ensure_room(session) is not None:
            messages = await self.context.build(session, query=query, tools=specs)
        retried = False
        while True:
            try:
                response = await self.llm.complete(messages, tools=specs)
            except ContextTooLong as exc:
                if not retried:
                    retried = True
                    compaction = await self.context.ensure_room(session, force=True)
                    if compaction is not None and compaction.compacted:
                        log.warning("chat %s: prompt too long for the model; compacted, "
                                    "retrying", session.chat_id)
                        messages = await self.context.build(session, query=query, tools=specs)
                        continue
                log.warning("chat %s: prompt too long and nothing left to compact: %s",
                            session.chat_id, exc)
                await self._unavailable(session, result, "context_full", msg.CONTEXT_FULL)
                return None
            except LLMUnavailable as exc:
                log.warning("model unavailable for chat %s: %s", session.chat_id, exc)
                await self._unavailable(session, result, "llm_unavailable",
                                        msg.MODEL_UNAVAILABLE)
                return None
            result.prompt_tokens += response.usage.prompt_tokens
            result.completion_tokens += response.usage.completion_tokens
            self.context.record_usage(session, response.usage.prompt_tokens)
            return response

    async def _unavailable(self, session: SessionState, result: TurnResult, why: str,
                           text: str) -> None:
        """The reply is ours, not the model's: on the tape as an event, not in the context
        (the next prompt should not carry "model unavailable" notes)."""
        result.text, result.stopped_by = text, why
        await self.context.note_reply(session, text, why)

    async def _skip(self, session: SessionState, pending: list[dict[str, Any]],
                    reason: str | None) -> None:
        text = msg.TOOL_CANCELLED if reason is None else msg.TOOL_SKIPPED.format(reason=reason)
        for call in pending:
            await self.context.add_message(session, "tool", text, tool_call_id=call["id"],
                                           name=call["function"]["name"])

    async def _stop(self, session: SessionState, result: TurnResult, why: str, text: str) -> None:
        log.warning("agent loop for chat %s stopped: %s", session.chat_id, why)
        result.text, result.stopped_by = text, why
        item = await self.context.add_message(session, "assistant", text)
        result.item_id = item.id


def _canonical(arguments: str) -> str:
    """Same call = same name and same arguments, whatever the key order or spacing."""
    try:
        return json.dumps(json.loads(arguments), sort_keys=True, ensure_ascii=False)
    except (json.JSONDecodeError, TypeError):
        return arguments.strip()

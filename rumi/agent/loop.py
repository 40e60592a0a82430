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

What today's Groq models do wrong is repaired here, inside the turn: a tool call Groq could not
parse (`tool_use_failed`) is recovered from the model's raw attempt, or retried once with the
reason shown to the model (a note the context engine places before the person's message, so
the request still ends with the person's words or the tool results); arguments that are not
JSON are stored as `{}` beside an error result, so the chat's history stays sendable; an
answer cut by `length` (gpt-oss spends its budget on reasoning first) is retried once with a
larger budget, then marked as cut. The reasoning of this turn's tool steps is replayed to the
model while the turn runs, never stored.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
import uuid
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from rumi import messages as msg
from rumi.base.chats import Speaker
from rumi.base.progress import ToolStep, ToolSteps
from rumi.base.tools import ToolContext, ToolRegistry, ToolResult
from rumi.config import AgentSettings
from rumi.context.builder import strip_id_prefix
from rumi.context.resume import RecordedTurn
from rumi.llm.client import LLMClient
from rumi.llm.errors import (
    AuthFailed,
    ContextTooLong,
    LLMUnavailable,
    ModelGone,
    RateLimited,
    RequestTooLarge,
    ToolUseFailed,
)
from rumi.llm.response import LLMResponse, Usage
from rumi.llm.tool_names import resolve
from rumi.llm.tool_repair import recover
from rumi.llm.wire import json_object_text
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
    # | rate_limited | auth_failed | model_gone | tool_call_failed
    stopped_by: str | None = None
    cached_tokens: int = 0
    reasoning_tokens: int = 0
    model: str | None = None
    item_id: int | None = None  # the context item `text` shows (None: not in the context)
    notice: str | None = None  # ours, said before the answer (e.g. the model was replaced)

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
        steps: ToolSteps | None = None,
    ) -> None:
        self.llm = llm
        self.context = context
        self.registry = registry
        self.settings = settings
        self.tool_extras = tool_extras or {}
        self.steps = steps or ToolSteps()  # one event per tool step, for progress displays

    async def run(
        self, session: SessionState, user_text: str, *, channel_message_id: int | None = None,
        speaker: Speaker | None = None,
    ) -> TurnResult:
        """Handle one user message to the end; the user message itself is recorded first
        (with its `speaker` in a group).

        A message handed back after a crash (its `channel_message_id` already on the tape)
        is not started over: its recorded steps are put back and the turn goes on from them
        (`_resume`), so no recorded tool call runs twice."""
        result = TurnResult(text="")
        recorded = None
        if channel_message_id is not None:
            recorded = await self.context.resume_turn(session, channel_message_id)
        if recorded is None:
            await self.context.add_message(session, "user", user_text,
                                           channel_message_id=channel_message_id,
                                           speaker=speaker)
        try:
            if recorded is None or not await self._resume(session, recorded, result):
                await self._iterate(session, user_text, result)
        finally:
            await asyncio.shield(self._after_turn(session))
        return result

    async def _resume(self, session: SessionState, recorded: RecordedTurn,
                      result: TurnResult) -> bool:
        """Settle a turn cut by a crash; True when it had already reached its answer.

        A call recorded without a result gets one now: "not run" when it never started,
        "may have run" when it did (the model must check before repeating it), and the
        person is told when such a call changes files or state."""
        answer = recorded.answer
        if answer is not None:
            result.text = strip_id_prefix(answer.content).strip() or msg.EMPTY_REPLY
            result.item_id = answer.id
            return True
        told = []
        for call in recorded.unfinished:
            text = msg.TOOL_MAYBE_RAN if call.started else msg.TOOL_NOT_RUN
            await self.context.add_message(session, "tool", text, tool_call_id=call.call_id,
                                           name=call.name, is_error=True)
            tool = self.registry.get(call.name)
            if call.started and (tool is None or tool.changes_state):
                told.append(call.name)
        log.info("chat %s: resuming a turn cut by a restart (%d steps, %d unfinished calls)",
                 session.chat_id, len(recorded.steps), len(recorded.unfinished))
        if told:
            result.notice = msg.TOOL_MAYBE_RAN_NOTICE.format(tools=", ".join(told))
        return False

    async def _after_turn(self, session: SessionState) -> None:
        try:
            await self.context.after_turn(session)
        except Exception:
            log.exception("after_turn failed for chat %s", session.chat_id)

    async def _iterate(self, session: SessionState, query: str, result: TurnResult) -> None:
        calls_seen: Counter[tuple[str, str]] = Counter()
        consecutive_errors = 0
        ctx = ToolContext(chat_id=session.chat_id, session=session, extras=dict(self.tool_extras))
        turn = _Turn()
        for _ in range(self.settings.max_turns):
            result.turns += 1
            # Read per call: a tool can be withdrawn mid-turn (the sandbox's engine went away
            # during a tool call), and the next request must not offer it again.
            specs = self.registry.specs(msg.current_language()) or None
            response = await self._complete(session, query, specs, result, turn)
            if response is None:
                return
            calls = response.tool_calls
            stored_calls, bad_arguments = _storable_calls(
                calls, [s["function"]["name"] for s in specs or []])
            item = await self.context.add_message(session, "assistant", response.content,
                                                  tool_calls=stored_calls or None)
            if not calls:
                # The tape keeps the raw text; the person never sees imitated "[#12]" labels.
                text = strip_id_prefix(response.content).strip()
                if text and response.finish_reason == "length":
                    text = f"{text}\n\n{msg.REPLY_CUT}"
                result.text = text or (msg.EMPTY_AFTER_REASONING if response.usage.reasoning_tokens
                                       else msg.EMPTY_REPLY)
                result.item_id = item.id
                return
            if response.reasoning:
                turn.reasoning[stored_calls[0]["id"]] = response.reasoning
            pending = list(stored_calls)
            try:
                while pending:
                    call = pending[0]
                    name = call["function"]["name"]
                    arguments = call["function"].get("arguments") or "{}"
                    key = (name, _canonical(bad_arguments.get(call["id"], arguments)))
                    calls_seen[key] += 1
                    if calls_seen[key] >= self.settings.max_repeated_calls:
                        await self._skip(session, pending, "repeated call")
                        pending = []
                        await self._stop(session, result, "repeated_call",
                                         msg.BREAKER_REPEATED.format(tool=name))
                        return
                    result.tools.append(name)
                    await self.steps.emit(ToolStep(session.chat_id, name, arguments))
                    if call["id"] in bad_arguments:
                        outcome = ToolResult(_bad_arguments_text(bad_arguments[call["id"]]),
                                             is_error=True)
                    else:
                        await self.context.note_tool_start(session, call["id"], name)
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
                        specs: list[dict[str, Any]] | None, result: TurnResult,
                        turn: _Turn) -> LLMResponse | None:
        """One model call on a prompt that fits; None (and `result` filled) when it failed.

        The prompt is built first so the pressure check sees exactly what will be sent
        (dashboard and tool definitions included); only if the engine compacted is it built
        again. A context-length 400 or a 413 over the account's per-minute cap means the
        prompt must shrink: compact once more and retry, else tell the person plainly.
        """
        messages = await self.context.build(session, query=query, tools=specs, notes=turn.notes)
        if await self.context.ensure_room(session) is not None:
            messages = await self.context.build(session, query=query, tools=specs,
                                                notes=turn.notes)
        attempt = _Attempt()
        while True:
            try:
                response = await self.llm.complete(
                    _with_reasoning(messages, turn), tools=specs,
                    max_tokens=attempt.max_tokens, prompt_tokens=self.context.measure(session))
            except (ContextTooLong, RequestTooLarge) as exc:
                if not attempt.compacted:
                    attempt.compacted = True
                    compaction = await self.context.ensure_room(session, force=True)
                    if compaction is not None and compaction.compacted:
                        log.warning("chat %s: prompt too long for the model or the account's "
                                    "limits; compacted, retrying", session.chat_id)
                        messages = await self.context.build(session, query=query,
                                                            tools=specs, notes=turn.notes)
                        continue
                log.warning("chat %s: prompt too long and nothing left to compact: %s",
                            session.chat_id, exc)
                text = (msg.REQUEST_TOO_LARGE if isinstance(exc, RequestTooLarge)
                        else msg.CONTEXT_FULL)
                await self._unavailable(session, result, "context_full", text)
                return None
            except ToolUseFailed as exc:
                recovered = self._recover(exc, specs, attempt, turn)
                if recovered is None:
                    messages = await self.context.build(session, query=query, tools=specs,
                                                        notes=turn.notes)
                    continue
                if isinstance(recovered, str):
                    await self._unavailable(session, result, "tool_call_failed", recovered)
                    return None
                response = recovered
            except LLMUnavailable as exc:
                log.warning("model unavailable for chat %s: %s", session.chat_id, exc)
                why, text = _failure_reply(exc)
                await self._unavailable(session, result, why, text)
                return None
            self._account(session, result, response)
            if _needs_room(response) and not attempt.enlarged:
                # gpt-oss reasons first: a small budget can end before (or inside) the answer.
                attempt.enlarged = True
                attempt.max_tokens = self.llm.settings.max_output_tokens_retry
                log.info("chat %s: answer cut by length (%d reasoning tokens); retrying with "
                         "max_tokens %d", session.chat_id, response.usage.reasoning_tokens,
                         attempt.max_tokens)
                continue
            self._tell_switch(session, result, response)
            return response

    def _recover(self, exc: ToolUseFailed, specs: list[dict[str, Any]] | None,
                 attempt: _Attempt, turn: _Turn) -> LLMResponse | str | None:
        """A response rebuilt from Groq's `failed_generation`; None to retry once with the
        reason shown to the model (a note in the automatic block, before the person's
        message, kept for the rest of the turn so that block stays cached); or the text to
        tell the person when that failed too."""
        error = exc.error
        names = [s["function"]["name"] for s in specs or []]
        recovery = recover(error.failed_generation if error else None,
                           error.message if error else str(exc), names)
        if recovery.calls:
            calls = [{"id": f"call_rumi_{uuid.uuid4().hex[:12]}", "type": "function",
                      "function": {"name": c.name, "arguments": c.arguments}}
                     for c in recovery.calls]
            log.info("recovered %d tool call(s) from Groq's tool_use_failed", len(calls))
            return LLMResponse({"role": "assistant", "content": "", "tool_calls": calls},
                               Usage(), self.llm.model, "tool_calls")
        if recovery.text:
            log.info("tool_use_failed held prose; used it as the answer")
            return LLMResponse({"role": "assistant", "content": recovery.text}, Usage(),
                               self.llm.model, "stop")
        if attempt.tool_retried:
            log.warning("tool call failed twice: %s", recovery.feedback)
            return msg.TOOL_CALL_FAILED
        attempt.tool_retried = True
        if recovery.feedback:  # `recover` gives calls, text or feedback: here, feedback
            turn.notes.append(recovery.feedback)
        log.info("tool_use_failed: retrying once with feedback to the model")
        return None

    def _account(self, session: SessionState, result: TurnResult,
                 response: LLMResponse) -> None:
        result.prompt_tokens += response.usage.prompt_tokens
        result.completion_tokens += response.usage.completion_tokens
        result.cached_tokens += response.usage.cached_tokens
        result.reasoning_tokens += response.usage.reasoning_tokens
        result.model = response.model
        if response.usage.prompt_tokens:
            self.context.record_usage(session, response.usage.prompt_tokens)

    def _tell_switch(self, session: SessionState, result: TurnResult,
                     response: LLMResponse) -> None:
        """Say once per chat that the configured model is gone and which one answers, and
        once per chat and day that another model answers while the configured one's daily
        quota refills."""
        notices = [result.notice] if result.notice else []
        switch = self.llm.switch
        told = f"{switch.configured}->{switch.answering}" if switch else None
        if switch is not None and session.metadata.get("model_switch_told") != told:
            session.metadata["model_switch_told"] = told
            notices.append(msg.MODEL_SWITCHED.format(configured=switch.configured,
                                                     answering=switch.answering))
        fallback = response.quota_fallback
        today = time.strftime("%Y-%m-%d")
        if fallback is not None and session.metadata.get("quota_fallback_told") != today:
            session.metadata["quota_fallback_told"] = today
            notices.append(msg.QUOTA_FALLBACK.format(
                configured=fallback.configured, answering=fallback.answering,
                wait=msg.format_wait(fallback.seconds)))
        result.notice = "\n\n".join(notices) if notices else None

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


@dataclass
class _Turn:
    """What lives only while one message is handled: the reasoning behind its tool steps,
    keyed by the first call id of the step (replayed to the model, never stored), and the
    automatic notes for the model (sent before the person's message on every later call)."""

    reasoning: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


@dataclass
class _Attempt:
    """One model call's recoveries, each tried at most once."""

    compacted: bool = False
    tool_retried: bool = False
    enlarged: bool = False
    max_tokens: int | None = None


def _needs_room(response: LLMResponse) -> bool:
    """Cut by length, or nothing at all after reasoning: worth one try with more room."""
    if response.finish_reason == "length":
        return True
    return (not response.content.strip() and not response.tool_calls
            and response.usage.reasoning_tokens > 0)


def _with_reasoning(messages: list[dict[str, Any]], turn: _Turn) -> list[dict[str, Any]]:
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


def _storable_calls(calls: list[dict[str, Any]], declared: list[str]
                    ) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """Calls as they may be stored and replayed: arguments that are not a JSON object become
    `{}` (a server that validates history would refuse every later request otherwise);
    the raw text is returned by call id, for the error the model sees. A name gpt-oss leaked
    its format into (`bash<|channel|>commentary`) is stored as the one tool it means, so the
    call runs now and the replayed history names a real tool."""
    stored, bad = [], {}
    for call in calls:
        function = call.get("function") or {}
        raw = function.get("arguments") or "{}"
        fixed = json_object_text(raw)
        if fixed != raw and raw.strip() != "":
            bad[call["id"]] = raw
        raw_name = function.get("name") or ""
        name = resolve(raw_name, declared) or raw_name
        if name != raw_name:
            log.info("tool name %r read as %r", raw_name[:80], name)
        stored.append({"id": call["id"], "type": "function",
                       "function": {"name": name, "arguments": fixed}})
    return stored, bad


def _bad_arguments_text(raw: str) -> str:
    shown = raw if len(raw) <= 300 else raw[:300] + "…"
    return ("Invalid arguments: not a JSON object, so the tool did not run. Received: "
            f"{shown!r}. Call the tool again with a JSON object that matches its schema.")


def _failure_reply(exc: LLMUnavailable) -> tuple[str, str]:
    """(stopped_by, what to tell the person) for a model call that failed for good."""
    if isinstance(exc, RateLimited):
        wait = msg.format_wait(exc.retry_after)
        if exc.daily:
            return "rate_limited", msg.DAILY_LIMIT.format(wait=wait)
        return "rate_limited", msg.RATE_LIMITED.format(wait=wait)
    if isinstance(exc, AuthFailed):
        status = exc.error.status if exc.error else 401
        return "auth_failed", msg.AUTH_FAILED.format(status=status)
    if isinstance(exc, ModelGone):
        return "model_gone", msg.MODEL_GONE.format(model=exc.models[0] if exc.models else "?",
                                                   tried=", ".join(exc.models))
    error = exc.error
    if error is not None and error.kind == "bad_request":
        return "llm_unavailable", msg.REQUEST_REFUSED.format(status=error.status)
    return "llm_unavailable", msg.MODEL_UNAVAILABLE


def _canonical(arguments: str) -> str:
    """Same call = same name and same arguments, whatever the key order or spacing."""
    try:
        return json.dumps(json.loads(arguments), sort_keys=True, ensure_ascii=False)
    except (json.JSONDecodeError, TypeError):
        return arguments.strip()

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

Beside it: `turn.py` (the result and the per-turn state), `tool_calls.py` (calls made storable,
the breakers' counts), `recovery.py` (what a failed model call becomes), `resume.py` (a turn a
crash cut).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from rumi import messages as msg
from rumi.agent.recovery import (
    Attempt,
    failure_reply,
    needs_room,
    recover_tool_call,
    switch_notice,
)
from rumi.agent.resume import settle
from rumi.agent.tool_calls import Breakers, bad_arguments_text, storable_calls
from rumi.agent.turn import ContextLike, TurnResult, TurnState, with_reasoning
from rumi.base.answer_text import AnswerStream, AnswerText
from rumi.base.chats import Speaker
from rumi.base.progress import ToolStep, ToolSteps
from rumi.base.tools import ToolContext, ToolRegistry, ToolResult
from rumi.config import AgentSettings
from rumi.context.builder import strip_id_prefix
from rumi.llm.client import LLMClient
from rumi.llm.errors import (
    ContextTooLong,
    LLMUnavailable,
    RequestTooLarge,
    StreamBroken,
    ToolUseFailed,
)
from rumi.llm.response import LLMResponse
from rumi.llm.stream import TextSink
from rumi.sessions.state import SessionState

log = logging.getLogger(__name__)

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
        text: AnswerStream | None = None,
    ) -> None:
        self.llm = llm
        self.context = context
        self.registry = registry
        self.settings = settings
        self.tool_extras = tool_extras or {}
        self.steps = steps or ToolSteps()  # one event per tool step, for progress displays
        self.text = text or AnswerStream()  # the answer as it is written, for live displays

    async def run(
        self, session: SessionState, user_text: str, *, channel_message_id: int | None = None,
        speaker: Speaker | None = None, result: TurnResult | None = None,
    ) -> TurnResult:
        """Handle one user message to the end; the user message itself is recorded first
        (with its `speaker` in a group).

        A message handed back after a crash (its `channel_message_id` already on the tape)
        is not started over: its recorded steps are put back and the turn goes on from them
        (`resume.settle`), so no recorded tool call runs twice. `result` (the caller's, to
        read what was shown when it stops the turn) is filled in place."""
        result = result if result is not None else TurnResult(text="")
        recorded = None
        if channel_message_id is not None:
            recorded = await self.context.resume_turn(session, channel_message_id)
        if recorded is None:
            await self.context.add_message(session, "user", user_text,
                                           channel_message_id=channel_message_id,
                                           speaker=speaker)
        try:
            if recorded is None or not await settle(self.context, self.registry, session,
                                                      recorded, result):
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
        breakers = Breakers(self.settings)
        ctx = ToolContext(chat_id=session.chat_id, session=session, extras=dict(self.tool_extras))
        turn = TurnState()
        for _ in range(self.settings.max_turns):
            result.turns += 1
            # Read per call: a tool can be withdrawn mid-turn (the sandbox's engine went away
            # during a tool call), and the next request must not offer it again.
            specs = self.registry.specs(msg.current_language()) or None
            response = await self._complete(session, query, specs, result, turn)
            if response is None:
                return
            calls = response.tool_calls
            stored_calls, bad_arguments = storable_calls(
                calls, [s["function"]["name"] for s in specs or []])
            item = await self.context.add_message(session, "assistant", response.content,
                                                  tool_calls=stored_calls or None)
            if not calls:
                _answer(result, response, item.id)
                return
            result.shown = ""   # a tool step's preface is not the answer a stop keeps
            if response.reasoning:
                turn.reasoning[stored_calls[0]["id"]] = response.reasoning
            if await self._run_calls(session, stored_calls, bad_arguments, ctx, breakers,
                                     result):
                return
        await self._stop(session, result, "max_turns",
                         msg.BREAKER_MAX_TURNS.format(turns=self.settings.max_turns))

    async def _run_calls(self, session: SessionState, calls: list[dict[str, Any]],
                         bad_arguments: dict[str, str], ctx: ToolContext, breakers: Breakers,
                         result: TurnResult) -> bool:
        """Run one step's calls in order; True when a circuit breaker ended the turn (the
        calls left then get a "skipped" result, and the person an honest sentence)."""
        pending = list(calls)
        try:
            while pending:
                call = pending[0]
                name = call["function"]["name"]
                arguments = call["function"].get("arguments") or "{}"
                if breakers.repeated(name, bad_arguments.get(call["id"], arguments)):
                    await self._break(session, pending, result, "repeated call",
                                      "repeated_call", msg.BREAKER_REPEATED.format(tool=name))
                    return True
                outcome = await self._run_one(session, call, bad_arguments, ctx, result)
                pending.pop(0)
                if self.context.runaway(session):
                    await self._break(session, pending, result, "memory call loop",
                                      "memory_loop", msg.MEMORY_LOOP)
                    return True
                if breakers.failing(outcome.is_error):
                    await self._break(session, pending, result, "too many tool errors",
                                      "tool_errors", msg.BREAKER_TOOL_ERRORS.format(
                                          count=breakers.consecutive_errors, tool=name))
                    return True
        except asyncio.CancelledError:
            # Keep the transcript valid for the next request: every tool call gets a result.
            await asyncio.shield(self._skip(session, pending, None))
            raise
        return False

    async def _run_one(self, session: SessionState, call: dict[str, Any],
                       bad_arguments: dict[str, str], ctx: ToolContext,
                       result: TurnResult) -> ToolResult:
        """One tool call, marked started on the tape first and its result recorded after
        (arguments that were not JSON give an error result without running the tool)."""
        name = call["function"]["name"]
        arguments = call["function"].get("arguments") or "{}"
        result.tools.append(name)
        await self.steps.emit(ToolStep(session.chat_id, name, arguments))
        if call["id"] in bad_arguments:
            outcome = ToolResult(bad_arguments_text(bad_arguments[call["id"]]), is_error=True)
        else:
            await self.context.note_tool_start(session, call["id"], name)
            outcome = await self.registry.execute(name, arguments, ctx)
        await self.context.add_message(session, "tool", outcome.content,
                                       tool_call_id=call["id"], name=name,
                                       is_error=outcome.is_error)
        return outcome

    async def _break(self, session: SessionState, pending: list[dict[str, Any]],
                     result: TurnResult, reason: str, why: str, text: str) -> None:
        """A circuit breaker's exit: the calls left skipped (emptied, so a cancellation
        meanwhile does not skip them twice), then the honest stop."""
        await self._skip(session, pending, reason)
        pending.clear()
        await self._stop(session, result, why, text)

    async def _complete(self, session: SessionState, query: str,
                        specs: list[dict[str, Any]] | None, result: TurnResult,
                        turn: TurnState) -> LLMResponse | None:
        """One model call on a prompt that fits; None (and `result` filled) when it failed.

        The prompt is built first so the pressure check sees exactly what will be sent
        (dashboard and tool definitions included); only if the engine compacted is it built
        again. A context-length 400 or a 413 over the account's per-minute cap means the
        prompt must shrink: compact once more and retry, else tell the person plainly.
        """
        messages = await self._prompt(session, query, specs, turn)
        if await self.context.ensure_room(session) is not None:
            messages = await self._prompt(session, query, specs, turn)
        attempt = Attempt()
        while True:
            try:
                response = await self.llm.complete(
                    with_reasoning(messages, turn), tools=specs,
                    max_tokens=attempt.max_tokens, prompt_tokens=self.context.measure(session),
                    on_text=self._sink(session, result))
            except asyncio.CancelledError:
                _kept(result)
                raise
            except StreamBroken as exc:
                log.warning("chat %s: the answer's stream broke: %s", session.chat_id, exc)
                await self._stop(session, result, "stream_broken",
                                 f"{exc.shown.rstrip()}\n\n{msg.STREAM_CUT}")
                return None
            except (ContextTooLong, RequestTooLarge) as exc:
                if not await self._shrunk(session, exc, attempt, result):
                    return None
                messages = await self._prompt(session, query, specs, turn)
                continue
            except ToolUseFailed as exc:
                recovered = recover_tool_call(exc, specs, attempt, turn, self.llm.model)
                if recovered is None:
                    messages = await self._prompt(session, query, specs, turn)
                    continue
                if isinstance(recovered, str):
                    await self._unavailable(session, result, "tool_call_failed", recovered)
                    return None
                response = recovered
            except LLMUnavailable as exc:
                log.warning("model unavailable for chat %s: %s", session.chat_id, exc)
                why, text = failure_reply(exc)
                await self._unavailable(session, result, why, text)
                return None
            self._account(session, result, response)
            if self._enlarged(session, response, attempt):
                continue
            result.notice = switch_notice(session, result.notice, self.llm.switch, response)
            return response

    def _sink(self, session: SessionState, result: TurnResult) -> TextSink | None:
        """Where this model call's text goes as it is written (None: nobody watches, so
        the call is not streamed). Its first piece restarts what the channel shows."""
        if not self.text.watched():
            return None
        result.shown = ""
        first = True

        async def show(piece: str) -> None:
            nonlocal first
            result.shown += piece
            restart, first = first, False
            await self.text.emit(AnswerText(session.chat_id, piece, restart=restart))

        return show

    async def _prompt(self, session: SessionState, query: str,
                      specs: list[dict[str, Any]] | None,
                      turn: TurnState) -> list[dict[str, Any]]:
        return await self.context.build(session, query=query, tools=specs, notes=turn.notes)

    async def _shrunk(self, session: SessionState, exc: ContextTooLong | RequestTooLarge,
                      attempt: Attempt, result: TurnResult) -> bool:
        """The provider said the prompt is too long: True once compacted (build again and
        retry), else the person is told (once per call: a second refusal is final)."""
        if not attempt.compacted:
            attempt.compacted = True
            compaction = await self.context.ensure_room(session, force=True)
            if compaction is not None and compaction.compacted:
                log.warning("chat %s: prompt too long for the model or the account's "
                            "limits; compacted, retrying", session.chat_id)
                return True
        log.warning("chat %s: prompt too long and nothing left to compact: %s",
                    session.chat_id, exc)
        text = (msg.REQUEST_TOO_LARGE if isinstance(exc, RequestTooLarge)
                else msg.CONTEXT_FULL)
        await self._unavailable(session, result, "context_full", text)
        return False

    def _enlarged(self, session: SessionState, response: LLMResponse,
                  attempt: Attempt) -> bool:
        """True to ask again with the larger budget: the answer was cut (once per call)."""
        if not needs_room(response) or attempt.enlarged:
            return False
        # gpt-oss reasons first: a small budget can end before (or inside) the answer.
        attempt.enlarged = True
        attempt.max_tokens = self.llm.settings.max_output_tokens_retry
        log.info("chat %s: answer cut by length (%d reasoning tokens); retrying with "
                 "max_tokens %d", session.chat_id, response.usage.reasoning_tokens,
                 attempt.max_tokens)
        return True

    def _account(self, session: SessionState, result: TurnResult,
                 response: LLMResponse) -> None:
        result.prompt_tokens += response.usage.prompt_tokens
        result.completion_tokens += response.usage.completion_tokens
        result.cached_tokens += response.usage.cached_tokens
        result.reasoning_tokens += response.usage.reasoning_tokens
        result.model = response.model
        if response.usage.prompt_tokens:
            self.context.record_usage(session, response.usage.prompt_tokens)

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


def _kept(result: TurnResult) -> None:
    """Cancelled while the answer was being written: what was shown becomes the answer,
    marked as stopped. Only the core records it (as it records any stop), and only for a
    `/stop`: a turn cut by a shutdown is answered again after the restart."""
    if result.shown.strip():
        result.text = f"{strip_id_prefix(result.shown).rstrip()}\n\n{msg.STOPPED_MARK}"
        result.stopped_by = "stopped"


def _answer(result: TurnResult, response: LLMResponse, item_id: int) -> None:
    """The model's answer, as the person sees it."""
    # The tape keeps the raw text; the person never sees imitated "[#12]" labels.
    text = strip_id_prefix(response.content).strip()
    if text and response.finish_reason == "length":
        text = f"{text}\n\n{msg.REPLY_CUT}"
    result.text = text or (msg.EMPTY_AFTER_REASONING if response.usage.reasoning_tokens
                           else msg.EMPTY_REPLY)
    result.item_id = item_id

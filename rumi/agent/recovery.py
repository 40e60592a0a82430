"""What a model call that went wrong becomes: a rebuilt tool call, one retry with more room,
or the plain sentence the person is told, and the notice when another model answered."""

from __future__ import annotations

import logging
import time
import uuid
from dataclasses import dataclass
from typing import Any

from rumi import messages as msg
from rumi.agent.turn import TurnState
from rumi.llm.errors import (
    AuthFailed,
    LLMUnavailable,
    ModelGone,
    ProviderDown,
    RateLimited,
    ToolUseFailed,
)
from rumi.llm.response import LLMResponse, ModelSwitch, Usage
from rumi.llm.tool_repair import recover
from rumi.sessions.state import SessionState

log = logging.getLogger(__name__)


@dataclass
class Attempt:
    """One model call's recoveries, each tried at most once."""

    compacted: bool = False
    tool_retried: bool = False
    enlarged: bool = False
    max_tokens: int | None = None


def needs_room(response: LLMResponse) -> bool:
    """Cut by length, or nothing at all after reasoning: worth one try with more room."""
    if response.finish_reason == "length":
        return True
    return (not response.content.strip() and not response.tool_calls
            and response.usage.reasoning_tokens > 0)


def recover_tool_call(exc: ToolUseFailed, specs: list[dict[str, Any]] | None,
                      attempt: Attempt, turn: TurnState, model: str
                      ) -> LLMResponse | str | None:
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
                           Usage(), model, "tool_calls")
    if recovery.text:
        log.info("tool_use_failed held prose; used it as the answer")
        return LLMResponse({"role": "assistant", "content": recovery.text}, Usage(),
                           model, "stop")
    if attempt.tool_retried:
        log.warning("tool call failed twice: %s", recovery.feedback)
        return msg.TOOL_CALL_FAILED
    attempt.tool_retried = True
    if recovery.feedback:  # `recover` gives calls, text or feedback: here, feedback
        turn.notes.append(recovery.feedback)
    log.info("tool_use_failed: retrying once with feedback to the model")
    return None


def failure_reply(exc: LLMUnavailable) -> tuple[str, str]:
    """(stopped_by, what to tell the person) for a model call that failed for good."""
    if isinstance(exc, RateLimited):
        wait = msg.format_wait(exc.retry_after)
        if exc.daily:
            return "rate_limited", msg.DAILY_LIMIT.format(wait=wait)
        if exc.again:
            return "rate_limited", msg.RATE_LIMITED_AGAIN.format(
                waited=msg.format_wait(exc.waited))
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
    if isinstance(exc, ProviderDown) and error is not None and error.status is None:
        # no answer at all (refused, DNS, timeout): not "overloaded", which is Groq's 5xx
        return "llm_unavailable", msg.MODEL_UNREACHABLE
    return "llm_unavailable", msg.MODEL_UNAVAILABLE


def switch_notice(session: SessionState, notice: str | None, switch: ModelSwitch | None,
                  response: LLMResponse) -> str | None:
    """`notice` with, once per chat, that the configured model is gone and which one answers,
    and once per chat and day, that another model answers while the configured one's daily
    quota refills (`switch`: the client's `switch`, None while the configured model answers)."""
    notices = [notice] if notice else []
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
    return "\n\n".join(notices) if notices else None

"""The model's lines in `/status`: who answers, whether Groq takes the key, today's use and
what the account has left — what a person asks when replies slow down or stop. How much of
the prompt Groq served from its cache and the rate-limit waits go to `/status detalle`."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable

from rumi import messages as msg
from rumi.llm.client import LLMClient
from rumi.sessions.state import SessionState

Provider = Callable[[str, SessionState], Awaitable[str | None]]


def llm_status_provider(llm: LLMClient) -> Provider:
    async def provider(chat_id: str, session: SessionState) -> str | None:
        return llm_status(llm)

    return provider


def llm_detail_provider(llm: LLMClient) -> Provider:
    async def provider(chat_id: str, session: SessionState) -> str | None:
        return llm_detail(llm) or None

    return provider


def llm_status(llm: LLMClient, now: float | None = None) -> str:
    """Model, key health (the last Groq call's outcome), today's use, the limits left."""
    stats = llm.stats
    now = time.time() if now is None else now
    lines = [msg.STATUS_MODEL.format(model=stats.last_model or llm.model,
                                     when=msg.STATUS_MODEL_ANSWERED if stats.last_model
                                     else msg.STATUS_MODEL_NOT_YET)]
    if llm.switch is not None:
        lines.append(msg.STATUS_MODEL_SWITCHED.format(configured=llm.switch.configured))
    if stats.key_refused:
        lines.append(msg.STATUS_KEY_REFUSED)
    elif stats.last_ok_at is not None:
        lines.append(msg.STATUS_KEY_OK.format(ago=msg.format_duration(now - stats.last_ok_at)))
    else:
        lines.append(msg.STATUS_KEY_UNTRIED)
    if stats.last_failure and not stats.key_refused:
        lines.append(msg.STATUS_LAST_FAILURE.format(why=stats.last_failure))
    today = time.strftime("%Y-%m-%d", time.localtime(now))
    answers, tokens = ((stats.answers_today, stats.tokens_today) if stats.day == today
                       else (0, 0))
    lines.append(msg.STATUS_USAGE_TODAY.format(answers=answers, tokens=_known(tokens)))
    limits = llm.limiter.limits(llm.model)
    if limits.tokens_per_minute or limits.requests_per_day:
        lines.append(msg.STATUS_LIMITS.format(
            tokens=_known(limits.remaining_tokens), tpm=_known(limits.tokens_per_minute),
            requests=_known(limits.remaining_requests_today),
            rpd=_known(limits.requests_per_day)))
    return "\n".join(lines)


def llm_detail(llm: LLMClient) -> str:
    """Prompt cache share and rate-limit waits: how the account is being used, for tuning."""
    stats = llm.stats
    lines: list[str] = []
    share = stats.cached_share
    if share is not None:
        usage = stats.usage
        lines.append(msg.STATUS_CACHE.format(share=share * 100, cached=_known(usage.cached_tokens),
                                             prompt=_known(usage.prompt_tokens),
                                             reasoning=_known(usage.reasoning_tokens)))
    if stats.rate_waits:
        lines.append(msg.STATUS_RATE_WAITS.format(
            count=msg.format_number(stats.rate_waits),
            seconds=msg.format_duration(stats.rate_wait_seconds)))
    return "\n".join(lines)


def _known(value: int | None) -> str:
    return "?" if value is None else msg.format_number(value)

"""The model's lines in `/status`: who answers, how much of the prompt Groq served from its
cache, and where the account stands against its limits — what a person asks when replies
slow down or stop."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from rumi import messages as msg
from rumi.agent.llm import LLMClient
from rumi.sessions.state import SessionState


def llm_status_provider(llm: LLMClient) -> Callable[[str, SessionState], Awaitable[str | None]]:
    async def provider(chat_id: str, session: SessionState) -> str | None:
        return llm_status(llm)

    return provider


def llm_status(llm: LLMClient) -> str:
    stats = llm.stats
    lines = [msg.STATUS_MODEL.format(model=stats.last_model or llm.model,
                                     when=msg.STATUS_MODEL_ANSWERED if stats.last_model
                                     else msg.STATUS_MODEL_NOT_YET)]
    if llm.switch is not None:
        lines.append(msg.STATUS_MODEL_SWITCHED.format(configured=llm.switch.configured))
    share = stats.cached_share
    if share is not None:
        usage = stats.usage
        lines.append(msg.STATUS_CACHE.format(share=share * 100, cached=_known(usage.cached_tokens),
                                             prompt=_known(usage.prompt_tokens),
                                             reasoning=_known(usage.reasoning_tokens)))
    limits = llm.limiter.limits(llm.model)
    if limits.tokens_per_minute or limits.requests_per_day:
        lines.append(msg.STATUS_LIMITS.format(
            tokens=_known(limits.remaining_tokens), tpm=_known(limits.tokens_per_minute),
            requests=_known(limits.remaining_requests_today),
            rpd=_known(limits.requests_per_day)))
    if stats.rate_waits:
        lines.append(msg.STATUS_RATE_WAITS.format(count=stats.rate_waits,
                                                  seconds=stats.rate_wait_seconds))
    if stats.last_failure:
        lines.append(msg.STATUS_LAST_FAILURE.format(why=stats.last_failure))
    return "\n".join(lines)


def _known(value: int | None) -> str:
    return "?" if value is None else f"{value:,}".replace(",", ".")

"""The pacer: limits learned from Groq's headers and bodies, waits computed on a fake clock."""

from __future__ import annotations

import pytest

from rumi.agent.ratelimit import (
    PromptOverCap,
    RateLimitedLocally,
    RateLimiter,
)

MODEL = "openai/gpt-oss-120b"


class Clock:
    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


def free_tier_headers(remaining_tokens: int, reset_tokens: str = "0s",
                      remaining_requests: int = 999) -> dict[str, str]:
    return {
        "x-ratelimit-limit-requests": "1000",
        "x-ratelimit-limit-tokens": "8000",
        "x-ratelimit-remaining-requests": str(remaining_requests),
        "x-ratelimit-remaining-tokens": str(remaining_tokens),
        "x-ratelimit-reset-requests": "1m26.4s",
        "x-ratelimit-reset-tokens": reset_tokens,
    }


def test_unknown_limits_never_wait() -> None:
    limiter = RateLimiter(clock=Clock())
    plan = limiter.plan(MODEL, 50_000, 1_024, max_wait=0)
    assert plan.wait == 0 and plan.max_tokens == 1_024


def test_headers_teach_the_cap_and_max_tokens_shrinks_to_fit() -> None:
    limiter = RateLimiter(clock=Clock())
    limiter.observe_headers(MODEL, free_tier_headers(8_000))
    assert limiter.limits(MODEL).tokens_per_minute == 8_000
    assert limiter.limits(MODEL).requests_per_day == 1_000  # limit-requests is per DAY
    plan = limiter.plan(MODEL, 7_000, 2_048, max_wait=0)
    assert plan.max_tokens == int(8_000 * 0.97) - 7_000  # prompt + max_tokens under the cap


def test_prompt_over_the_cap_asks_for_compaction() -> None:
    limiter = RateLimiter(clock=Clock())
    limiter.observe_limit(MODEL, "TPM", 8_000)  # learned from a 413 body
    with pytest.raises(PromptOverCap) as caught:
        limiter.plan(MODEL, 7_900, 1_024, max_wait=60)
    assert caught.value.cap == int(8_000 * 0.97)


def test_second_request_waits_until_the_window_has_room() -> None:
    clock = Clock()
    limiter = RateLimiter(clock=clock)
    limiter.observe_headers(MODEL, free_tier_headers(8_000))
    first = limiter.plan(MODEL, 3_000, 1_024, max_wait=0)
    assert first.wait == 0
    # Groq answered: 3,976 tokens left, the first ones back in 30.18 s; by one window after
    # the report, everything used before it has left the window.
    limiter.observe_headers(MODEL, free_tier_headers(3_976, reset_tokens="30.18s"))
    second = limiter.plan(MODEL, 3_100, 1_024, max_wait=60)
    # 4,124 needed, 148 missing: a little after the reset (4,024 come back over 29.82 s).
    assert 30.18 < second.wait <= 32
    # A third, booked behind the second, waits until the second leaves the window.
    third = limiter.plan(MODEL, 3_100, 1_024, max_wait=120)
    assert third.wait == pytest.approx(second.wait + 60)
    # Booked tokens count from the moment they are booked: nothing jumps the queue.
    clock.now += 3
    assert limiter.plan(MODEL, 100, 200, max_wait=600).wait > 59


def test_cached_tokens_do_not_count_for_the_same_prefix_only() -> None:
    clock = Clock()
    limiter = RateLimiter(clock=clock)
    limiter.observe_headers(MODEL, free_tier_headers(5_000, reset_tokens="20s"))
    limiter.observe_cached(MODEL, "chat-42", 3_000)
    plan = limiter.plan(MODEL, 3_500, 1_024, max_wait=0, prefix="chat-42")
    assert plan.requested == 3_500 - 3_000 + 1_024 and plan.wait == 0
    other = limiter.plan(MODEL, 3_500, 1_024, max_wait=60, prefix="summary")
    assert other.requested == 3_500 + 1_024  # a different beginning: nothing cached


def test_a_minute_wait_longer_than_allowed_is_left_to_groq() -> None:
    """Our wait is an estimate: rather than refuse, send and let Groq's 429 say how long."""
    clock = Clock()
    limiter = RateLimiter(clock=clock)
    limiter.observe_headers(MODEL, free_tier_headers(0, reset_tokens="50s"))
    assert limiter.plan(MODEL, 3_000, 1_024, max_wait=5).wait == 0
    waited = limiter.plan(MODEL, 3_000, 1_024, max_wait=600)
    assert waited.wait > 5


def test_no_daily_requests_left_waits_for_the_next_one() -> None:
    clock = Clock()
    limiter = RateLimiter(clock=clock)
    limiter.observe_headers(MODEL, free_tier_headers(8_000, remaining_requests=0))
    with pytest.raises(RateLimitedLocally) as caught:
        limiter.plan(MODEL, 100, 100, max_wait=20)
    assert caught.value.scope == "RPD" and caught.value.wait == pytest.approx(86.4)


def test_requests_per_minute_learned_from_a_429() -> None:
    clock = Clock()
    limiter = RateLimiter(window_seconds=60, clock=clock)
    limiter.observe_limit(MODEL, "RPM", 2)
    assert limiter.plan(MODEL, 10, 10, max_wait=0).wait == 0
    assert limiter.plan(MODEL, 10, 10, max_wait=0).wait == 0
    third = limiter.plan(MODEL, 10, 10, max_wait=120)
    assert third.wait == pytest.approx(60)
    clock.now += 61
    assert limiter.plan(MODEL, 10, 10, max_wait=0).wait == 0

"""The pacer against Groq's own published figures: buckets refilled continuously, reset headers
read as the time until full, cached tokens counted at admission, ITPM/OTPM, and the rule that an
estimate never refuses where Groq could still say yes. Waits are computed on a fake clock."""

from __future__ import annotations

import pytest

from rumi.llm.provider_errors import classify
from rumi.llm.ratelimit import (
    Bucket,
    PromptOverCap,
    RateLimitedLocally,
    RateLimiter,
)

MODEL = "openai/gpt-oss-120b"
ORG = "Rate limit reached for model `openai/gpt-oss-120b` in organization `org_01x` service " \
      "tier `on_demand` on "


class Clock:
    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


def free_tier_headers(remaining_tokens: int, reset_tokens: str = "0s",
                      remaining_requests: int = 999, reset_requests: str = "1m26.4s"
                      ) -> dict[str, str]:
    return {
        "x-ratelimit-limit-requests": "1000",
        "x-ratelimit-limit-tokens": "8000",
        "x-ratelimit-remaining-requests": str(remaining_requests),
        "x-ratelimit-remaining-tokens": str(remaining_tokens),
        "x-ratelimit-reset-requests": reset_requests,
        "x-ratelimit-reset-tokens": reset_tokens,
    }


# --- Groq's published examples ---------------------------------------------------------------


def test_groqs_try_again_time_is_a_bucket_refilled_at_limit_over_window() -> None:
    """A 429 Groq sent (published in crewAI issue #494): 5,747 used of 5,000 a minute, ~4,251
    requested, "try again in 59.977s" — exactly the 4,998 missing tokens at 5,000/60 s."""
    body = {"error": {"message": f"{ORG}tokens per minute (TPM): Limit 5000, Used 5747, "
                      "Requested ~4251. Please try again in 59.977s. Visit "
                      "https://console.groq.com/docs/rate-limits for more information.",
                      "type": "tokens", "code": "rate_limit_exceeded"}}
    error = classify(429, body)
    assert (error.scope, error.limit, error.used, error.requested) == ("TPM", 5000, 5747, 4251)
    assert error.retry_after == pytest.approx(59.977)
    bucket = Bucket(limit=5000, span=60, level=5000 - 5747, at=0.0)
    assert bucket.wait_for(4251, 0.0) == pytest.approx(59.977, abs=0.01)


def test_groqs_documented_headers_reset_is_the_time_until_full() -> None:
    """Groq's rate-limit docs: 14,370 of 14,400 requests a day left, reset-requests "2m59.56s":
    30 requests at 14,400 a day drip back one every 6 s, full in ~180 s."""
    clock = Clock()
    limiter = RateLimiter(clock=clock)
    limiter.observe_headers(MODEL, {
        "x-ratelimit-limit-requests": "14400", "x-ratelimit-limit-tokens": "18000",
        "x-ratelimit-remaining-requests": "14370", "x-ratelimit-remaining-tokens": "17997",
        "x-ratelimit-reset-requests": "2m59.56s", "x-ratelimit-reset-tokens": "7.66s"})
    requests = limiter.limits(MODEL).buckets["RPD"]
    assert (requests.limit - requests.level_at(clock.now)) / requests.rate == \
        pytest.approx(179.56, abs=0.5)
    tokens = limiter.limits(MODEL).buckets["TPM"]
    assert tokens.level_at(clock.now + 7.66) == 18_000  # full by Groq's reset, whatever else


def test_tokens_come_back_continuously_not_at_the_reset() -> None:
    """0 tokens left, full in 60 s: half the minute's tokens are back after 30 s."""
    clock = Clock()
    limiter = RateLimiter(clock=clock)
    limiter.observe_headers(MODEL, free_tier_headers(0, reset_tokens="1m0s"))
    plan = limiter.plan(MODEL, 3_000, 1_000, max_wait=60)
    assert plan.wait == pytest.approx(4_000 / 0.97 / (8_000 / 60))  # 3 % margin: ~31 s, not 60


def test_a_wait_never_exceeds_groqs_time_to_full() -> None:
    """Our rate says 60 s for 8,000 tokens; Groq says full in 10 s (a reset after a burst of
    refusals, say): Groq's figure bounds the wait."""
    clock = Clock()
    limiter = RateLimiter(clock=clock)
    limiter.observe_headers(MODEL, free_tier_headers(0, reset_tokens="10s"))
    assert limiter.plan(MODEL, 3_000, 1_000, max_wait=60).wait == pytest.approx(10.0)


def test_cached_tokens_count_at_admission_and_not_in_the_charge() -> None:
    clock = Clock()
    limiter = RateLimiter(clock=clock)
    limiter.observe_headers(MODEL, free_tier_headers(5_000, reset_tokens="22.5s"))
    limiter.observe_cached(MODEL, "chat-42", 3_000)
    fits = limiter.plan(MODEL, 3_500, 1_024, max_wait=60, prefix="chat-42")
    assert fits.wait == 0 and fits.requested == 3_500 + 1_024  # admission: the whole prompt
    assert dict(fits.charges)["TPM"] == 3_500 - 3_000 + 1_024  # booked: uncached + budget
    limiter.settle(MODEL, fits, uncached_prompt=500, completion=200)
    bucket = limiter.limits(MODEL).buckets["TPM"]
    assert bucket.level_at(clock.now) == pytest.approx(5_000 - 700)  # the unused budget is back
    # 4,300 left: a 4,000-token prompt with 3,900 of them cached still waits for admission.
    limiter.observe_cached(MODEL, "chat-43", 3_900)
    waits = limiter.plan(MODEL, 4_000, 1_024, max_wait=60, prefix="chat-43")
    assert waits.wait == pytest.approx((5_024 / 0.97 - 4_300) / (8_000 / 60))


def test_itpm_and_otpm_are_recognised_and_respected() -> None:
    """Some organisations have separate input and output per-minute limits (Groq's docs)."""
    body = {"error": {"message": f"{ORG}output tokens per minute (OTPM): Limit 2000, Used 1500,"
                      " Requested 1024. Please try again in 15.72s.", "type": "tokens",
                      "code": "rate_limit_exceeded"}}
    error = classify(429, body)
    assert error.scope == "OTPM"  # not "TPM"
    limiter = RateLimiter(clock=Clock())
    limiter.observe_limit(MODEL, error.scope, error.limit, used=error.used)
    assert limiter.limits(MODEL).tokens_per_minute is None
    plan = limiter.plan(MODEL, 3_000, 4_096, max_wait=0)
    assert plan.max_tokens == int(2_000 * 0.97)  # the output budget fits the OTPM cap
    error = classify(429, {"error": {"message": f"{ORG}input tokens per minute (ITPM): Limit "
                                     "4000, Used 100, Requested 5000. Please try again in 1s."}})
    assert error.scope == "ITPM"
    limiter.observe_limit(MODEL, error.scope, error.limit, used=error.used)
    with pytest.raises(PromptOverCap):
        limiter.plan(MODEL, 5_000, 256, max_wait=0)


def test_an_unknown_scope_is_recorded_as_nothing() -> None:
    body = {"error": {"message": f"{ORG}tokens per fortnight (TPF): Limit 8000, Used 7000, "
                      "Requested 2000. Please try again in 3s."}}
    error = classify(429, body)
    assert error.scope is None and error.limit == 8000
    limiter = RateLimiter(clock=Clock())
    limiter.observe_limit(MODEL, error.scope, error.limit, used=error.used)
    assert limiter.token_cap(MODEL) is None and not limiter.limits(MODEL).buckets


# --- the rules ---------------------------------------------------------------------------------


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


def test_bookings_queue_behind_each_other() -> None:
    clock = Clock()
    limiter = RateLimiter(clock=clock)
    limiter.observe_headers(MODEL, free_tier_headers(8_000))
    rate = 8_000 / 60
    first = limiter.plan(MODEL, 3_000, 900, max_wait=0)
    second = limiter.plan(MODEL, 3_000, 900, max_wait=60)
    assert first.wait == 0 and second.wait == 0  # 8,000 in the bucket: both fit
    third = limiter.plan(MODEL, 3_000, 900, max_wait=60)
    assert third.wait == pytest.approx((3_900 / 0.97 - 200) / rate)  # must drip back
    fourth = limiter.plan(MODEL, 3_000, 900, max_wait=120)
    assert fourth.wait == pytest.approx(third.wait + 3_900 / rate)  # behind, never jumping
    limiter.cancel(MODEL, fourth)  # refused: its booking is given back
    assert limiter.plan(MODEL, 3_000, 900, max_wait=120).wait == pytest.approx(fourth.wait)


def test_a_minute_wait_longer_than_allowed_is_left_to_groq() -> None:
    """Our wait is an estimate: rather than refuse, send and let Groq's 429 say how long."""
    clock = Clock()
    limiter = RateLimiter(clock=clock)
    limiter.observe_headers(MODEL, free_tier_headers(0, reset_tokens="50s"))
    assert limiter.plan(MODEL, 3_000, 1_024, max_wait=5).wait == 0
    assert limiter.plan(MODEL, 3_000, 1_024, max_wait=600).wait > 5


def test_when_in_doubt_groq_is_asked_rather_than_refusing_for_a_day() -> None:
    """0 requests left today by the headers is an estimate (one comes back every 86.4 s):
    the request goes, and only Groq's own daily 429 keeps the model unused, for exactly as
    long as Groq said."""
    clock = Clock()
    limiter = RateLimiter(clock=clock)
    limiter.observe_headers(MODEL, free_tier_headers(8_000, remaining_requests=0,
                                                     reset_requests="24h0m0s"))
    assert limiter.plan(MODEL, 100, 100, max_wait=20).wait == 0
    # The first was booked, so a second waits for two requests to drip back, if it may.
    assert limiter.plan(MODEL, 100, 100, max_wait=200).wait == pytest.approx(2 * 86.4)
    limiter.observe_limit(MODEL, "TPD", 200_000, used=199_900, requested=1_438,
                          retry_after=578.0)  # "Please try again in 9m38s"
    with pytest.raises(RateLimitedLocally) as caught:
        limiter.plan(MODEL, 100, 100, max_wait=20)
    assert caught.value.scope == "TPD" and caught.value.wait == pytest.approx(578.0)
    assert limiter.quota_wait(MODEL) == pytest.approx(578.0)
    assert limiter.quota_wait("openai/gpt-oss-20b") == 0  # every model has its own quota
    clock.now += 578.0
    assert limiter.quota_wait(MODEL) == 0
    limiter.plan(MODEL, 100, 100, max_wait=20)  # Groq's time has passed: asked again


def test_requests_per_minute_learned_from_a_429_refill_one_by_one() -> None:
    clock = Clock()
    limiter = RateLimiter(window_seconds=60, clock=clock)
    limiter.observe_limit(MODEL, "RPM", 2)
    assert limiter.plan(MODEL, 10, 10, max_wait=0).wait == 0
    assert limiter.plan(MODEL, 10, 10, max_wait=0).wait == 0
    assert limiter.plan(MODEL, 10, 10, max_wait=120).wait == pytest.approx(30)
    clock.now += 61
    assert limiter.plan(MODEL, 10, 10, max_wait=0).wait == 0

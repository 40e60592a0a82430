"""Pacing requests to fit the Groq account's real limits, learned from Groq's own answers.

A free Groq account allows 8,000 tokens a minute on gpt-oss, and Groq counts a request's
`max_tokens` as "Requested" before it runs. Sent blindly, two requests of a tool-calling turn
already collide and the person waits through 429 retries. So the client asks this module
before every request: how long to wait so the request fits, how large `max_tokens` may be,
and whether the prompt itself is too big for the account (then the caller compacts).

What it knows comes from Groq: `x-ratelimit-*` headers on every response (tokens per minute
and what is left of it, requests per day and when one frees up) and the "Limit N" of a 413 or
429 body. Between responses it keeps its own log of what it sent in the current window, so
requests from several chats at once do not all spend the same remaining tokens.
"""

from __future__ import annotations

import contextlib
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from rumi.agent.provider_errors import parse_duration

# Below this, an answer (reasoning included) is not worth sending: shrink the prompt instead.
MIN_OUTPUT_TOKENS = 256
# Leave a little room under the cap: our prompt count and Groq's differ by a few percent.
CAP_MARGIN = 0.97
MAX_PREFIXES = 256  # remembered cache shares (one per chat, roughly)


class RateLimitedLocally(Exception):
    """Groq said no request is left today, and the next one frees up later than the caller
    is willing to wait."""

    def __init__(self, wait: float, scope: str) -> None:
        super().__init__(f"{scope} window full for {wait:.1f}s")
        self.wait = wait
        self.scope = scope


class PromptOverCap(Exception):
    """The prompt alone leaves no room for an answer under the per-minute token cap."""

    def __init__(self, prompt_tokens: int, cap: int) -> None:
        super().__init__(f"prompt of {prompt_tokens} tokens over the {cap} tokens/min cap")
        self.prompt_tokens = prompt_tokens
        self.cap = cap


@dataclass(frozen=True)
class Plan:
    """What the caller should do: sleep `wait` seconds, then send with `max_tokens`."""

    wait: float
    max_tokens: int
    requested: int
    booking: tuple[float, int] = (0.0, 0)


@dataclass
class ModelLimits:
    """One model's limits as Groq last described them (None: not learned yet)."""

    tokens_per_minute: int | None = None
    requests_per_minute: int | None = None
    requests_per_day: int | None = None
    remaining_tokens: int | None = None
    tokens_reset_at: float | None = None  # Groq's x-ratelimit-reset-tokens, as a time
    remaining_requests_today: int | None = None
    request_frees_at: float | None = None  # when the next daily request frees up
    observed_at: float = 0.0
    sent: deque[tuple[float, int]] = field(default_factory=deque)  # (time, tokens) we sent
    cached_by_prefix: dict[str, int] = field(default_factory=dict)


def _int(headers: Mapping[str, str], name: str) -> int | None:
    value = headers.get(name)
    try:
        return int(float(value)) if value is not None else None
    except ValueError:
        return None


class RateLimiter:
    """Per-model account limits, shared by every caller of one `LLMClient`."""

    def __init__(self, *, window_seconds: float = 60.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.window = window_seconds
        self.clock = clock
        self._models: dict[str, ModelLimits] = {}

    def limits(self, model: str) -> ModelLimits:
        return self._models.setdefault(model, ModelLimits())

    # --- learning ------------------------------------------------------------------------

    def observe_headers(self, model: str, headers: Mapping[str, str]) -> None:
        """Read Groq's `x-ratelimit-*` headers (limit-requests is per DAY, limit-tokens per
        MINUTE, as Groq documents them)."""
        lower = {k.lower(): v for k, v in headers.items()}
        if not any(k.startswith("x-ratelimit-") for k in lower):
            return
        now = self.clock()
        lim = self.limits(model)
        lim.observed_at = now
        tpm = _int(lower, "x-ratelimit-limit-tokens")
        if tpm:
            lim.tokens_per_minute = tpm
        rpd = _int(lower, "x-ratelimit-limit-requests")
        if rpd:
            lim.requests_per_day = rpd
        lim.remaining_tokens = _int(lower, "x-ratelimit-remaining-tokens")
        reset = parse_duration(lower.get("x-ratelimit-reset-tokens"))
        lim.tokens_reset_at = now + reset if reset is not None else None
        lim.remaining_requests_today = _int(lower, "x-ratelimit-remaining-requests")
        frees = parse_duration(lower.get("x-ratelimit-reset-requests"))
        lim.request_frees_at = now + frees if frees is not None else None
        # The server's numbers now include what we sent before this moment; bookings still
        # waiting for their turn stay.
        lim.sent = deque(b for b in lim.sent if b[0] > now)

    def observe_limit(self, model: str, scope: str | None, limit: int | None) -> None:
        """A 413/429 body names the cap that was hit ("... (TPM): Limit 8000 ...")."""
        if not limit or limit <= 0:
            return
        lim = self.limits(model)
        if scope == "TPM":
            lim.tokens_per_minute = limit
        elif scope == "RPM":
            lim.requests_per_minute = limit
        elif scope == "RPD":
            lim.requests_per_day = limit

    def observe_cached(self, model: str, prefix: str, cached_tokens: int) -> None:
        """Cached prompt tokens do not count toward Groq's limits. The last request that began
        with the same `prefix` (a key of its leading message and tools) is the best guess for
        the next one; a request that begins differently (a summary, an extraction) gets none."""
        cached = self.limits(model).cached_by_prefix
        cached[prefix] = max(0, cached_tokens)
        while len(cached) > MAX_PREFIXES:
            cached.pop(next(iter(cached)))

    def token_cap(self, model: str) -> int | None:
        """The most tokens (prompt + max_tokens) one request may ask for on this account."""
        tpm = self.limits(model).tokens_per_minute
        return int(tpm * CAP_MARGIN) if tpm else None

    # --- planning ------------------------------------------------------------------------

    def plan(self, model: str, prompt_tokens: int, max_tokens: int, *,
             max_wait: float, prefix: str = "") -> Plan:
        """How to send a request of `prompt_tokens` asking for up to `max_tokens`.

        Raises PromptOverCap when even the smallest useful answer does not fit the minute's
        cap (the caller compacts), and RateLimitedLocally only when Groq said no daily
        request is left. A per-minute wait is only our estimate: up to `max_wait` it is
        taken (a short wait beats an error); beyond, the request goes now and Groq decides
        (its 429 says exactly how long). The tokens are booked at once, so concurrent callers
        queue behind each other.
        """
        lim = self.limits(model)
        now = self.clock()
        cap = self.token_cap(model)
        if cap is not None:
            room = cap - prompt_tokens
            if room < min(MIN_OUTPUT_TOKENS, max_tokens):
                raise PromptOverCap(prompt_tokens, cap)
            max_tokens = min(max_tokens, room)
        cached = min(lim.cached_by_prefix.get(prefix, 0), prompt_tokens)
        requested = prompt_tokens - cached + max_tokens
        daily = self._daily_wait(lim, now)
        if daily > max_wait:
            raise RateLimitedLocally(daily, "RPD")
        wait = max(self._token_wait(lim, now, requested), self._minute_request_wait(lim, now),
                   daily)
        if wait > max_wait:
            wait = 0.0
        booking = (now + wait, requested)
        lim.sent.append(booking)
        return Plan(wait=wait, max_tokens=max_tokens, requested=requested, booking=booking)

    def cancel(self, model: str, plan: Plan) -> None:
        """Groq refused the request: it spent nothing, so neither does our booking."""
        with contextlib.suppress(ValueError):
            self.limits(model).sent.remove(plan.booking)

    def _prune(self, lim: ModelLimits, now: float) -> None:
        while lim.sent and lim.sent[0][0] <= now - self.window:
            lim.sent.popleft()

    def _available(self, lim: ModelLimits, at: float) -> float:
        """Tokens Groq should accept at time `at`: the last reported remainder, refilled from
        Groq's reset time until one window after the report (what was used before the report
        has left the window by then), minus what we sent since, each booking counted for one
        whole window."""
        tpm = lim.tokens_per_minute
        if tpm is None:
            return float("inf")
        base = float(tpm)
        if lim.remaining_tokens is not None:
            # Nothing comes back before Groq's reset; after it, the rest evenly until one
            # window after the report (both a token bucket and a sliding window are covered).
            start = lim.tokens_reset_at or lim.observed_at
            end = lim.observed_at + self.window
            done = 1.0 if at >= end else max(0.0, (at - start) / max(end - start, 1e-9))
            base = lim.remaining_tokens + (tpm - lim.remaining_tokens) * min(1.0, done)
        pending = sum(tokens for sent_at, tokens in lim.sent if sent_at > at - self.window)
        return min(float(tpm), base) - pending

    def _token_wait(self, lim: ModelLimits, now: float, requested: int) -> float:
        self._prune(lim, now)
        if lim.tokens_per_minute is None or self._available(lim, now) >= requested:
            return 0.0
        # Room grows with time: the earliest instant that is enough, among the moments a
        # booking leaves the window and a fine grid over the window.
        step = self.window / 120
        moments = sorted({*(t + self.window for t, _ in lim.sent if t + self.window > now),
                          *(now + step * k for k in range(1, 121))})
        for at in moments:
            if self._available(lim, at) >= requested:
                return at - now
        return self.window

    def _minute_request_wait(self, lim: ModelLimits, now: float) -> float:
        rpm = lim.requests_per_minute
        recent = [t for t, _ in lim.sent if t > now - self.window]
        if rpm and len(recent) >= rpm:
            return recent[len(recent) - rpm] + self.window - now
        return 0.0

    def _daily_wait(self, lim: ModelLimits, now: float) -> float:
        if lim.remaining_requests_today == 0 and lim.request_frees_at is not None:
            return max(0.0, lim.request_frees_at - now)
        return 0.0

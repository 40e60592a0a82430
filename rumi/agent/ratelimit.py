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


class RateLimitedLocally(Exception):
    """Waiting for room would take longer than the caller allows."""

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
    tokens_reset_at: float | None = None  # when the minute window is full again
    remaining_requests_today: int | None = None
    request_frees_at: float | None = None  # when the next daily request frees up
    observed_at: float = 0.0
    sent: deque[tuple[float, int]] = field(default_factory=deque)  # (time, tokens) we sent
    last_cached: int = 0


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

    def observe_cached(self, model: str, cached_tokens: int) -> None:
        """Cached prompt tokens do not count toward Groq's limits; the last request's share
        is the best guess for the next one of the same conversation."""
        self.limits(model).last_cached = max(0, cached_tokens)

    def token_cap(self, model: str) -> int | None:
        """The most tokens (prompt + max_tokens) one request may ask for on this account."""
        tpm = self.limits(model).tokens_per_minute
        return int(tpm * CAP_MARGIN) if tpm else None

    # --- planning ------------------------------------------------------------------------

    def plan(self, model: str, prompt_tokens: int, max_tokens: int, *,
             max_wait: float) -> Plan:
        """How to send a request of `prompt_tokens` asking for up to `max_tokens`.

        Raises PromptOverCap when even the smallest useful answer does not fit the minute's
        cap (the caller compacts), RateLimitedLocally when the wait exceeds `max_wait`.
        The tokens are booked at once, so concurrent callers queue behind each other.
        """
        lim = self.limits(model)
        now = self.clock()
        cap = self.token_cap(model)
        if cap is not None:
            room = cap - prompt_tokens
            if room < min(MIN_OUTPUT_TOKENS, max_tokens):
                raise PromptOverCap(prompt_tokens, cap)
            max_tokens = min(max_tokens, room)
        requested = max(max_tokens, prompt_tokens - lim.last_cached + max_tokens)
        wait = max(self._token_wait(lim, now, requested), self._request_wait(lim, now))
        if wait > max_wait:
            raise RateLimitedLocally(wait, self._scope_of_wait(lim, now, requested))
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
        """Tokens Groq will accept at time `at`: the last reported remainder until its reset
        (Groq frees a window's tokens when it resets, as its docs' header example shows),
        minus what we sent since, each booking counted for one whole window."""
        tpm = lim.tokens_per_minute
        if tpm is None:
            return float("inf")
        base = float(tpm)
        if (lim.remaining_tokens is not None and lim.tokens_reset_at is not None
                and at < lim.tokens_reset_at):
            base = float(lim.remaining_tokens)
        pending = sum(tokens for sent_at, tokens in lim.sent if sent_at > at - self.window)
        return min(float(tpm), base) - pending

    def _token_wait(self, lim: ModelLimits, now: float, requested: int) -> float:
        self._prune(lim, now)
        if lim.tokens_per_minute is None or self._available(lim, now) >= requested:
            return 0.0
        # Room only comes back when the server's window resets or a booking of ours leaves
        # the window: the earliest of those instants that is enough.
        moments = sorted({t + self.window for t, _ in lim.sent if t + self.window > now}
                         | ({lim.tokens_reset_at} if lim.tokens_reset_at else set()))
        for at in moments:
            if at > now and self._available(lim, at) >= requested:
                return at - now
        return self.window

    def _request_wait(self, lim: ModelLimits, now: float) -> float:
        waits = [0.0]
        rpm = lim.requests_per_minute
        recent = [t for t, _ in lim.sent if t > now - self.window]
        if rpm and len(recent) >= rpm:
            waits.append(recent[len(recent) - rpm] + self.window - now)
        if lim.remaining_requests_today == 0 and lim.request_frees_at is not None:
            waits.append(lim.request_frees_at - now)
        return max(waits)

    def _scope_of_wait(self, lim: ModelLimits, now: float, requested: int) -> str:
        if lim.remaining_requests_today == 0:
            return "RPD"
        if self._token_wait(lim, now, requested) >= self._request_wait(lim, now):
            return "TPM"
        return "RPM"

"""What a request costs at the fake Groq: prompt-cache hits and rate limits.

Both are about tokens Groq does or does not charge: cached prompt tokens are not counted
against TPM, and the whole output budget a request asks for is (whether or not it is used).
Durations are real seconds of whatever window the test chose, so a test that shrinks the
minute to 2 s sees retry-after values it can actually wait out.
"""

from __future__ import annotations

import json
import math
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tests.fakes.groq_catalogue import GroqError, error_body

ORGANIZATION = "org_01fake"
UPGRADE = "Need more tokens? Upgrade to Dev Tier today at https://console.groq.com/settings/billing"
SCOPES = {
    "RPM": ("requests per minute", "requests"),
    "RPD": ("requests per day", "requests"),
    "TPM": ("tokens per minute", "tokens"),
    "TPD": ("tokens per day", "tokens"),
}


@dataclass(frozen=True)
class Limits:
    """One model's limits; None means unlimited on that axis."""

    rpm: int | None = None
    rpd: int | None = None
    tpm: int | None = None
    tpd: int | None = None


FREE_TIER_ROW = Limits(rpm=30, rpd=1_000, tpm=8_000, tpd=200_000)
FREE_TIER: dict[str, Limits] = {
    "openai/gpt-oss-120b": FREE_TIER_ROW,
    "openai/gpt-oss-20b": FREE_TIER_ROW,
    "qwen/qwen3.6-27b": FREE_TIER_ROW,
}


def format_duration(seconds: float, decimals: int = 2) -> str:
    """Groq's (Go-style) durations: "1h2m3s", "2m59.56s", "45.2s", "0s". Sub-second values are
    written "0.45s" rather than Go's "450ms" so one simple parser reads every value."""
    seconds = max(0.0, round(seconds, decimals))
    if seconds == 0:
        return "0s"
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    text = f"{round(secs, decimals):.{decimals}f}".rstrip("0").rstrip(".")
    parts = [f"{int(hours)}h" if hours else "", f"{int(minutes)}m" if hours or minutes else ""]
    return "".join(parts) + f"{text}s"


def rate_limit_error(model: str, scope: str, limit: int, used: int, requested: int,
                     retry_after: float) -> GroqError:
    """The 429 Groq sends when the window is full, with `retry-after` in whole seconds."""
    words, type_ = SCOPES[scope]
    message = (f"Rate limit reached for model `{model}` in organization `{ORGANIZATION}` service "
               f"tier `on_demand` on {words} ({scope}): Limit {limit}, Used {used}, Requested "
               f"{requested}. Please try again in {format_duration(retry_after, 3)}. {UPGRADE}")
    return GroqError(429, error_body(message, type_, "rate_limit_exceeded"),
                     {"retry-after": str(max(1, math.ceil(retry_after)))})


def request_too_large_error(model: str, limit: int, requested: int,
                            scope: str = "TPM") -> GroqError:
    """The 413 for a request that could never fit the window; no retry-after, waiting won't
    help."""
    words, type_ = SCOPES[scope]
    message = (f"Request too large for model `{model}` in organization `{ORGANIZATION}` service "
               f"tier `on_demand` on {words} ({scope}): Limit {limit}, Requested {requested}, "
               f"please reduce your message size and try again. {UPGRADE}")
    return GroqError(413, error_body(message, type_, "rate_limit_exceeded"))


@dataclass
class LimitCounters:
    accepted: int = 0
    rate_limited: int = 0  # 429s
    too_large: int = 0  # 413s


@dataclass
class _Usage:
    """Accepted requests of one model, oldest first, as (time, tokens)."""

    events: deque[tuple[float, int]] = field(default_factory=deque)

    def since(self, start: float) -> list[tuple[float, int]]:
        return [event for event in self.events if event[0] > start]


class RateLimiter:
    """Sliding-window RPM/TPM (over `window_seconds`) and RPD/TPD (over `day_seconds`)."""

    def __init__(self, clock: Callable[[], float], window_seconds: float = 60.0,
                 day_seconds: float = 86_400.0) -> None:
        self.clock = clock
        self.window_seconds = window_seconds
        self.day_seconds = day_seconds
        self.limits: dict[str, Limits] = {}
        self.counters = LimitCounters()
        self._usage: dict[str, _Usage] = {}

    def _windows(self, model: str) -> tuple[float, list[tuple[float, int]],
                                            list[tuple[float, int]]]:
        now = self.clock()
        usage = self._usage.setdefault(model, _Usage())
        while usage.events and usage.events[0][0] <= now - self.day_seconds:
            usage.events.popleft()
        return now, usage.since(now - self.window_seconds), list(usage.events)

    def check(self, model: str, tokens: int) -> None:
        """Raise the 413/429 Groq would send for `tokens` more, counting nothing either way."""
        limits = self.limits.get(model)
        if limits is None:
            return
        if limits.tpm is not None and tokens > limits.tpm:
            self.counters.too_large += 1
            raise request_too_large_error(model, limits.tpm, tokens)
        if limits.tpd is not None and tokens > limits.tpd:
            self.counters.too_large += 1
            raise request_too_large_error(model, limits.tpd, tokens, "TPD")
        now, minute, day = self._windows(model)
        refusals = [
            refusal for refusal in (
                _over("RPM", limits.rpm, minute, 1, self.window_seconds, now, count=True),
                _over("TPM", limits.tpm, minute, tokens, self.window_seconds, now),
                _over("RPD", limits.rpd, day, 1, self.day_seconds, now, count=True),
                _over("TPD", limits.tpd, day, tokens, self.day_seconds, now),
            ) if refusal is not None
        ]
        if refusals:
            self.counters.rate_limited += 1
            scope, limit, used, requested, wait = max(refusals, key=lambda r: r[4])
            raise rate_limit_error(model, scope, limit, used, requested, wait)

    def record(self, model: str, tokens: int) -> None:
        self.counters.accepted += 1
        if model in self.limits:
            self._usage.setdefault(model, _Usage()).events.append((self.clock(), tokens))

    def headers(self, model: str) -> dict[str, str]:
        """Groq's x-ratelimit-* headers: daily requests, per-window tokens."""
        limits = self.limits.get(model)
        if limits is None:
            return {}
        now, minute, day = self._windows(model)
        headers: dict[str, str] = {}
        if limits.rpd is not None:
            reset = day[0][0] + self.day_seconds - now if day else 0.0
            headers |= {"x-ratelimit-limit-requests": str(limits.rpd),
                        "x-ratelimit-remaining-requests": str(max(0, limits.rpd - len(day))),
                        "x-ratelimit-reset-requests": format_duration(reset)}
        if limits.tpm is not None:
            used = sum(tokens for _, tokens in minute)
            reset = minute[0][0] + self.window_seconds - now if minute else 0.0
            headers |= {"x-ratelimit-limit-tokens": str(limits.tpm),
                        "x-ratelimit-remaining-tokens": str(max(0, limits.tpm - used)),
                        "x-ratelimit-reset-tokens": format_duration(reset)}
        return headers


def _over(scope: str, limit: int | None, events: list[tuple[float, int]], requested: int,
          span: float, now: float, count: bool = False
          ) -> tuple[str, int, int, int, float] | None:
    """(scope, limit, used, requested, seconds to wait) if `requested` more would not fit:
    the wait is until enough of the oldest events leave the window to make room."""
    if limit is None:
        return None
    weights = [1 if count else tokens for _, tokens in events]
    used = sum(weights)
    if used + requested <= limit:
        return None
    freed = 0
    for (when, _), weight in zip(events, weights, strict=True):
        freed += weight
        if used - freed + requested <= limit:
            return scope, limit, used, requested, when + span - now
    return scope, limit, used, requested, span


def canonical_prompt(body: dict[str, Any]) -> str:
    """The request in the order the model reads it: leading system messages, then the tool
    definitions, then everything else. A cache hit is a shared prefix of this string."""
    messages = list(body.get("messages") or [])
    lead = 0
    while lead < len(messages) and messages[lead].get("role") == "system":
        lead += 1
    parts = [json.dumps(message, sort_keys=True) for message in messages[:lead]]
    if body.get("tools"):
        parts.append(json.dumps(body["tools"], sort_keys=True))
    parts += [json.dumps(message, sort_keys=True) for message in messages[lead:]]
    return "\n".join(parts)


def _common_prefix(a: str, b: str) -> int:
    low, high = 0, min(len(a), len(b))
    while low < high:  # binary search: slice comparisons run in C
        mid = (low + high + 1) // 2
        if a[:mid] == b[:mid]:
            low = mid
        else:
            high = mid - 1
    return low


class PromptCache:
    """Automatic prefix caching per model, entries kept `ttl_seconds` (Groq: 2 h)."""

    def __init__(self, clock: Callable[[], float], ttl_seconds: float = 7_200.0) -> None:
        self.clock = clock
        self.ttl_seconds = ttl_seconds
        self._entries: dict[str, list[tuple[float, str]]] = {}

    def _live(self, model: str) -> list[tuple[float, str]]:
        horizon = self.clock() - self.ttl_seconds
        entries = [entry for entry in self._entries.get(model, []) if entry[0] > horizon]
        self._entries[model] = entries
        return entries

    def hit_chars(self, model: str, prompt: str) -> int:
        """Longest prefix `prompt` shares with a live earlier prompt to `model`."""
        return max((_common_prefix(prompt, text) for _, text in self._live(model)), default=0)

    def store(self, model: str, prompt: str) -> None:
        """Remember a served prompt; an entry it extends can never win again, so it goes."""
        entries = [entry for entry in self._live(model) if not prompt.startswith(entry[1])]
        entries.append((self.clock(), prompt))
        self._entries[model] = entries

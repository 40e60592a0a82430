"""What a request costs at the fake Groq: prompt-cache hits and rate limits.

Rate limits are modelled on Groq's own figures. Each model of the organisation has its own row
(Groq's limits page: gpt-oss-120b and gpt-oss-20b each 1K requests and 200K tokens a day on
the free tier), and each limit is a bucket refilled continuously at limit ÷ window: Groq's 429s
say "try again in" exactly the time the missing amount takes to drip back ("Limit 5000, Used
5747, Requested ~4251. Please try again in 59.977s" = 4,998 tokens at 5,000/60 s, crewAI issue
#494), and `x-ratelimit-reset-*` is the time until the bucket is full (Groq's docs:
"2m59.56s" for 30 of 14,400 requests a day). A request is admitted when its whole prompt,
cached tokens included, plus the completion budget it asks for is in the bucket; once it ran,
the uncached prompt and the completion it produced are taken out (Groq: cached tokens do not
count toward the limits). Some organisations also have ITPM/OTPM rows (Groq's docs).
Durations are real seconds of whatever window the test chose, so a test that shrinks the
minute to 2 s sees retry-after values it can actually wait out.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tests.fakes.groq_catalogue import GroqError, error_body

ORGANIZATION = "org_01fake"
UPGRADE = "Need more tokens? Upgrade to Dev Tier today at https://console.groq.com/settings/billing"
SCOPES = {
    "RPM": ("requests per minute", "requests"),
    "RPD": ("requests per day", "requests"),
    "TPM": ("tokens per minute", "tokens"),
    "TPD": ("tokens per day", "tokens"),
    "ITPM": ("input tokens per minute", "tokens"),
    "OTPM": ("output tokens per minute", "tokens"),
}
DAILY = frozenset({"RPD", "TPD"})


@dataclass(frozen=True)
class Limits:
    """One model's limits; None means unlimited on that axis."""

    rpm: int | None = None
    rpd: int | None = None
    tpm: int | None = None
    tpd: int | None = None
    itpm: int | None = None
    otpm: int | None = None

    def rows(self) -> dict[str, int]:
        values = {"RPM": self.rpm, "RPD": self.rpd, "TPM": self.tpm, "TPD": self.tpd,
                  "ITPM": self.itpm, "OTPM": self.otpm}
        return {scope: limit for scope, limit in values.items() if limit is not None}


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
    """The 429 Groq sends when the bucket is short, with `retry-after` in whole seconds."""
    words, type_ = SCOPES[scope]
    message = (f"Rate limit reached for model `{model}` in organization `{ORGANIZATION}` service "
               f"tier `on_demand` on {words} ({scope}): Limit {limit}, Used {used}, Requested "
               f"{requested}. Please try again in {format_duration(retry_after, 3)}. {UPGRADE}")
    return GroqError(429, error_body(message, type_, "rate_limit_exceeded"),
                     {"retry-after": str(max(1, math.ceil(retry_after)))})


def request_too_large_error(model: str, limit: int, requested: int,
                            scope: str = "TPM") -> GroqError:
    """The 413 for a request that could never fit the bucket; no retry-after, waiting won't
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


@dataclass(frozen=True)
class Refusal:
    """One 429 the limiter sent: which model and limit, and Groq's wait (exact and header)."""

    model: str
    scope: str
    wait: float
    retry_after: int


@dataclass
class _Level:
    """What was in one bucket at time `at`."""

    level: float
    at: float


def admission(scope: str, prompt: int, budget: int) -> int:
    """What a request needs in `scope`'s bucket to be admitted."""
    return {"RPM": 1, "RPD": 1, "ITPM": prompt, "OTPM": budget}.get(scope, prompt + budget)


def charge(scope: str, uncached: int, completion: int) -> int:
    """What a request that ran takes out of `scope`'s bucket."""
    return {"RPM": 1, "RPD": 1, "ITPM": uncached, "OTPM": completion}.get(scope,
                                                                         uncached + completion)


class RateLimiter:
    """Per-model buckets, refilled over `window_seconds` (minute limits) or `day_seconds`."""

    def __init__(self, clock: Callable[[], float], window_seconds: float = 60.0,
                 day_seconds: float = 86_400.0) -> None:
        self.clock = clock
        self.window_seconds = window_seconds
        self.day_seconds = day_seconds
        self.limits: dict[str, Limits] = {}
        self.counters = LimitCounters()
        self.refusals: list[Refusal] = []
        self._levels: dict[tuple[str, str], _Level] = {}

    def _rate(self, scope: str, limit: int) -> float:
        return limit / (self.day_seconds if scope in DAILY else self.window_seconds)

    def level(self, model: str, scope: str) -> float:
        """What is in `scope`'s bucket of `model` now (full when never used)."""
        limit = self.limits[model].rows()[scope]
        state = self._levels.get((model, scope))
        if state is None:
            return float(limit)
        now = self.clock()
        return min(float(limit), state.level + (now - state.at) * self._rate(scope, limit))

    def _take(self, model: str, scope: str, amount: float) -> None:
        self._levels[(model, scope)] = _Level(self.level(model, scope) - amount, self.clock())

    def spend(self, model: str, scope: str) -> None:
        """Empty one bucket now, as if the organisation had used it elsewhere (another app on
        the same account, an earlier run)."""
        self._levels[(model, scope)] = _Level(0.0, self.clock())

    def check(self, model: str, prompt_tokens: int, budget: int) -> None:
        """Raise the 413/429 Groq would send for this request, counting nothing either way."""
        limits = self.limits.get(model)
        if limits is None:
            return
        rows = limits.rows()
        for scope in ("TPM", "TPD", "ITPM", "OTPM"):
            if scope in rows and admission(scope, prompt_tokens, budget) > rows[scope]:
                self.counters.too_large += 1
                raise request_too_large_error(model, rows[scope],
                                              admission(scope, prompt_tokens, budget), scope)
        refusals = []
        for scope, limit in rows.items():
            needed = admission(scope, prompt_tokens, budget)
            level = self.level(model, scope)
            if level < needed:
                wait = (needed - level) / self._rate(scope, limit)
                refusals.append((scope, limit, round(limit - level), needed, wait))
        if refusals:
            self.counters.rate_limited += 1
            scope, limit, used, requested, wait = max(refusals, key=lambda r: r[4])
            error = rate_limit_error(model, scope, limit, used, requested, wait)
            self.refusals.append(Refusal(model, scope, wait, int(error.headers["retry-after"])))
            raise error

    def record(self, model: str, uncached_prompt: int, completion: int) -> None:
        self.counters.accepted += 1
        limits = self.limits.get(model)
        if limits is None:
            return
        for scope in limits.rows():
            self._take(model, scope, charge(scope, uncached_prompt, completion))

    def headers(self, model: str) -> dict[str, str]:
        """Groq's x-ratelimit-* headers: requests per day, tokens per minute; each reset is
        the time until that bucket is full."""
        limits = self.limits.get(model)
        if limits is None:
            return {}
        rows = limits.rows()
        headers: dict[str, str] = {}
        for scope, kind in (("RPD", "requests"), ("TPM", "tokens")):
            if scope not in rows:
                continue
            limit, level = rows[scope], self.level(model, scope)
            reset = (limit - level) / self._rate(scope, limit)
            headers |= {f"x-ratelimit-limit-{kind}": str(limit),
                        f"x-ratelimit-remaining-{kind}": str(max(0, math.floor(level + 1e-9))),
                        f"x-ratelimit-reset-{kind}": format_duration(reset)}
        return headers


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

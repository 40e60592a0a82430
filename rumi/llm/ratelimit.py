"""Pacing requests as Groq paces them, from what Groq itself says.

Groq limits each model of an organisation separately (requests and tokens per minute and per
day; some organisations also have input- and output-tokens-per-minute limits, ITPM/OTPM), and
every limit behaves like a bucket that refills continuously at limit ÷ window: its 429s say
"try again in" exactly the time the missing tokens take to drip back (Groq: "Limit 5000,
Used 5747, Requested ~4251. Please try again in 59.977s" is 4,998 tokens at 5,000/60 s), and
its `x-ratelimit-reset-*` headers give the time until the bucket is *full* again (1,000
requests a day come back one every 86.4 s). A request is admitted when its whole prompt
(cached tokens included) plus the completion budget it asks for is in the bucket; what is
taken out afterwards is the uncached prompt plus the completion actually produced.

So before every request the client asks this module how long to wait so the request fits,
how large its completion budget may be, and whether the prompt itself is too big for the
account (then the caller compacts). Estimates are only estimates: a wait longer than the
caller accepts is never a refusal, the request goes and Groq decides. Only Groq's own answer
(a daily 429 with its "try again in") makes a model unusable for a while; the client then
answers with a fallback model, whose quota is its own.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from rumi.llm.provider_errors import DAILY_SCOPES, parse_duration

# Below this, an answer (reasoning included) is not worth sending: shrink the prompt instead.
MIN_OUTPUT_TOKENS = 256
# Leave a little room under the cap: our prompt count and Groq's differ by a few percent.
CAP_MARGIN = 0.97
MAX_PREFIXES = 256  # remembered cache shares (one per chat, roughly)
MINUTE_SCOPES = frozenset({"RPM", "TPM", "ITPM", "OTPM"})
KNOWN_SCOPES = MINUTE_SCOPES | {"RPD", "TPD"}


class RateLimitedLocally(Exception):
    """Groq itself said this model's daily quota is spent for `wait` more seconds (its 429's
    own figure, never our estimate)."""

    def __init__(self, wait: float, scope: str) -> None:
        super().__init__(f"{scope} spent for {wait:.1f}s more (Groq's figure)")
        self.wait = wait
        self.scope = scope


class PromptOverCap(Exception):
    """The prompt alone leaves no room for an answer under the per-minute token cap."""

    def __init__(self, prompt_tokens: int, cap: int) -> None:
        super().__init__(f"prompt of {prompt_tokens} tokens over the {cap} tokens/min cap")
        self.prompt_tokens = prompt_tokens
        self.cap = cap


@dataclass
class Bucket:
    """One limit: `limit` units refilled continuously over `span` seconds.

    `level` is what was in the bucket at time `at` (negative while bookings wait their turn);
    `full_at` is Groq's own word (the reset header) for when it is full again, which bounds
    every wait whatever our rate says."""

    limit: int
    span: float
    level: float
    at: float
    full_at: float | None = None

    @property
    def rate(self) -> float:
        return self.limit / self.span

    def level_at(self, t: float) -> float:
        if self.full_at is not None and t >= self.full_at:
            return float(self.limit)
        return min(float(self.limit), self.level + (t - self.at) * self.rate)

    def wait_for(self, amount: float, t: float) -> float:
        """Seconds from `t` until `amount` fits (0: now)."""
        missing = amount - self.level_at(t)
        if missing <= 0:
            return 0.0
        wait = missing / self.rate
        if self.full_at is not None and amount <= self.limit:
            wait = min(wait, max(0.0, self.full_at - t))
        return wait

    def take(self, amount: float, t: float) -> None:
        self.level, self.at = self.level_at(t) - amount, t
        if self.full_at is not None:
            self.full_at = max(self.full_at, t) + amount / self.rate

    def give(self, amount: float, t: float) -> None:
        self.take(-amount, t)

    def report(self, remaining: float, t: float, full_in: float | None) -> None:
        """Groq's figures replace ours."""
        self.level, self.at = remaining, t
        self.full_at = t + full_in if full_in is not None else None


@dataclass(frozen=True)
class Plan:
    """What the caller should do: sleep `wait` seconds, then send with `max_tokens`.

    `requested` is what Groq checks at admission (whole prompt plus budget); `charges` what
    was booked per limit, settled once the answer says what was really used."""

    wait: float
    max_tokens: int
    requested: int
    charges: tuple[tuple[str, float], ...] = ()
    send_at: float = 0.0
    uncached: int = 0


@dataclass
class ModelLimits:
    """One model's limits as Groq last described them; every model has its own."""

    buckets: dict[str, Bucket] = field(default_factory=dict)
    remaining_tokens: int | None = None  # as Groq last reported them (for /status)
    remaining_requests_today: int | None = None
    spent_until: dict[str, float] = field(default_factory=dict)  # daily scope -> Groq's time
    pending: list[Plan] = field(default_factory=list)  # booked, not yet sent
    cached_by_prefix: dict[str, int] = field(default_factory=dict)

    def limit(self, scope: str) -> int | None:
        bucket = self.buckets.get(scope)
        return bucket.limit if bucket else None

    @property
    def tokens_per_minute(self) -> int | None:
        return self.limit("TPM")

    @property
    def requests_per_day(self) -> int | None:
        return self.limit("RPD")


def _int(headers: Mapping[str, str], name: str) -> int | None:
    value = headers.get(name)
    try:
        return int(float(value)) if value is not None else None
    except ValueError:
        return None


def scope_tokens(scope: str, input_tokens: int, output_tokens: int) -> int:
    """What one request weighs in `scope`. Groq admits a request on its whole prompt (cached
    tokens included) plus its completion budget, and afterwards charges the uncached prompt
    plus the completion: callers pass those two pairs, the weighing is the same."""
    if scope in ("RPM", "RPD"):
        return 1
    if scope == "ITPM":
        return input_tokens
    if scope == "OTPM":
        return output_tokens
    return input_tokens + output_tokens


def _with_margin(scope: str, amount: int, limit: int) -> float:
    """Our token count and Groq's differ by a few percent: wait for a little more."""
    if scope in ("RPM", "RPD"):
        return amount
    return min(float(limit), amount / CAP_MARGIN)


class RateLimiter:
    """Per-model account limits, shared by every caller of one `LLMClient`."""

    def __init__(self, *, window_seconds: float = 60.0, day_seconds: float = 86_400.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.window = window_seconds
        self.day = day_seconds
        self.clock = clock
        self._models: dict[str, ModelLimits] = {}

    def limits(self, model: str) -> ModelLimits:
        return self._models.setdefault(model, ModelLimits())

    def _bucket(self, lim: ModelLimits, scope: str, limit: int) -> Bucket:
        bucket = lim.buckets.get(scope)
        if bucket is None:
            span = self.window if scope in MINUTE_SCOPES else self.day
            bucket = lim.buckets[scope] = Bucket(limit, span, float(limit), self.clock())
        bucket.limit = limit
        return bucket

    # --- learning ------------------------------------------------------------------------

    def observe_headers(self, model: str, headers: Mapping[str, str]) -> None:
        """Groq's `x-ratelimit-*` headers: limit-requests is per DAY and limit-tokens per
        MINUTE (as Groq documents them); each reset is the time until that bucket is full."""
        lower = {k.lower(): v for k, v in headers.items()}
        if not any(k.startswith("x-ratelimit-") for k in lower):
            return
        now = self.clock()
        lim = self.limits(model)
        lim.pending = [p for p in lim.pending if p.send_at > now]
        for scope, kind in (("TPM", "tokens"), ("RPD", "requests")):
            limit = _int(lower, f"x-ratelimit-limit-{kind}")
            remaining = _int(lower, f"x-ratelimit-remaining-{kind}")
            if scope == "TPM":
                lim.remaining_tokens = remaining
            else:
                lim.remaining_requests_today = remaining
            if not limit:
                continue
            bucket = self._bucket(lim, scope, limit)
            if remaining is not None:
                full_in = parse_duration(lower.get(f"x-ratelimit-reset-{kind}"))
                bucket.report(remaining, now, full_in)
                # Groq's figure counts what it has seen; bookings still waiting for their
                # turn are ours to add.
                for plan in lim.pending:
                    bucket.take(dict(plan.charges).get(scope, 0.0), now)

    def observe_limit(self, model: str, scope: str | None, limit: int | None, *,
                      used: int | None = None, requested: int | None = None,
                      retry_after: float | None = None) -> None:
        """A 413/429 body names the limit that was hit ("… (TPM): Limit 8000, Used 7012 …").
        A scope Rumi does not know is recorded as nothing: guessing it is TPM would shrink
        every request for a limit that may not exist. A 429's "try again in" is Groq's own
        figure: the bucket is set so that what was requested fits exactly then, and a daily
        one is Groq's word that this model answers nothing before then."""
        if scope not in KNOWN_SCOPES or not limit or limit <= 0:
            return
        now = self.clock()
        lim = self.limits(model)
        bucket = self._bucket(lim, scope, limit)
        if requested is not None and retry_after is not None:
            bucket.report(min(limit, requested) - retry_after * bucket.rate, now, None)
        elif used is not None:
            bucket.report(limit - used, now, None)
        if scope in DAILY_SCOPES and retry_after is not None:
            lim.spent_until[scope] = now + retry_after

    def observe_cached(self, model: str, prefix: str, cached_tokens: int) -> None:
        """Cached prompt tokens are not charged once a request ran. The last request that
        began with the same `prefix` (a key of its leading message and tools) is the best
        guess for the next one; a request that begins differently gets none."""
        cached = self.limits(model).cached_by_prefix
        cached[prefix] = max(0, cached_tokens)
        while len(cached) > MAX_PREFIXES:
            cached.pop(next(iter(cached)))

    def token_cap(self, model: str) -> int | None:
        """The most tokens (prompt + max_tokens) one request may ask for on this account."""
        tpm = self.limits(model).tokens_per_minute
        return int(tpm * CAP_MARGIN) if tpm else None

    def quota_wait(self, model: str) -> float:
        """Seconds until Groq said this model answers again after a daily 429 (0: it may)."""
        now = self.clock()
        spent = self.limits(model).spent_until
        return max((until - now for until in spent.values()), default=0.0) if spent else 0.0

    # --- planning ------------------------------------------------------------------------

    def plan(self, model: str, prompt_tokens: int, max_tokens: int, *,
             max_wait: float, prefix: str = "") -> Plan:
        """How to send a request of `prompt_tokens` asking for up to `max_tokens`.

        Raises PromptOverCap when even the smallest useful answer does not fit a per-minute
        cap (the caller compacts), and RateLimitedLocally only while Groq's own daily 429
        figure has not passed. Every other wait is our estimate: up to `max_wait` it is taken
        (a short wait beats an error); beyond, the request goes now and Groq decides — when
        in doubt, ask Groq. The request is booked at once, so concurrent callers queue.
        """
        lim = self.limits(model)
        now = self.clock()
        max_tokens = self._fit(lim, prompt_tokens, max_tokens)
        spent = self.quota_wait(model)
        if spent > max_wait:
            scope = max(lim.spent_until, key=lambda s: lim.spent_until[s])
            raise RateLimitedLocally(spent, scope)
        wait = max([spent, *(bucket.wait_for(_with_margin(
            scope, scope_tokens(scope, prompt_tokens, max_tokens), bucket.limit), now)
            for scope, bucket in lim.buckets.items())])
        if wait > max_wait:
            wait = 0.0
        cached = min(lim.cached_by_prefix.get(prefix, 0), prompt_tokens)
        uncached = prompt_tokens - cached
        send_at = now + wait
        charges = tuple((scope, float(scope_tokens(scope, uncached, max_tokens)))
                        for scope in lim.buckets)
        for scope, amount in charges:
            lim.buckets[scope].take(amount, send_at)
        plan = Plan(wait=wait, max_tokens=max_tokens, requested=prompt_tokens + max_tokens,
                    charges=charges, send_at=send_at, uncached=uncached)
        lim.pending.append(plan)
        return plan

    def _fit(self, lim: ModelLimits, prompt_tokens: int, max_tokens: int) -> int:
        """The budget shrunk to every per-minute cap; PromptOverCap when nothing useful fits."""
        smallest = min(MIN_OUTPUT_TOKENS, max_tokens)
        for scope, room in (("TPM", None), ("ITPM", 0), ("OTPM", None)):
            limit = lim.limit(scope)
            if not limit:
                continue
            cap = int(limit * CAP_MARGIN)
            if scope == "OTPM":
                max_tokens = min(max_tokens, cap)
                continue
            room = cap - prompt_tokens
            if room < (smallest if scope == "TPM" else 0):
                raise PromptOverCap(prompt_tokens, cap)
            if scope == "TPM":
                max_tokens = min(max_tokens, room)
        return max_tokens

    def settle(self, model: str, plan: Plan, uncached_prompt: int, completion: int) -> None:
        """The request ran: give back what was booked beyond what Groq charges (the unused
        completion budget, a better-cached prompt). Groq's headers, read next, override."""
        self._release(model, plan, lambda scope: scope_tokens(scope, uncached_prompt, completion))

    def cancel(self, model: str, plan: Plan) -> None:
        """Groq refused the request: it spent nothing, so neither does our booking."""
        self._release(model, plan, lambda scope: 0)

    def _release(self, model: str, plan: Plan, spent: Callable[[str], int]) -> None:
        lim = self.limits(model)
        with contextlib.suppress(ValueError):
            lim.pending.remove(plan)
        now = self.clock()
        for scope, booked in plan.charges:
            bucket = lim.buckets.get(scope)
            if bucket is not None:
                bucket.give(booked - spent(scope), now)

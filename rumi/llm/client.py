"""The one door to the model: Groq chat completions that fit the account and fail plainly.

Everything that talks to the LLM (agent loop, compaction summaries, fact extraction, slugs)
goes through `LLMClient.complete`, so what Groq really does is handled once, here:

- requests are paced to the account's limits (`ratelimit.py`), learned from Groq's headers;
- a 429 with a short `retry-after` is waited out in one sleep, a longer one (a daily limit)
  is answered at once with the time it will take;
- a model Groq no longer serves is replaced by the first working fallback, once, and the
  switch is remembered so the person can be told;
- a model whose daily quota Groq says is spent (limits are per model) is skipped until Groq's
  own time for it has passed: the next configured fallback with quota answers meanwhile;
- every other failure becomes one typed exception the caller turns into a clear sentence;
- the request never carries fields Groq rejects (`reasoning_content`) or history it would
  refuse (tool-call arguments that are not JSON).
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import json
import logging
import random
import time
from dataclasses import dataclass, field
from typing import Any, NoReturn

import groq

from rumi.config import LLMSettings
from rumi.llm.provider_errors import ProviderError, classify
from rumi.llm.ratelimit import Plan, PromptOverCap, RateLimitedLocally, RateLimiter
from rumi.llm.usage_day import DayUsageFile

log = logging.getLogger(__name__)

# Reasoning tokens come out of the answer's budget: a background call that asks for a short
# JSON answer gets this much more room to think first.
REASONING_ALLOWANCE = {"low": 512, "medium": 1_536, "high": 4_096}
REASONING_PREFIXES = ("openai/gpt-oss",)
ASSISTANT_FIELDS = ("role", "content", "tool_calls", "name", "reasoning")
OTHER_FIELDS = ("role", "content", "tool_call_id", "name")
CHARS_PER_TOKEN = 3.2
GONE_RECHECK_SECONDS = 600.0  # a cautious estimate, used only when the caller did not count


def is_reasoning_model(model: str) -> bool:
    return model.startswith(REASONING_PREFIXES)


class LLMUnavailable(Exception):
    """The model could not answer; the message is safe to log, not to show."""

    def __init__(self, message: str, *, error: ProviderError | None = None) -> None:
        super().__init__(message)
        self.error = error


class ContextTooLong(LLMUnavailable):
    """The prompt (plus `max_tokens`) is over the model's window: compact and retry."""


class RequestTooLarge(LLMUnavailable):
    """The prompt does not fit the account's tokens-per-minute cap: compact and retry."""


class RateLimited(LLMUnavailable):
    """Waiting for the account's limits would take longer than a person should wait."""

    def __init__(self, message: str, *, retry_after: float, daily: bool,
                 error: ProviderError | None = None) -> None:
        super().__init__(message, error=error)
        self.retry_after = retry_after
        self.daily = daily


class AuthFailed(LLMUnavailable):
    """Groq refused the API key (401/403)."""


class ModelGone(LLMUnavailable):
    """Neither the configured model nor any fallback is served any more."""

    def __init__(self, message: str, *, models: list[str],
                 error: ProviderError | None = None) -> None:
        super().__init__(message, error=error)
        self.models = models


class ProviderDown(LLMUnavailable):
    """Groq is unreachable or failing (5xx, 498, timeouts) after the retries."""


class ToolUseFailed(LLMUnavailable):
    """Groq could not parse the model's tool call (400 `tool_use_failed`)."""


@dataclass(frozen=True)
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    reasoning_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(self.prompt_tokens + other.prompt_tokens,
                     self.completion_tokens + other.completion_tokens,
                     self.cached_tokens + other.cached_tokens,
                     self.reasoning_tokens + other.reasoning_tokens)


@dataclass(frozen=True)
class LLMResponse:
    """The assistant message as an API-ready dict (`role`, `content`, maybe `tool_calls`).

    `reasoning` is kept apart: it may be replayed within the turn that produced it, and
    never belongs in the long-term history."""

    message: dict[str, Any]
    usage: Usage
    model: str
    finish_reason: str | None = None
    reasoning: str | None = None
    quota_fallback: QuotaFallback | None = None

    @property
    def content(self) -> str:
        return self.message.get("content") or ""

    @property
    def tool_calls(self) -> list[dict[str, Any]]:
        return self.message.get("tool_calls") or []


@dataclass
class _Attempts:
    """One `complete` call's retry budget: transient errors, one rate wait, one shrink."""

    limit: int
    count: int = 0
    rate_slept: bool = False
    groq_timed: bool = False  # the next attempt follows Groq's own wait: no pacing on top
    shrunk: bool = False


@dataclass(frozen=True)
class QuotaFallback:
    """The configured model's daily quota is spent (Groq's 429 said so): `answering` answers
    for about `seconds` more, then the configured model again."""

    configured: str
    answering: str
    seconds: float


@dataclass(frozen=True)
class ModelSwitch:
    """The configured model is gone and another one answers instead."""

    configured: str
    answering: str


@dataclass
class LLMStats:
    calls: int = 0
    retries: int = 0
    failures: int = 0
    rate_waits: int = 0
    rate_wait_seconds: float = 0.0
    usage_by_model: dict[str, Usage] = field(default_factory=dict)
    last_model: str | None = None
    last_failure: str | None = None
    # for /status: when Groq last answered (wall clock), whether it last refused the key,
    # and today's use (the day in local time; counters restart when it changes)
    last_ok_at: float | None = None
    key_refused: bool = False
    day: str = ""
    answers_today: int = 0
    tokens_today: int = 0

    def answered(self, usage: Usage, now: float | None = None) -> None:
        now = time.time() if now is None else now
        today = time.strftime("%Y-%m-%d", time.localtime(now))
        if today != self.day:
            self.day, self.answers_today, self.tokens_today = today, 0, 0
        self.answers_today += 1
        self.tokens_today += usage.total_tokens
        self.last_ok_at = now
        self.key_refused = False

    @property
    def usage(self) -> Usage:
        total = Usage()
        for usage in self.usage_by_model.values():
            total = total + usage
        return total

    @property
    def cached_share(self) -> float | None:
        usage = self.usage
        return usage.cached_tokens / usage.prompt_tokens if usage.prompt_tokens else None


def estimate_tokens(messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None) -> int:
    chars = len(json.dumps(messages, ensure_ascii=False))
    if tools:
        chars += len(json.dumps(tools, ensure_ascii=False))
    return int(chars / CHARS_PER_TOKEN) + 1


def prefix_key(messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None) -> str:
    """What a prompt begins with (its first message and its tools' names): requests that share
    it share Groq's cache, others do not."""
    head = json.dumps(messages[:1], sort_keys=True, ensure_ascii=False)
    names = ",".join(t.get("function", {}).get("name", "") for t in tools or [])
    return hashlib.sha256(f"{head}|{names}".encode()).hexdigest()[:16]


def sanitize_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Only the fields Groq accepts, and tool-call arguments that are JSON objects.

    Groq answers 400 to an assistant message with `reasoning_content`, and a server that
    validates history refuses arguments that are not JSON, which would fail every later
    request of the chat. Such arguments are sent as `{}`; the stored call keeps its error.
    """
    clean: list[dict[str, Any]] = []
    for message in messages:
        allowed = ASSISTANT_FIELDS if message.get("role") == "assistant" else OTHER_FIELDS
        out = {k: v for k, v in message.items() if k in allowed and v is not None}
        if message.get("role") == "assistant":
            out.setdefault("content", message.get("content") or "")
            if not out.get("reasoning"):
                out.pop("reasoning", None)
        if out.get("tool_calls"):
            out["tool_calls"] = [_clean_call(call) for call in out["tool_calls"]]
        clean.append(out)
    return clean


def _clean_call(call: dict[str, Any]) -> dict[str, Any]:
    function = dict(call.get("function") or {})
    function["arguments"] = json_object_text(function.get("arguments"))
    return {"id": call.get("id"), "type": "function", "function": function}


def json_object_text(arguments: Any) -> str:
    """`arguments` if it is the text of a JSON object, else "{}"."""
    if isinstance(arguments, str):
        try:
            if isinstance(json.loads(arguments), dict):
                return arguments
        except ValueError:
            pass
    return "{}"


def groq_client(settings: LLMSettings, *, timeout: float | None = None,
                max_retries: int = 0) -> groq.AsyncGroq:
    """The one place a Groq SDK client is built: the app shares one (one connection pool)
    between the answering model, voice and vision; the CLI and doctor build a short-lived one.
    `max_retries=0` because LLMClient retries itself; others take `client.with_options(...)`."""
    return groq.AsyncGroq(api_key=settings.api_key or "missing-key", base_url=settings.base_url,
                          timeout=settings.timeout if timeout is None else timeout,
                          max_retries=max_retries)


class LLMClient:
    def __init__(self, settings: LLMSettings, client: groq.AsyncGroq | None = None, *,
                 limiter: RateLimiter | None = None, day_file: DayUsageFile | None = None,
                 ) -> None:
        self.settings = settings
        self.day_file = day_file  # today's use kept across restarts
        self.model = settings.model
        self.stats = LLMStats()
        self.limiter = limiter or RateLimiter(window_seconds=settings.rate_window_seconds)
        self.switch: ModelSwitch | None = None
        self._gone: dict[str, float] = {}  # model -> when Groq said it is not served
        self._stopping = False
        self._client = client or groq_client(settings)

    async def close(self) -> None:
        await self._client.close()

    async def restore_day(self) -> None:
        """Today's use as the last run left it (a restart must not reset `/status`'s day)."""
        if self.day_file is not None:
            await self.day_file.restore(self.stats)

    def stop_retrying(self) -> None:
        """Rumi is exiting: each later call gets one attempt and no backoff, so a failing
        model cannot hold the exit for its retries (sessions are saved either way)."""
        self._stopping = True

    def token_cap(self) -> int | None:
        """The account's tokens-per-minute cap for the answering model, once Groq told it."""
        return self.limiter.token_cap(self.model)

    def tokens_per_minute(self) -> int | None:
        """The answering model's tokens-per-minute limit as Groq states it (no margin)."""
        return self.limiter.limits(self.model).tokens_per_minute

    def prompt_room(self, max_tokens: int | None = None, *, background: bool = False) -> int | None:
        """How many prompt tokens fit beside an answer of `max_tokens` (as `complete` would
        budget it) under the account's per-minute cap; None while no cap is known."""
        cap = self.token_cap()
        if cap is None:
            return None
        effort = (self.settings.background_reasoning_effort if background
                  else self.settings.reasoning_effort)
        return cap - self._budget(max_tokens, effort, self.model, background)

    def _models(self) -> tuple[str, ...]:
        return (self.settings.model, *self.settings.fallback_models)

    def _is_gone(self, model: str) -> bool:
        """A gone model is asked again after a while: Groq may bring a model back, or a 404
        may have been a hiccup."""
        since = self._gone.get(model)
        return since is not None and time.monotonic() - since <= GONE_RECHECK_SECONDS

    def _spent(self, model: str) -> bool:
        """Groq's own daily 429 said this model answers nothing yet: while another model has
        quota, it answers; a day's limit is not something to sleep through in a turn."""
        return self.limiter.quota_wait(model) > 0

    def _next_model(self) -> str | None:
        """The first configured model that is served and has quota left today."""
        for candidate in self._models():
            if not self._is_gone(candidate) and not self._spent(candidate):
                return candidate
        return None

    def _quota_refill(self, said: tuple[str, float] | None = None) -> float | None:
        """Seconds until the first served model has quota again (Groq's figures, `said` the
        one just received); None when some served model is not spent at all."""
        waits = [said[1] if said and said[0] == m else self.limiter.quota_wait(m)
                 for m in self._models() if not self._is_gone(m)]
        if not waits or not all(w > 0 for w in waits):
            return None
        return min(waits)

    def _budget(self, max_tokens: int | None, effort: str, model: str, background: bool) -> int:
        if max_tokens is None:
            return self.settings.max_output_tokens
        if background and is_reasoning_model(model):
            return max_tokens + REASONING_ALLOWANCE[effort]
        return max_tokens

    def _request(self, model: str, messages: list[dict[str, Any]], max_tokens: int, *,
                 tools: list[dict[str, Any]] | None, json_mode: bool, temperature: float | None,
                 effort: str, background: bool) -> dict[str, Any]:
        kwargs: dict[str, Any] = {
            "model": model,
            "messages": messages,
            "max_completion_tokens": max_tokens,
            "temperature": self.settings.temperature if temperature is None else temperature,
        }
        if tools:
            kwargs["tools"] = tools
            kwargs["tool_choice"] = "auto"
        if json_mode:
            kwargs["response_format"] = {"type": "json_object"}
        if is_reasoning_model(model):
            kwargs["reasoning_effort"] = effort
            if background:
                kwargs["include_reasoning"] = False
        else:
            kwargs["messages"] = [{k: v for k, v in m.items() if k != "reasoning"}
                                  for m in messages]
        return kwargs

    async def complete(
        self,
        messages: list[dict[str, Any]],
        *,
        tools: list[dict[str, Any]] | None = None,
        json_mode: bool = False,
        max_tokens: int | None = None,
        temperature: float | None = None,
        background: bool = False,
        prompt_tokens: int | None = None,
    ) -> LLMResponse:
        """One completion that fits the account; a typed LLMUnavailable when it cannot.

        `max_tokens` None means a chat answer (`llm.max_output_tokens`, reasoning included).
        `background` calls (summaries, extraction) use `llm.background_reasoning_effort`, and
        their `max_tokens` is the size of the answer itself: reasoning models get room to
        think on top. `prompt_tokens` is the caller's count of the prompt, for pacing.
        """
        effort = (self.settings.background_reasoning_effort if background
                  else self.settings.reasoning_effort)
        clean = sanitize_messages(messages)
        prompt = prompt_tokens or estimate_tokens(clean, tools)
        prefix = prefix_key(clean, tools)
        state = _Attempts(limit=self.settings.max_retries + 1)
        while True:
            model = self._next_model()
            if model is None:
                self._no_model_left()
            budget = self._budget(max_tokens, effort, model, background)
            plan = self._plan(model, prompt, budget, prefix, 0.0 if state.groq_timed else None)
            state.groq_timed = False
            if plan.wait > 0:
                self.stats.rate_waits += 1
                self.stats.rate_wait_seconds += plan.wait
                log.info("pacing for Groq's limits: waiting %.1fs before %s", plan.wait, model)
                await asyncio.sleep(plan.wait)
            kwargs = self._request(model, clean, plan.max_tokens, tools=tools,
                                   json_mode=json_mode, temperature=temperature, effort=effort,
                                   background=background)
            state.count += 1
            self.stats.calls += 1
            try:
                raw = await self._client.chat.completions.with_raw_response.create(**kwargs)
                completion = await raw.parse()
            except groq.APIStatusError as exc:
                self.limiter.cancel(model, plan)
                self.limiter.observe_headers(model, exc.response.headers)
                error = classify(exc.status_code, exc.body, exc.response.headers)
                delay = self._on_status_error(model, error, state)
            except (groq.APITimeoutError, groq.APIConnectionError) as exc:
                error = classify(None, None)
                if state.count >= state.limit:
                    self._failed(f"unreachable: {type(exc).__name__}")
                    raise ProviderDown(f"model unreachable: {type(exc).__name__}",
                                       error=error) from exc
                delay = self._backoff(state.count)
                log.warning("LLM %s, retry %d in %.1fs", type(exc).__name__, state.count, delay)
            else:
                self.model = model
                if model == self.settings.model:
                    self.switch = None
                response = self._response(completion, model, prefix)
                if self.day_file is not None:
                    await self.day_file.save(self.stats)
                usage = response.usage
                self.limiter.settle(model, plan, usage.prompt_tokens - usage.cached_tokens,
                                    usage.completion_tokens)
                self.limiter.observe_headers(model, raw.headers)
                return self._with_fallback(response, model)
            if delay is None:
                continue
            if self._stopping:
                self._failed("not retrying: rumi is stopping")
                raise ProviderDown("not retrying while Rumi stops", error=error)
            self.stats.retries += 1
            await asyncio.sleep(delay)

    def _no_model_left(self, said: tuple[str, float] | None = None) -> NoReturn:
        """Every configured model is gone or out of quota: say which, with Groq's wait."""
        refill = self._quota_refill(said)
        if refill is not None:
            self._failed(f"rate limited (RPD/TPD), {refill:.0f}s")
            raise RateLimited("every configured model's daily quota is spent",
                              retry_after=refill, daily=True)
        raise ModelGone("no configured model is served", models=list(self._models()))

    def _with_fallback(self, response: LLMResponse, model: str) -> LLMResponse:
        """Mark an answer given by a fallback because the configured model's quota is spent."""
        configured = self.settings.model
        if model == configured or not self._spent(configured):
            return response
        seconds = self.limiter.quota_wait(configured)
        return dataclasses.replace(response, quota_fallback=QuotaFallback(configured, model,
                                                                           seconds))

    def _plan(self, model: str, prompt: int, budget: int, prefix: str,
              max_wait: float | None = None) -> Plan:
        """`max_wait` 0 right after sleeping Groq's own retry-after: our estimate must not
        keep a request waiting longer than Groq said."""
        wait = self.settings.max_rate_wait if max_wait is None else max_wait
        try:
            return self.limiter.plan(model, prompt, budget, max_wait=wait, prefix=prefix)
        except PromptOverCap as exc:
            self._failed("prompt over the tokens-per-minute cap")
            raise RequestTooLarge(str(exc)) from exc
        except RateLimitedLocally as exc:
            self._failed(f"rate limited ({exc.scope})")
            raise RateLimited(str(exc), retry_after=exc.wait,
                              daily=exc.scope in ("RPD", "TPD")) from exc

    def _on_status_error(self, model: str, error: ProviderError,
                         state: _Attempts) -> float | None:
        """The delay before trying again (None: at once), or raise the typed failure."""
        status = error.status
        if error.kind == "model_gone":
            self._gone[model] = time.monotonic()
            nxt = self._next_model()
            if nxt is None:
                self._failed(f"model gone: {model}")
                raise ModelGone(f"model {model} is not served (HTTP {status})",
                                models=[self.settings.model, *self.settings.fallback_models],
                                error=error)
            log.warning("model %s is no longer served by Groq (HTTP %s); answering with %s. "
                        "Set llm.model to a current model.", model, status, nxt)
            self.model = nxt
            self.switch = ModelSwitch(self.settings.model, nxt)
            return None
        if error.kind == "auth":
            self.stats.key_refused = True
            self._failed(f"HTTP {status}: key refused")
            raise AuthFailed(f"Groq refused the API key (HTTP {status})", error=error)
        if error.kind == "tool_use_failed":
            self._failed("tool_use_failed")
            raise ToolUseFailed(f"tool_use_failed: {error.message[:200]}", error=error)
        if error.kind == "context_length":
            self._failed("context length exceeded")
            raise ContextTooLong(f"HTTP {status}: context length exceeded", error=error)
        if error.kind == "request_too_large":
            # Now that the cap is known, the next plan lowers max_tokens to fit; once.
            self.limiter.observe_limit(model, error.scope, error.limit)
            if not state.shrunk and self.limiter.token_cap(model) is not None:
                state.shrunk = True
                log.warning("request over Groq's %s tokens/min cap; retrying with a smaller "
                            "max_tokens", error.limit)
                return None
            self._failed("request over the tokens-per-minute cap")
            raise RequestTooLarge(f"HTTP 413: {error.message[:200]}", error=error)
        if error.kind == "rate_limited":
            wait = (error.retry_after if error.retry_after is not None
                    else self._backoff(state.count))
            self.limiter.observe_limit(model, error.scope, error.limit, used=error.used,
                                       requested=error.requested, retry_after=error.retry_after)
            if error.daily and self._spent(model):
                nxt = self._next_model()
                if nxt is not None:
                    log.warning("Groq: %s's daily quota (%s) is spent for %.0fs; answering "
                                "with %s meanwhile", model, error.scope, wait, nxt)
                    return None
                self._no_model_left((model, wait))
            if error.daily or state.rate_slept or wait > self.settings.max_rate_wait:
                self._failed(f"rate limited ({error.scope or '?'}), {wait:.0f}s")
                raise RateLimited(f"HTTP 429: {error.message[:200]}", retry_after=wait,
                                  daily=error.daily, error=error)
            state.rate_slept = state.groq_timed = True
            self.stats.rate_waits += 1
            self.stats.rate_wait_seconds += wait
            log.warning("Groq rate limit (%s); waiting %.1fs once", error.scope or "?", wait)
            return wait
        if error.retryable and state.count < state.limit:  # provider down (rate: above)
            delay = self._backoff(state.count)
            log.warning("LLM HTTP %s, retry %d in %.1fs", status, state.count, delay)
            return delay
        self._failed(f"HTTP {status}")
        if error.kind == "provider_down":
            raise ProviderDown(f"model returned HTTP {status}", error=error)
        raise LLMUnavailable(f"model returned HTTP {status}: {error.message[:200]}", error=error)

    def _failed(self, why: str) -> None:
        self.stats.failures += 1
        self.stats.last_failure = why

    def _backoff(self, attempt: int) -> float:
        base = self.settings.retry_base_delay * (2 ** (attempt - 1))
        return base + random.uniform(0, base / 2)

    def _response(self, completion: Any, model: str, prefix: str) -> LLMResponse:
        choice = completion.choices[0]
        msg = choice.message
        message: dict[str, Any] = {"role": "assistant", "content": msg.content or ""}
        if msg.tool_calls:
            message["tool_calls"] = [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.function.name,
                                 "arguments": call.function.arguments or ""},
                }
                for call in msg.tool_calls
            ]
        raw_usage = completion.usage
        prompt_details = getattr(raw_usage, "prompt_tokens_details", None)
        output_details = getattr(raw_usage, "completion_tokens_details", None)
        usage = Usage(
            prompt_tokens=getattr(raw_usage, "prompt_tokens", 0) or 0,
            completion_tokens=getattr(raw_usage, "completion_tokens", 0) or 0,
            cached_tokens=getattr(prompt_details, "cached_tokens", 0) or 0,
            reasoning_tokens=getattr(output_details, "reasoning_tokens", 0) or 0,
        )
        answered = completion.model or model
        self.limiter.observe_cached(model, prefix, usage.cached_tokens)
        self.stats.usage_by_model[answered] = (
            self.stats.usage_by_model.get(answered, Usage()) + usage)
        self.stats.last_model = answered
        self.stats.answered(usage)
        reasoning = getattr(msg, "reasoning", None) or None
        if reasoning:
            log.debug("reasoning of %s (%d tokens): %s", answered, usage.reasoning_tokens,
                      reasoning[:2_000])
        return LLMResponse(message, usage, answered, choice.finish_reason, reasoning)

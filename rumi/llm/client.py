"""The one door to the model: Groq chat completions that fit the account and fail plainly.

Everything that talks to the LLM (agent loop, compaction summaries, fact extraction, slugs)
goes through `LLMClient.complete`, so what Groq really does is handled once, here:

- requests are paced to the account's limits (`ratelimit.py`), learned from Groq's headers;
- a 429 with a short `retry-after` is waited out, again if Groq answers 429 again, while the
  waits fit `llm.max_rate_wait` together (a `retry-after: 0` repeated backs off a little); a
  longer one (a daily limit) is answered at once with the time it will take;
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
import logging
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, NoReturn

import groq
import httpx

from rumi.config import LLMSettings
from rumi.llm.catalogue import REASONING_ALLOWANCE, is_reasoning_model
from rumi.llm.errors import (
    AuthFailed,
    ContextTooLong,
    LLMUnavailable,
    ModelGone,
    ProviderDown,
    RateLimited,
    RequestTooLarge,
    StreamBroken,
    ToolUseFailed,
)
from rumi.llm.model_chain import ModelChain
from rumi.llm.provider_errors import ProviderError, classify
from rumi.llm.ratelimit import Plan, PromptOverCap, RateLimitedLocally, RateLimiter
from rumi.llm.response import LLMResponse, ModelSwitch, QuotaFallback, Usage
from rumi.llm.stats import LLMStats
from rumi.llm.stream import Answer, Assembly, TextSink, error_status, read
from rumi.llm.usage_day import DayUsageFile
from rumi.llm.wire import estimate_tokens, prefix_key, sanitize_messages

log = logging.getLogger(__name__)

MAX_RATE_WAITS = 5   # 429s waited out in one call; each wait also counts against max_rate_wait


@dataclass
class _Attempts:
    """One `complete` call's retry budget: transient errors, rate waits, one shrink."""

    limit: int
    count: int = 0
    rate_waits: int = 0
    rate_waited: float = 0.0   # seconds slept for Groq's 429s in this call
    groq_timed: bool = False  # the next attempt follows Groq's own wait: no pacing on top
    shrunk: bool = False


@dataclass(frozen=True)
class _Retry:
    delay: float | None   # None: at once (another model, a smaller budget)
    error: ProviderError


# Failures no retry can mend: the exception and the words that go to the log.
_FINAL: dict[str, tuple[type[LLMUnavailable], str]] = {
    "auth": (AuthFailed, "key refused"),
    "tool_use_failed": (ToolUseFailed, "tool_use_failed"),
    "context_length": (ContextTooLong, "context length exceeded"),
}


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
                 sleep: Callable[[float], Awaitable[None]] = asyncio.sleep) -> None:
        self.settings = settings
        self.sleep = sleep   # the pacing waits; a test's clock may be the limiter's and this
        self.day_file = day_file  # today's use kept across restarts
        self.model = settings.model
        self.stats = LLMStats()
        self.limiter = limiter or RateLimiter(window_seconds=settings.rate_window_seconds)
        self.switch: ModelSwitch | None = None
        self.chain = ModelChain(settings, self.limiter)
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
        on_text: TextSink | None = None,
    ) -> LLMResponse:
        """One completion that fits the account; a typed LLMUnavailable when it cannot.

        `max_tokens` None means a chat answer (`llm.max_output_tokens`, reasoning included).
        `background` calls (summaries, extraction) use `llm.background_reasoning_effort`, and
        their `max_tokens` is the size of the answer itself: reasoning models get room to
        think on top. `prompt_tokens` is the caller's count of the prompt, for pacing.
        With `on_text` the answer is streamed and each piece of its text given to it as it
        comes (`stream.py`); a stream broken after text was shown raises `StreamBroken`.
        """
        effort = (self.settings.background_reasoning_effort if background
                  else self.settings.reasoning_effort)
        clean = sanitize_messages(messages)
        prompt = prompt_tokens or estimate_tokens(clean, tools)
        prefix = prefix_key(clean, tools)
        state = _Attempts(limit=self.settings.max_retries + 1)
        while True:
            model = self.chain.next_model()
            if model is None:
                self._no_model_left()
            budget = self._budget(max_tokens, effort, model, background)
            plan = self._plan(model, prompt, budget, prefix, 0.0 if state.groq_timed else None)
            state.groq_timed = False
            await self._pace(plan, model)
            kwargs = self._request(model, clean, plan.max_tokens, tools=tools,
                                   json_mode=json_mode, temperature=temperature, effort=effort,
                                   background=background)
            outcome = await self._send(model, plan, kwargs, prefix, state, on_text)
            if isinstance(outcome, LLMResponse):
                return outcome
            if outcome.delay is None:
                continue
            if self._stopping:
                self._failed("not retrying: rumi is stopping")
                raise ProviderDown("not retrying while Rumi stops", error=outcome.error)
            self.stats.retries += 1
            await asyncio.sleep(outcome.delay)

    async def _pace(self, plan: Plan, model: str) -> None:
        if plan.wait > 0:
            self.stats.rate_waits += 1
            self.stats.rate_wait_seconds += plan.wait
            log.info("pacing for Groq's limits: waiting %.1fs before %s", plan.wait, model)
            await self.sleep(plan.wait)

    async def _send(self, model: str, plan: Plan, kwargs: dict[str, Any], prefix: str,
                    state: _Attempts, sink: TextSink | None = None) -> LLMResponse | _Retry:
        """One request: the answer, or when to try again (raises when not to)."""
        state.count += 1
        self.stats.calls += 1
        assembly = Assembly()
        try:
            if sink is None:
                raw = await self._client.chat.completions.with_raw_response.create(**kwargs)
                completion = await raw.parse()
            else:
                raw = await self._client.chat.completions.with_raw_response.create(
                    **kwargs, stream=True)
                await read(await raw.parse(), sink, assembly)
                if assembly.finish_reason is None:
                    raise httpx.RemoteProtocolError("the stream ended before its last chunk")
        except groq.APIStatusError as exc:
            self.limiter.cancel(model, plan)
            self.limiter.observe_headers(model, exc.response.headers)
            error = classify(exc.status_code, exc.body, exc.response.headers)
            return _Retry(self._on_status_error(model, error, state), error)
        except (groq.APITimeoutError, groq.APIConnectionError, httpx.HTTPError) as exc:
            return self._unreachable(exc, state, assembly)   # httpx's: broken inside a stream
        except groq.APIError as exc:   # reported inside a stream, after its 200
            self.limiter.cancel(model, plan)
            error = classify(error_status(exc.body), exc.body)
            if assembly.text and error.kind != "tool_use_failed":
                self._broken(assembly, error)
            return _Retry(self._on_status_error(model, error, state), error)
        self.model = model
        if model == self.settings.model:
            self.switch = None
        response = self._answered(Answer.of_completion(completion, model) if sink is None
                                  else Answer.of_stream(assembly, model), model, prefix)
        if self.day_file is not None:
            await self.day_file.save(self.stats)
        usage = response.usage
        self.limiter.settle(model, plan, usage.prompt_tokens - usage.cached_tokens,
                            usage.completion_tokens)
        self.limiter.observe_headers(model, raw.headers)
        return self._with_fallback(response, model)

    def _unreachable(self, exc: Exception, state: _Attempts, assembly: Assembly) -> _Retry:
        """No answer came (a timeout, a refused or broken connection): retry after a backoff
        while attempts are left and nothing was shown."""
        error = classify(None, None)
        if assembly.text:
            self._broken(assembly, error)
        if state.count >= state.limit:
            self._failed(f"unreachable: {type(exc).__name__}")
            raise ProviderDown(f"model unreachable: {type(exc).__name__}",
                               error=error) from exc
        delay = self._backoff(state.count)
        log.warning("LLM %s, retry %d in %.1fs", type(exc).__name__, state.count, delay)
        return _Retry(delay, error)

    def _broken(self, assembly: Assembly, error: ProviderError) -> NoReturn:
        self._failed(f"stream broken after {len(assembly.text)} characters")
        raise StreamBroken(f"stream broken: {error.kind}: {error.message[:200]}",
                           shown=assembly.text, error=error)

    def _no_model_left(self, said: tuple[str, float] | None = None) -> NoReturn:
        """Every configured model is gone or out of quota: say which, with Groq's wait."""
        refill = self.chain.quota_refill(said)
        if refill is not None:
            self._failed(f"rate limited (RPD/TPD), {refill:.0f}s")
            raise RateLimited("every configured model's daily quota is spent",
                              retry_after=refill, daily=True)
        raise ModelGone("no configured model is served", models=list(self.chain.models()))

    def _with_fallback(self, response: LLMResponse, model: str) -> LLMResponse:
        """Mark an answer given by a fallback because the configured model's quota is spent."""
        configured = self.settings.model
        if model == configured or not self.chain.spent(configured):
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
            return self._model_gone(model, error)
        final = _FINAL.get(error.kind)
        if final is not None:
            failure, why = final
            if error.kind == "auth":
                self.stats.key_refused = True
            self._failed(why)
            raise failure(f"HTTP {status}: {why}: {error.message[:200]}", error=error)
        if error.kind == "request_too_large":
            return self._too_large(model, error, state)
        if error.kind == "rate_limited":
            return self._rate_limited(model, error, state)
        if error.retryable and state.count < state.limit:  # provider down (rate: above)
            delay = self._backoff(state.count)
            log.warning("LLM HTTP %s, retry %d in %.1fs", status, state.count, delay)
            return delay
        self._failed(f"HTTP {status}")
        if error.kind == "provider_down":
            raise ProviderDown(f"model returned HTTP {status}", error=error)
        raise LLMUnavailable(f"model returned HTTP {status}: {error.message[:200]}", error=error)

    def _model_gone(self, model: str, error: ProviderError) -> None:
        self.chain.mark_gone(model)
        nxt = self.chain.next_model()
        if nxt is None:
            self._failed(f"model gone: {model}")
            raise ModelGone(f"model {model} is not served (HTTP {error.status})",
                            models=[self.settings.model, *self.settings.fallback_models],
                            error=error)
        log.warning("model %s is no longer served by Groq (HTTP %s); answering with %s. "
                    "Set llm.model to a current model.", model, error.status, nxt)
        self.model = nxt
        self.switch = ModelSwitch(self.settings.model, nxt)
        return None

    def _too_large(self, model: str, error: ProviderError, state: _Attempts) -> None:
        """Now that the cap is known, the next plan lowers max_tokens to fit; once."""
        self.limiter.observe_limit(model, error.scope, error.limit)
        if not state.shrunk and self.limiter.token_cap(model) is not None:
            state.shrunk = True
            log.warning("request over Groq's %s tokens/min cap; retrying with a smaller "
                        "max_tokens", error.limit)
            return None
        self._failed("request over the tokens-per-minute cap")
        raise RequestTooLarge(f"HTTP 413: {error.message[:200]}", error=error)

    def _rate_limited(self, model: str, error: ProviderError, state: _Attempts) -> float | None:
        """Short waits are slept while they fit `max_rate_wait` together; a spent daily quota
        moves to the next model."""
        said = error.retry_after   # Groq's own wait; without one, a backoff of ours
        wait = said if said is not None else self._backoff(state.rate_waits + 1)
        self.limiter.observe_limit(model, error.scope, error.limit, used=error.used,
                                   requested=error.requested, retry_after=error.retry_after)
        if error.daily and self.chain.spent(model):
            nxt = self.chain.next_model()
            if nxt is not None:
                log.warning("Groq: %s's daily quota (%s) is spent for %.0fs; answering "
                            "with %s meanwhile", model, error.scope, wait, nxt)
                return None
            self._no_model_left((model, wait))
        if error.daily or wait > self.settings.max_rate_wait and not state.rate_waits:
            self._failed(f"rate limited ({error.scope or '?'}), {wait:.0f}s")
            raise RateLimited(f"HTTP 429: {error.message[:200]}", retry_after=wait,
                              daily=error.daily, error=error)
        left = self.settings.max_rate_wait - state.rate_waited
        if state.rate_waits:   # Groq refused again: never hammer it, even on `retry-after: 0`
            wait = max(wait, self._backoff(state.rate_waits))
        if state.rate_waits >= MAX_RATE_WAITS or (said or 0.0) > left or left <= 0:
            self._failed(f"rate limited ({error.scope or '?'}) {state.rate_waits + 1} times")
            raise RateLimited(f"HTTP 429 again after {state.rate_waited:.1f}s of waits: "
                              f"{error.message[:200]}", retry_after=wait, daily=False,
                              error=error, again=True, waited=state.rate_waited)
        wait = min(wait, left)
        state.rate_waits += 1
        state.rate_waited += wait
        state.groq_timed = True
        self.stats.rate_waits += 1
        self.stats.rate_wait_seconds += wait
        log.warning("Groq rate limit (%s); waiting %.1fs (wait %d)", error.scope or "?", wait,
                    state.rate_waits)
        return wait

    def _failed(self, why: str) -> None:
        self.stats.failures += 1
        self.stats.last_failure = why

    def _backoff(self, attempt: int) -> float:
        base = self.settings.retry_base_delay * (2 ** (attempt - 1))
        return base + random.uniform(0, base / 2)

    def _answered(self, answer: Answer, model: str, prefix: str) -> LLMResponse:
        """The response, its usage counted (per model, cached tokens for pacing)."""
        usage = answer.usage
        self.limiter.observe_cached(model, prefix, usage.cached_tokens)
        self.stats.usage_by_model[answer.model] = (
            self.stats.usage_by_model.get(answer.model, Usage()) + usage)
        self.stats.last_model = answer.model
        self.stats.answered(usage)
        if answer.reasoning:
            log.debug("reasoning of %s (%d tokens): %s", answer.model, usage.reasoning_tokens,
                      answer.reasoning[:2_000])
        return LLMResponse(answer.message, usage, answer.model, answer.finish_reason,
                           answer.reasoning or None)

"""The one door to the model: Groq chat completions with retries, usage, and plain errors.

Everything that talks to the LLM (agent loop, compaction summaries, fact extraction, slugs)
goes through `LLMClient.complete`, so retries and the "model unavailable" path live here once.
"""

from __future__ import annotations

import asyncio
import logging
import random
from dataclasses import dataclass, field
from typing import Any

import groq

from rumi.config import LLMSettings

log = logging.getLogger(__name__)

RETRYABLE_STATUS = {408, 409, 425, 429, 500, 502, 503, 504}
MAX_RETRY_AFTER = 30.0


class LLMUnavailable(Exception):
    """The model could not answer after retries; the message is safe to log, not to show."""


class ContextTooLong(LLMUnavailable):
    """HTTP 400 `context_length_exceeded`: the prompt (plus `max_tokens`) is over the model's
    window. A subclass so callers that only know "unavailable" still stop cleanly, while the
    agent loop can compact and retry once (our count can be off until calibration settles)."""


@dataclass(frozen=True)
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


@dataclass(frozen=True)
class LLMResponse:
    """The assistant message as an API-ready dict (`role`, `content`, maybe `tool_calls`)."""

    message: dict[str, Any]
    usage: Usage
    model: str
    finish_reason: str | None = None

    @property
    def content(self) -> str:
        return self.message.get("content") or ""

    @property
    def tool_calls(self) -> list[dict[str, Any]]:
        return self.message.get("tool_calls") or []


@dataclass
class LLMStats:
    calls: int = 0
    retries: int = 0
    failures: int = 0
    usage_by_model: dict[str, Usage] = field(default_factory=dict)


class LLMClient:
    def __init__(self, settings: LLMSettings, client: groq.AsyncGroq | None = None) -> None:
        self.settings = settings
        self.model = settings.model
        self.stats = LLMStats()
        self._client = client or groq.AsyncGroq(
            api_key=settings.api_key or "missing-key",
            base_url=settings.base_url,
            timeout=settings.timeout,
            max_retries=0,
        )

    async def close(self) -> None:
        await self._client.close()

    async def complete(
        self,
        messages: list[dict[str, Any]],
        *,
        tools: list[dict[str, Any]] | None = None,
        json_mode: bool = False,
        max_tokens: int | None = None,
        temperature: float | None = None,
    ) -> LLMResponse:
        """One completion, retried with backoff on 429/5xx/timeouts; LLMUnavailable otherwise."""
        kwargs: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "max_tokens": max_tokens or self.settings.max_output_tokens,
            "temperature": self.settings.temperature if temperature is None else temperature,
        }
        if tools:
            kwargs["tools"] = tools
            kwargs["tool_choice"] = "auto"
        if json_mode:
            kwargs["response_format"] = {"type": "json_object"}
        attempts = self.settings.max_retries + 1
        for attempt in range(1, attempts + 1):
            self.stats.calls += 1
            try:
                completion = await self._client.chat.completions.create(**kwargs)
            except groq.APIStatusError as exc:
                if exc.status_code not in RETRYABLE_STATUS or attempt == attempts:
                    self.stats.failures += 1
                    if _context_length_error(exc):
                        raise ContextTooLong(f"model returned HTTP {exc.status_code}: "
                                             "context length exceeded") from exc
                    raise LLMUnavailable(f"model returned HTTP {exc.status_code}") from exc
                delay = self._delay(attempt, exc.response.headers.get("retry-after"))
                log.warning("LLM HTTP %s, retry %d in %.1fs", exc.status_code, attempt, delay)
            except (groq.APITimeoutError, groq.APIConnectionError) as exc:
                if attempt == attempts:
                    self.stats.failures += 1
                    raise LLMUnavailable(f"model unreachable: {type(exc).__name__}") from exc
                delay = self._delay(attempt, None)
                log.warning("LLM %s, retry %d in %.1fs", type(exc).__name__, attempt, delay)
            else:
                return self._response(completion)
            self.stats.retries += 1
            await asyncio.sleep(delay)
        raise LLMUnavailable("no attempts made")  # pragma: no cover - loop always returns/raises

    def _delay(self, attempt: int, retry_after: str | None) -> float:
        if retry_after:
            try:
                return min(float(retry_after), MAX_RETRY_AFTER)
            except ValueError:
                pass
        base = self.settings.retry_base_delay * (2 ** (attempt - 1))
        return base + random.uniform(0, base / 2)

    def _response(self, completion: Any) -> LLMResponse:
        choice = completion.choices[0]
        msg = choice.message
        message: dict[str, Any] = {"role": "assistant", "content": msg.content}
        if msg.tool_calls:
            message["tool_calls"] = [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.function.name, "arguments": call.function.arguments},
                }
                for call in msg.tool_calls
            ]
        usage = Usage(
            prompt_tokens=getattr(completion.usage, "prompt_tokens", 0) or 0,
            completion_tokens=getattr(completion.usage, "completion_tokens", 0) or 0,
        )
        previous = self.stats.usage_by_model.get(completion.model, Usage())
        self.stats.usage_by_model[completion.model] = Usage(
            previous.prompt_tokens + usage.prompt_tokens,
            previous.completion_tokens + usage.completion_tokens,
        )
        return LLMResponse(message, usage, completion.model, choice.finish_reason)


def _context_length_error(exc: groq.APIStatusError) -> bool:
    """Groq (like OpenAI) answers 400 with `code: context_length_exceeded` and "Please reduce
    the length of the messages or completion."; match either, the code first."""
    if exc.status_code != 400:
        return False
    body = exc.body if isinstance(exc.body, dict) else {}
    error = body.get("error", body)
    if not isinstance(error, dict):
        error = {}
    if error.get("code") == "context_length_exceeded":
        return True
    text = f"{error.get('message', '')} {exc.message}".lower()
    return "reduce the length" in text or "context length" in text

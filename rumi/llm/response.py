"""What a chat completion gives back: the assistant message, its token usage, and which model
answered when it was not the configured one."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


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

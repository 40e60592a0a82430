"""What can go wrong with a chat completion, as the callers tell it apart: each failure of
`LLMClient.complete` is one of these, and the caller turns it into a clear sentence."""

from __future__ import annotations

from rumi.llm.provider_errors import ProviderError


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
    """Waiting for the account's limits would take longer than a person should wait; or
    (`again`) Groq kept refusing after short waits (`waited` seconds in all) that used up
    the call's budget."""

    def __init__(self, message: str, *, retry_after: float, daily: bool,
                 error: ProviderError | None = None, again: bool = False,
                 waited: float = 0.0) -> None:
        super().__init__(message, error=error)
        self.retry_after = retry_after
        self.daily = daily
        self.again = again
        self.waited = waited


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


class StreamBroken(LLMUnavailable):
    """A streamed answer broke after part of it was shown: `shown` is that part. Retrying
    would put a different answer after it, so the person is told it was cut instead."""

    def __init__(self, message: str, *, shown: str, error: ProviderError | None = None) -> None:
        super().__init__(message, error=error)
        self.shown = shown

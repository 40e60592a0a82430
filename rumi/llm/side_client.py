"""What the one-shot Groq calls beside the chat (a photo's description, a voice note's
transcript) share: a client that is either the app's shared one or their own, and a typed
failure. Chat requests go through `client.LLMClient`, which also rations the limits.
"""

from __future__ import annotations

from dataclasses import dataclass

import groq

from rumi import messages as msg
from rumi.config import LLMSettings
from rumi.llm.client import groq_client
from rumi.llm.provider_errors import ProviderError


class SideCallFailed(Exception):
    """Groq refused or could not be reached; `error.kind` says which."""

    def __init__(self, error: ProviderError) -> None:
        super().__init__(f"{error.kind}: {error.message}")
        self.error = error


@dataclass(frozen=True)
class FailureTexts:
    """What the person reads when a side call fails: one template per kind of failure."""

    rate_limited: str   # {scope} {wait}
    too_large: str      # {size_mb} {max_mb}
    auth: str           # {status}
    model_gone: str     # {model}
    refused: str        # {model}
    unavailable: str
    refused_kinds: tuple[str, ...] = ("bad_request",)


def explain(error: ProviderError, texts: FailureTexts, *, model: str, max_mb: float) -> str:
    """One sentence for the person, in the chat's language, for a failed side call."""
    if error.kind == "rate_limited":
        return texts.rate_limited.format(scope=error.scope or "429",
                                         wait=msg.format_wait(error.retry_after or 60))
    if error.kind == "request_too_large":
        return texts.too_large.format(size_mb=max_mb + 0.1, max_mb=max_mb)
    if error.kind == "auth":
        return texts.auth.format(status=error.status)
    if error.kind == "model_gone":
        return texts.model_gone.format(model=model)
    if error.kind in texts.refused_kinds:
        return texts.refused.format(model=model)
    return texts.unavailable


class SideClient:
    """Closes the Groq client only when it built it: a shared one is closed by its builder."""

    def __init__(self, settings: LLMSettings, client: groq.AsyncGroq | None) -> None:
        self._owned = client is None
        self._client = client or groq_client(settings, max_retries=settings.max_retries)

    async def close(self) -> None:
        if self._owned:
            await self._client.close()

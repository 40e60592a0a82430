"""What the one-shot Groq calls beside the chat (a photo's description, a voice note's
transcript) share: a client that is either the app's shared one or their own, and a typed
failure. Chat requests go through `client.LLMClient`, which also rations the limits.
"""

from __future__ import annotations

import groq

from rumi.config import LLMSettings
from rumi.llm.client import groq_client
from rumi.llm.provider_errors import ProviderError


class SideCallFailed(Exception):
    """Groq refused or could not be reached; `error.kind` says which."""

    def __init__(self, error: ProviderError) -> None:
        super().__init__(f"{error.kind}: {error.message}")
        self.error = error


class SideClient:
    """Closes the Groq client only when it built it: a shared one is closed by its builder."""

    def __init__(self, settings: LLMSettings, client: groq.AsyncGroq | None) -> None:
        self._owned = client is None
        self._client = client or groq_client(settings, max_retries=settings.max_retries)

    async def close(self) -> None:
        if self._owned:
            await self._client.close()

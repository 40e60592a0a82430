"""One Groq speech-to-text call, through the real `groq` SDK, failures typed.

Kept apart from the chat client (rumi/llm/client.py): a transcription has no tools, no history,
and its own limits (file size, audio seconds per hour/day). Failures are classified with the
same `provider_errors.classify` as chat requests, so a 429 on audio reads like any other 429.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import groq

from rumi.config import LLMSettings
from rumi.llm.provider_errors import classify
from rumi.llm.side_client import SideCallFailed, SideClient

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Transcript:
    text: str
    duration: float | None  # seconds, as Groq measured them (verbose_json)
    language: str | None


class TranscriptionFailed(SideCallFailed):
    """Groq refused or could not be reached; `error.kind` says which."""


class Transcriber(SideClient):
    def __init__(self, settings: LLMSettings, model: str, *,
                 client: groq.AsyncGroq | None = None) -> None:
        self.model = model
        super().__init__(settings, client)

    async def transcribe(self, data: bytes, filename: str, language: str | None) -> Transcript:
        """Send the audio once (the SDK retries connection failures and 5xx)."""
        kwargs: dict[str, Any] = {"language": language} if language else {}
        try:
            result = await self._client.audio.transcriptions.create(
                file=(filename, data), model=self.model, response_format="verbose_json",
                temperature=0.0, **kwargs)
        except groq.APIStatusError as exc:
            raise TranscriptionFailed(classify(exc.status_code, exc.body,
                                               exc.response.headers)) from exc
        except (groq.APITimeoutError, groq.APIConnectionError) as exc:
            raise TranscriptionFailed(classify(None, None)) from exc
        extra = getattr(result, "model_extra", None) or {}
        duration = extra.get("duration")
        return Transcript(str(result.text or "").strip(),
                          float(duration) if isinstance(duration, int | float) else None,
                          extra.get("language") if isinstance(extra.get("language"), str)
                          else None)

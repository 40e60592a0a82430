"""Voice notes for the core: limits checked before anything is uploaded, Groq's failures
turned into a sentence for the person, and the audio seconds used today.

Today's count lives in memory (it restarts with Rumi); Groq's own daily audio limit is per
account and is enforced by Groq anyway — this budget only avoids sending audio that would be
refused, and lets /status show what was used.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import UTC, date, datetime

from rumi import messages as msg
from rumi.base.replies import Attachment, InputRefused
from rumi.config import VoiceSettings
from rumi.llm.side_client import FailureTexts, explain
from rumi.voice.transcriber import Transcriber, TranscriptionFailed

log = logging.getLogger(__name__)

MB = 1024 * 1024


class VoiceService:
    def __init__(self, transcriber: Transcriber, settings: VoiceSettings, language: str,
                 clock: Callable[[], datetime] = lambda: datetime.now(UTC)) -> None:
        self.transcriber = transcriber
        self.settings = settings
        # with agent.language = "auto" the speech's language is left to the model to detect
        self.language = settings.language or ("" if language == "auto" else language)
        self.clock = clock
        self._day: date | None = None
        self._used = 0.0

    def used_today(self) -> float:
        if self._day != self.clock().date():
            return 0.0
        return self._used

    def _billed(self, seconds: float | None) -> float:
        return max(seconds or 0.0, self.settings.min_billed_seconds)

    async def transcribe(self, chat_id: str, audio: Attachment,
                         duration: float | None) -> tuple[str, float | None]:
        """The transcript and the audio's length, or InputRefused with the reason."""
        limits = self.settings
        size_mb = len(audio.data) / MB
        if size_mb > limits.max_file_mb:
            raise InputRefused(msg.VOICE_TOO_LARGE.format(size_mb=size_mb,
                                                          max_mb=limits.max_file_mb))
        if duration is not None and duration > limits.max_duration_seconds:
            raise InputRefused(msg.VOICE_TOO_LONG.format(
                seconds=duration, max_seconds=limits.max_duration_seconds))
        used = self.used_today()
        if used + self._billed(duration) > limits.daily_audio_seconds:
            raise InputRefused(msg.VOICE_DAILY_BUDGET.format(
                used=msg.format_duration(used),
                limit=msg.format_duration(limits.daily_audio_seconds)))
        try:
            result = await self.transcriber.transcribe(audio.data, audio.filename,
                                                       self.language or None)
        except TranscriptionFailed as exc:
            raise InputRefused(self._explain(exc)) from exc
        seconds = result.duration if result.duration is not None else duration
        self._count(seconds)
        log.info("chat=%s voice note transcribed (%.1f s, %d chars)", chat_id,
                 seconds or 0.0, len(result.text))
        if not result.text:
            raise InputRefused(msg.VOICE_EMPTY)
        return result.text, seconds

    def _count(self, seconds: float | None) -> None:
        today = self.clock().date()
        if self._day != today:
            self._day, self._used = today, 0.0
        self._used += self._billed(seconds)

    def _explain(self, exc: TranscriptionFailed) -> str:
        error = exc.error
        log.warning("transcription failed: %s (HTTP %s)", error.kind, error.status)
        texts = FailureTexts(msg.VOICE_RATE_LIMITED, msg.VOICE_TOO_LARGE, msg.VOICE_AUTH,
                             msg.VOICE_MODEL_GONE, msg.VOICE_BAD_FILE, msg.VOICE_UNAVAILABLE)
        return explain(error, texts, model=self.transcriber.model,
                       max_mb=self.settings.max_file_mb)

    async def status_line(self, chat_id: str, session: object) -> str:
        return msg.STATUS_VOICE.format(used=msg.format_duration(self.used_today()),
                                       limit=msg.format_duration(
                                           self.settings.daily_audio_seconds),
                                       model=self.transcriber.model)

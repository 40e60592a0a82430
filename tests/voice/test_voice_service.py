"""VoiceService with the real groq SDK against the fake Groq transcription endpoint."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import pytest

from rumi import messages as msg
from rumi.base.replies import Attachment, InputRefused
from rumi.config import LLMSettings, VoiceSettings
from rumi.voice.service import VoiceService
from rumi.voice.transcriber import Transcriber
from tests.fakes.groq_catalogue import error_body

OGG = Attachment("voice.ogg", b"OggS" + b"\x00" * 32)


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2026, 11, 25, 23, 59, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture
async def make(fake_groq) -> AsyncIterator[object]:
    made: list[Transcriber] = []

    def factory(clock: Clock, **voice: object) -> VoiceService:
        llm = LLMSettings(api_key="gsk_test", base_url=fake_groq.base_url, max_retries=0,
                          timeout=5)
        transcriber = Transcriber(llm, "whisper-large-v3-turbo")
        made.append(transcriber)
        return VoiceService(transcriber, VoiceSettings(**voice), "es", clock=clock)

    yield factory
    for transcriber in made:
        await transcriber.close()


async def test_daily_budget_counts_billed_seconds_and_resets_next_day(make, fake_groq) -> None:
    clock = Clock()
    service = make(clock, daily_audio_seconds=25, min_billed_seconds=10)
    fake_groq.audio.enqueue("uno", duration=3)
    fake_groq.audio.enqueue("dos", duration=12)
    assert await service.transcribe("1", OGG, None) == ("uno", 3)
    assert await service.transcribe("1", OGG, None) == ("dos", 12)
    assert service.used_today() == 22  # 3 s billed as 10, then 12
    with pytest.raises(InputRefused) as refused:
        await service.transcribe("1", OGG, 5)
    assert str(refused.value) == msg.VOICE_DAILY_BUDGET.format(used="22 s", limit="25 s")
    assert len(fake_groq.audio.requests) == 2  # refused before upload
    clock.now += timedelta(minutes=2)  # a new day
    assert service.used_today() == 0
    fake_groq.audio.enqueue("tres", duration=1)
    assert (await service.transcribe("1", OGG, 1))[0] == "tres"


async def test_groq_audio_limit_is_explained_with_the_wait(make, fake_groq) -> None:
    service = make(Clock())
    body = error_body(
        "Rate limit reached for model `whisper-large-v3-turbo` in organization `org_test` "
        "service tier `on_demand` on audio seconds per hour (ASH): Limit 7200, Used 7190, "
        "Requested 30. Please try again in 1m35s.", "audio_seconds", "rate_limit_exceeded")
    fake_groq.audio.fail_next(429, body, {"retry-after": "95"})
    with pytest.raises(InputRefused) as refused:
        await service.transcribe("1", OGG, 30)
    assert str(refused.value) == msg.VOICE_RATE_LIMITED.format(scope="ASH",
                                                               wait=msg.format_wait(95.0))
    assert service.used_today() == 0


async def test_unknown_model_and_silence(make, fake_groq) -> None:
    service = make(Clock(), model="whisper-gone")
    service.transcriber.model = "whisper-gone"
    with pytest.raises(InputRefused) as refused:
        await service.transcribe("1", OGG, None)
    assert str(refused.value) == msg.VOICE_MODEL_GONE.format(model="whisper-gone")
    service.transcriber.model = "whisper-large-v3-turbo"
    fake_groq.audio.enqueue("   ")
    with pytest.raises(InputRefused) as refused:
        await service.transcribe("1", OGG, None)
    assert str(refused.value) == msg.VOICE_EMPTY

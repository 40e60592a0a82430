"""PhotoService with the real groq SDK against the fake Groq's vision behaviour."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

import pytest

from rumi import messages as msg
from rumi.base.replies import Attachment, InputRefused
from rumi.config import LLMSettings, VisionSettings
from rumi.media.photos import PhotoService
from rumi.media.vision import Describer
from tests.fakes.groq_catalogue import GroqError, error_body
from tests.fakes.groq_vision import IMAGE_TOKENS

PHOTO = Attachment("foto.jpg", b"\xff\xd8\xff\xe0" + b"\x01" * 100, "image/jpeg")


@pytest.fixture
async def make(fake_groq) -> AsyncIterator[Callable[..., PhotoService]]:
    made: list[Describer] = []

    def factory(model: str = "qwen/qwen3.6-27b", **vision: object) -> PhotoService:
        llm = LLMSettings(api_key="gsk_test", base_url=fake_groq.base_url, max_retries=0,
                          timeout=5)
        describer = Describer(llm, model, 300)
        made.append(describer)
        return PhotoService(describer, VisionSettings(model=model, **vision), "es")

    yield factory
    for describer in made:
        await describer.close()


async def test_description_and_caption_make_the_message(make, fake_groq) -> None:
    fake_groq.vision.enqueue("Una planta de hojas grandes con manchas amarillas.")
    text = await make().read("1", PHOTO, "¿qué le pasa?")
    assert text == (msg.PHOTO_ORIGIN.format(model="qwen/qwen3.6-27b")
                    + "\nUna planta de hojas grandes con manchas amarillas.\n\n"
                    + msg.PHOTO_CAPTION.format(caption="¿qué le pasa?"))
    [request] = fake_groq.vision.requests
    assert request["max_completion_tokens"] == 300
    assert fake_groq.vision.images == [PHOTO.data]
    assert fake_groq.requests == []   # the conversation's model was never asked


async def test_each_failure_has_its_own_answer(make, fake_groq) -> None:
    with pytest.raises(InputRefused) as refused:
        await make(model="fake").read("1", PHOTO, "")
    assert str(refused.value) == msg.PHOTO_REFUSED.format(model="fake")
    with pytest.raises(InputRefused) as refused:
        await make(model="qwen/qwen-gone").read("1", PHOTO, "")
    assert str(refused.value) == msg.PHOTO_MODEL_GONE.format(model="qwen/qwen-gone")
    fake_groq.vision.fail_next(GroqError(429, error_body(
        "Rate limit reached for model `qwen/qwen3.6-27b` on requests per minute (RPM): "
        "Limit 30, Used 30, Requested 1. Please try again in 7s.", "tokens",
        "rate_limit_exceeded"), {"retry-after": "7"}))
    with pytest.raises(InputRefused) as refused:
        await make().read("1", PHOTO, "")
    assert str(refused.value).startswith("⏳ Groq llegó a su límite (RPM)")
    fake_groq.vision.enqueue("")
    with pytest.raises(InputRefused) as refused:
        await make().read("1", PHOTO, "")
    assert str(refused.value) == msg.PHOTO_EMPTY


async def test_too_large_is_refused_before_upload(make, fake_groq) -> None:
    with pytest.raises(InputRefused) as refused:
        await make(max_image_mb=0.00001).read("1", PHOTO, "")
    assert str(refused.value).startswith("🖼️ La imagen es demasiado grande")
    assert fake_groq.vision.requests == []


async def test_disabled_vision_says_so() -> None:
    service = PhotoService(None, VisionSettings(enabled=False), "es")
    with pytest.raises(InputRefused) as refused:
        await service.read("1", PHOTO, "")
    assert str(refused.value) == msg.PHOTO_DISABLED


async def test_fake_groq_counts_images_and_caps_them(fake_groq) -> None:
    import groq

    client = groq.AsyncGroq(api_key="gsk_test", base_url=fake_groq.base_url, max_retries=0)
    image = {"type": "image_url", "image_url": {"url": "data:image/jpeg;base64,/9j/4A=="}}
    try:
        result = await client.chat.completions.create(model="qwen/qwen3.6-27b", messages=[
            {"role": "user", "content": [{"type": "text", "text": "?"}, image, image]}])
        assert result.usage is not None and result.usage.prompt_tokens >= 2 * IMAGE_TOKENS
        with pytest.raises(groq.BadRequestError, match="up to 5 images"):
            await client.chat.completions.create(model="qwen/qwen3.6-27b", messages=[
                {"role": "user", "content": [image] * 6}])
        with pytest.raises(groq.BadRequestError):
            await client.chat.completions.create(model="openai/gpt-oss-120b", messages=[
                {"role": "user", "content": [image]}])
    finally:
        await client.close()

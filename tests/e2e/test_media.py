"""Photos and documents through the real bot: fake Telegram (photo and document updates,
getFile downloads) and fake Groq (the vision model describes, the chat model answers)."""

from __future__ import annotations

import base64

import pytest

from rumi import messages as msg
from tests.e2e.conftest import ALICE, chat_dir
from tests.prompt_shape import person

pytestmark = pytest.mark.e2e
JPEG = b"\xff\xd8\xff\xe0" + b"\x10JFIF" + bytes(range(256)) * 4


async def test_photo_description_and_caption_reach_the_model(start_bot, fake_telegram,
                                                              fake_groq) -> None:
    bot = await start_bot()
    fake_groq.vision.enqueue("Un ticket de supermercado: pan 1,20 €, leche 0,95 €. Total 2,15 €.")
    fake_groq.enqueue_text("Gastaste 2,15 € en total.")
    fake_telegram.push_photo(ALICE, ALICE, JPEG, caption="¿cuánto gasté?")
    [sent] = await fake_telegram.wait_for_sent(1)
    assert sent.text == "Gastaste 2,15 € en total."
    [described] = fake_groq.vision.requests
    assert described["model"] == "qwen/qwen3.6-27b"
    assert fake_groq.vision.images == [JPEG]   # the largest size, not the thumbnail
    parts = described["messages"][0]["content"]
    assert "¿cuánto gasté?" in parts[0]["text"]
    assert parts[1]["image_url"]["url"] == "data:image/jpeg;base64," + base64.b64encode(
        JPEG).decode()
    [chat] = fake_groq.requests
    assert chat["model"] == bot.app.settings.llm.model
    spoken = person(chat)
    assert spoken["role"] == "user"
    assert msg.PHOTO_ORIGIN.format(model="qwen/qwen3.6-27b") in spoken["content"]
    assert "Total 2,15 €" in spoken["content"]
    assert msg.PHOTO_CAPTION.format(caption="¿cuánto gasté?") in spoken["content"]
    assert all(isinstance(m.get("content"), str | None) for m in chat["messages"])
    tape = (chat_dir(bot.app.settings, ALICE) / ".smma" / "session_log.jsonl").read_text()
    assert "Total 2,15 €" in tape and "[foto, descrita por el modelo de visión" in tape


async def test_photo_without_caption_and_image_sent_as_a_file(start_bot, fake_telegram,
                                                              fake_groq) -> None:
    await start_bot()
    fake_groq.vision.enqueue("Un gato naranja dormido en un sofá.")
    fake_groq.vision.enqueue("Un plano de una cocina.")
    fake_telegram.push_photo(ALICE, ALICE, JPEG)
    await fake_telegram.wait_for_sent(1)
    spoken = person(fake_groq.requests[0])["content"]
    assert "Un gato naranja dormido en un sofá." in spoken
    assert "Texto que la acompaña" not in spoken
    png = b"\x89PNG\r\n\x1a\n" + b"\x00" * 64
    fake_telegram.push_document(ALICE, ALICE, "plano.png", png, mime_type="image/png")
    await fake_telegram.wait_for_sent(2)
    assert fake_groq.vision.images[1] == png
    assert fake_groq.vision.requests[1]["messages"][0]["content"][1]["image_url"][
        "url"].startswith("data:image/png;base64,")
    assert "Un plano de una cocina." in person(fake_groq.requests[1])["content"]


async def test_a_vision_model_that_refuses_images_is_explained(
        start_bot, bot_settings, fake_telegram, fake_groq) -> None:
    await start_bot(bot_settings('[vision]\nmodel = "openai/gpt-oss-20b"\n'))
    fake_telegram.push_photo(ALICE, ALICE, JPEG, caption="mira")
    [sent] = await fake_telegram.wait_for_sent(1)
    assert sent.text == msg.PHOTO_REFUSED.format(model="openai/gpt-oss-20b")
    assert len(fake_groq.vision.requests) == 1 and fake_groq.requests == []


async def test_photo_over_the_limit_and_vision_off(start_bot, bot_settings, fake_telegram,
                                                   fake_groq) -> None:
    await start_bot(bot_settings("[vision]\nmax_image_mb = 0.0005\n"))
    fake_telegram.push_photo(ALICE, ALICE, JPEG)
    [sent] = await fake_telegram.wait_for_sent(1)
    assert (sent.text or "").startswith("🖼️ La imagen es demasiado grande")
    assert fake_groq.vision.requests == [] and fake_groq.requests == []


async def test_photo_with_vision_disabled(start_bot, bot_settings, fake_telegram,
                                          fake_groq) -> None:
    await start_bot(bot_settings("[vision]\nenabled = false\n"))
    fake_telegram.push_photo(ALICE, ALICE, JPEG)
    [sent] = await fake_telegram.wait_for_sent(1)
    assert sent.text == msg.PHOTO_DISABLED
    assert fake_groq.vision.requests == [] and fake_groq.requests == []


async def test_unsupported_file_is_refused_politely(start_bot, fake_telegram,
                                                    fake_groq) -> None:
    await start_bot()
    fake_telegram.push_document(ALICE, ALICE, "programa.exe", b"MZ\x90\x00\x03",
                                caption="¿qué es esto?")
    [sent] = await fake_telegram.wait_for_sent(1)
    assert sent.text == msg.DOCUMENT_UNSUPPORTED.format(name="programa.exe")
    fake_telegram.push_document(ALICE, ALICE, "notas.txt", b"\xff\xfe\x00b\x00a\x00d")
    sent = await fake_telegram.wait_for_sent(2)
    assert sent[1].text == msg.DOCUMENT_UNSUPPORTED.format(name="notas.txt")  # not UTF-8
    assert fake_groq.requests == [] and fake_groq.vision.requests == []


async def test_document_without_a_sandbox_is_not_lost_silently(start_bot, fake_telegram,
                                                               fake_groq) -> None:
    await start_bot()   # sandbox.enabled = false in these tests
    fake_telegram.push_document(ALICE, ALICE, "gastos.csv", b"fecha,importe\n2026-11-01,3\n",
                                mime_type="text/csv")
    [sent] = await fake_telegram.wait_for_sent(1)
    assert sent.text == msg.DOCUMENT_NO_SANDBOX.format(name="gastos.csv",
                                                       reason=msg.DOCUMENT_SANDBOX_OFF)
    assert fake_groq.requests == []

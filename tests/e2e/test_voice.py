"""Voice notes through the real bot: fake Telegram (voice update, getFile, download) and fake
Groq (transcription, then the chat completion that answers the transcript)."""

from __future__ import annotations

import pytest

from rumi import messages as msg
from tests.e2e.conftest import ALICE, chat_dir
from tests.prompt_shape import person

pytestmark = pytest.mark.e2e
OGG = b"OggS\x00\x02" + b"\x00" * 200  # what a Telegram voice note starts with


async def test_voice_note_is_answered_from_its_transcript(start_bot, fake_telegram,
                                                          fake_groq) -> None:
    bot = await start_bot()
    fake_groq.audio.enqueue("recuérdame comprar pan", duration=4.2)
    fake_groq.enqueue_text("Claro, anoto lo del pan.")
    fake_telegram.push_voice(ALICE, ALICE, OGG, duration=4)
    sent = await fake_telegram.wait_for_sent(2)
    assert sent[0].text == msg.VOICE_HEARD.format(text="recuérdame comprar pan")
    assert sent[1].text == "Claro, anoto lo del pan."
    [asked] = fake_groq.audio.requests
    assert asked["model"] == "whisper-large-v3-turbo" and asked["language"] == "es"
    assert asked["response_format"] == "verbose_json" and asked["size"] == len(OGG)
    spoken = person(fake_groq.requests[0])
    assert spoken["role"] == "user" and "recuérdame comprar pan" in spoken["content"]
    assert "[nota de voz, 4 s, transcrita]" in spoken["content"]
    tape = (chat_dir(bot.app.settings, ALICE) / ".smma" / "session_log.jsonl").read_text()
    assert "[nota de voz, 4 s, transcrita] recuérdame comprar pan" in tape
    fake_telegram.push_text(ALICE, ALICE, "/status")
    status = (await fake_telegram.wait_for_sent(3))[2].text or ""
    assert "Audio transcrito hoy: 10 s de 8 h" in status  # 4.2 s billed as Groq's 10 s


async def test_audio_file_over_the_limit_is_refused_before_upload(
        start_bot, bot_settings, fake_telegram, fake_groq) -> None:
    await start_bot(bot_settings("[voice]\nmax_file_mb = 0.0001\n"))
    fake_telegram.push_voice(ALICE, ALICE, OGG, kind="audio", filename="charla.mp3")
    [sent] = await fake_telegram.wait_for_sent(1)
    assert (sent.text or "").startswith("🎙️ El audio es demasiado grande")
    assert fake_groq.audio.requests == [] and fake_groq.requests == []


async def test_too_long_voice_and_unreadable_audio_get_clear_answers(
        start_bot, bot_settings, fake_telegram, fake_groq) -> None:
    await start_bot(bot_settings("[voice]\nmax_duration_seconds = 60\n"))
    fake_telegram.push_voice(ALICE, ALICE, OGG, duration=61)
    [sent] = await fake_telegram.wait_for_sent(1)
    assert sent.text == msg.VOICE_TOO_LONG.format(seconds=61, max_seconds=60)
    assert fake_groq.audio.requests == []
    fake_telegram.push_voice(ALICE, ALICE, b"not audio at all", duration=2)
    sent = await fake_telegram.wait_for_sent(2)
    assert sent[1].text == msg.VOICE_BAD_FILE  # Groq's 400, said in Spanish
    assert len(fake_groq.audio.requests) == 1 and fake_groq.requests == []

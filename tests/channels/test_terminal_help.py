"""The terminal's own `/help`: no Telegram captions, and what only the terminal has (`/audio`
when voice notes can be heard, `/salir` / `/exit`), in both catalogues."""

from __future__ import annotations

import io

import pytest

from rumi.app import build_app
from rumi.channels.terminal import TerminalChannel


async def help_text(make_settings, fake_groq, *, voice: bool, language: str) -> str:
    settings = make_settings(
        f'[llm]\napi_key = "k"\nbase_url = "{fake_groq.base_url}"\n'
        f"[agent]\nlanguage = \"{language}\"\n[sandbox]\nenabled = false\n"
        f"[memory]\nembeddings_enabled = false\n[voice]\nenabled = {str(voice).lower()}\n")
    app = await build_app(settings)
    await app.start()
    try:
        out = io.StringIO()
        await TerminalChannel(app.assistant, language=language,
                              stdin=io.StringIO("/help\n/salir\n"), stdout=out).run()
    finally:
        await app.stop()
    assert not fake_groq.requests  # /help never asks the model
    return out.getvalue()


@pytest.mark.parametrize(("language", "telegram", "words"), [
    ("es", "como pie", ["/import <ruta", "/salir, /exit", "/audio <ruta>", "/remember"]),
    ("en", "as caption", ["/import <path", "/exit, /salir", "/audio <path>", "/remember"]),
])
async def test_terminal_help_is_the_terminals(make_settings, fake_groq, language, telegram,
                                              words) -> None:
    text = await help_text(make_settings, fake_groq, voice=True, language=language)
    assert telegram not in text  # old code: Telegram's "send the file with /import as caption"
    for word in words:
        assert word in text


async def test_no_audio_line_when_voice_notes_are_off(make_settings, fake_groq) -> None:
    text = await help_text(make_settings, fake_groq, voice=False, language="es")
    assert "/audio" not in text and "/salir, /exit" in text

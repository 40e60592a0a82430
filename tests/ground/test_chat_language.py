"""Both catalogues say the same things, and each chat's language is chosen and remembered."""

from __future__ import annotations

import io
import string
from pathlib import Path

from rumi import messages as msg
from rumi import messages_en, messages_es
from rumi.app import build_app
from rumi.channels.terminal import TerminalChannel
from rumi.chat_language import ChatLanguages, locale_language
from tests.language_words import english_markers, language_of, spanish_markers

# tool results the model reads, not the person: English in both catalogues on purpose
MODEL_FACING = {"TOOL_SKIPPED", "TOOL_CANCELLED", "TOOL_NOT_RUN", "TOOL_MAYBE_RAN"}


def _names(module: object) -> set[str]:
    return {n for n in vars(module) if not n.startswith("_") and n != "annotations"}


def _sentences(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [v for v in value.values() if isinstance(v, str)]
    return []


def _fields(text: str) -> list[str]:
    return sorted(f for _, f, _, _ in string.Formatter().parse(text) if f is not None)


def test_both_catalogues_have_the_same_names_and_placeholders() -> None:
    assert _names(messages_es) == _names(messages_en)
    for name in _names(messages_es):
        es, en = getattr(messages_es, name), getattr(messages_en, name)
        assert type(es) is type(en), name
        if isinstance(es, dict):
            assert set(es) == set(en), name
        for a, b in zip(_sentences(es), _sentences(en), strict=True):
            assert _fields(a) == _fields(b), name


def test_each_catalogue_reads_as_its_own_language() -> None:
    for name in _names(messages_es) - MODEL_FACING:
        for text in _sentences(getattr(messages_es, name)):
            assert not english_markers(text), (name, english_markers(text))
        for text in _sentences(getattr(messages_en, name)):
            assert not spanish_markers(text), (name, spanish_markers(text))


def test_durations_in_both_languages() -> None:
    with msg.use_language("es"):
        assert msg.format_duration(3 * 86400 + 7200) == "3 días y 2 h"
        assert msg.format_duration(86400) == "1 día"
        assert msg.format_duration(42) == "42 s"
    with msg.use_language("en"):
        assert msg.format_duration(3 * 86400 + 7200) == "3 days 2 h"
        assert msg.format_duration(125 * 60) == "2 h 5 min"


def test_input_problems_are_told_in_the_active_language() -> None:
    from rumi.memory.store.codec import clean_text
    from rumi.memory.store.models import MemoryInputError

    for code, expected in (("en", "The memory is too long (12 characters; at most 10)."),
                           ("es", "El recuerdo es demasiado largo (12 caracteres; máximo 10).")):
        with msg.use_language(code):
            try:
                clean_text("x" * 12, "el recuerdo", 10)
            except MemoryInputError as exc:
                assert str(exc) == expected
            else:
                raise AssertionError("not refused")


def test_the_detector_tells_the_languages_apart() -> None:
    assert language_of("¿Qué quieres que recuerde?") == "es"
    assert language_of("What should I remember?") == "en"
    assert language_of("llm.api_key /forget #12") is None


async def test_a_fixed_language_ignores_the_person_app() -> None:
    languages = ChatLanguages("en")
    assert await languages.resolve("1", "es-ES") == "en"
    assert languages.for_chat("2") == "en"


async def test_auto_remembers_each_chat_across_a_restart(tmp_path: Path) -> None:
    languages = ChatLanguages("auto", tmp_path)
    assert await languages.resolve("7", "en-GB") == "en"
    assert await languages.resolve("8", "es") == "es"
    assert await languages.resolve("7", "fr") == "en"   # not spoken: the chat's own stays
    assert languages.for_chat("9") == "es"              # never seen: the default
    assert (tmp_path / "chats" / "7" / "language").read_text().strip() == "en"
    again = ChatLanguages("auto", tmp_path, default="en")
    assert again.for_chat("7") == "en"   # before load: the default
    assert await again.load() == 2
    assert again.for_chat("7") == "en" and again.for_chat("8") == "es"
    assert again.for_chat("9") == "en"


async def test_a_chat_language_that_cannot_be_saved_still_answers(tmp_path: Path) -> None:
    blocker = tmp_path / "chats"
    blocker.write_text("not a directory")
    languages = ChatLanguages("auto", tmp_path)
    assert await languages.resolve("7", "en") == "en"
    assert languages.for_chat("7") == "en"


def test_the_terminal_locale() -> None:
    assert locale_language({"LANG": "en_US.UTF-8"}) == "en"
    assert locale_language({"LC_ALL": "es_ES.UTF-8", "LANG": "en_US.UTF-8"}) == "es"
    assert locale_language({"LANG": "C.UTF-8"}) is None
    assert locale_language({"LANG": "fr_FR.UTF-8"}) is None
    assert locale_language({}) is None


async def _terminal(make_settings, fake_groq, language: str, locale: str | None,
                    lines: str) -> str:
    settings = make_settings(f'[llm]\napi_key = "k"\nbase_url = "{fake_groq.base_url}"\n'
                             f'[agent]\nlanguage = "{language}"\n'
                             "[sandbox]\nenabled = false\n[memory]\nembeddings_enabled = false\n")
    app = await build_app(settings)
    await app.start()
    out = io.StringIO()
    try:
        with msg.use_language("es"):
            await TerminalChannel(app.assistant, stdin=io.StringIO(lines), stdout=out,
                                  language=locale).run()
    finally:
        await app.stop()
    return out.getvalue()


async def test_terminal_in_english_says_nothing_in_spanish(make_settings, fake_groq) -> None:
    fake_groq.enqueue_status(401)
    text = await _terminal(make_settings, fake_groq, "en", "es",
                           "/help\n/status\n/remember my city: Lima\n/memory\n/forget city\n"
                           "hello\n/exit\n")
    assert "Groq refused the API key" in text and "Memories kept: 0" in text
    assert not spanish_markers(text), spanish_markers(text)


async def test_terminal_auto_follows_the_locale(make_settings, fake_groq) -> None:
    english = await _terminal(make_settings, fake_groq, "auto", "en", "/help\n/exit\n")
    assert "Here is what I can do" in english and "Goodbye!" in english
    assert not spanish_markers(english), spanish_markers(english)
    spanish = await _terminal(make_settings, fake_groq, "auto", "es", "/help\n/salir\n")
    assert "Esto es lo que puedo hacer" in spanish and "¡Hasta luego!" in spanish
    assert not english_markers(spanish), english_markers(spanish)


def test_start_up_notices_speak_each_chat_language() -> None:
    from rumi.memory.files.healing import Recovery, notices
    from rumi.memory.store.health import DbHealth

    recovery = Recovery(DbHealth("missing"), rebuilt={"1": 3, "2": 4})
    said = dict(notices(recovery, {"1": "en", "2": "es"}.__getitem__))
    assert language_of(said["1"]) == "en" and "3 memories" in said["1"]
    assert language_of(said["2"]) == "es" and "4 recuerdos" in said["2"]


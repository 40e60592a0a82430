"""The active language picks the catalogue; a missing sentence falls back to Spanish."""

from __future__ import annotations

import asyncio

import pytest

from rumi import messages as msg
from rumi import messages_en, messages_es


def test_spanish_is_the_default_catalogue() -> None:
    assert msg.current_language() == "es"
    assert msg.BUSY == messages_es.BUSY


def test_use_language_switches_and_restores() -> None:
    with msg.use_language("en-US") as code:
        assert code == "en"
        assert msg.format_wait(200) == messages_en.format_wait(200) == "about 3 min"
    assert msg.format_wait(200) == "unos 3 min"


def test_unknown_language_falls_back_to_spanish() -> None:
    assert msg.normalize_language("fr") is None
    with msg.use_language("fr"):
        assert msg.current_language() == "es"


def test_a_sentence_missing_in_english_is_said_in_spanish(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(messages_es, "ONLY_IN_SPANISH", "solo en español", raising=False)
    with msg.use_language("en"):
        assert msg.ONLY_IN_SPANISH == "solo en español"


def test_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError):
        msg.NO_SUCH_SENTENCE  # noqa: B018


def test_each_task_keeps_its_own_language() -> None:
    async def speak(code: str) -> str:
        with msg.use_language(code):
            await asyncio.sleep(0.01)
            return msg.format_wait(30)

    async def both() -> list[str]:
        return list(await asyncio.gather(speak("en"), speak("es")))

    assert asyncio.run(both()) == ["about 30 s", "unos 30 s"]

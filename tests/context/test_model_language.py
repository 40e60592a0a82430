"""Issue 27: with `agent.language = "en"` the model read "Reply language: English" beside
«Dashboard de metacognición», «Memorias recuperadas» and `- Idioma: español`. Everything the
context engine writes for the model (identity, section headers and defaults, the automatic
marker, recalled-memories header, notices, the dashboard) is rendered for a new chat in each
language and judged by the word detector, not against the texts themselves.

Tool schemas are not covered here yet (see docs/configuration.md, "Languages")."""

from __future__ import annotations

from typing import Any

import pytest

from rumi import messages as msg
from rumi.context import ContextEngine
from rumi.sessions.state import SessionState
from tests.language_words import english_markers, spanish_markers


class Recall:
    async def recall_block(self, chat_id: str, query: str, budget_tokens: int) -> str:
        return "- 42"   # a memory with no words: only Rumi's header around it is judged


def everything_read(messages: list[dict[str, Any]]) -> str:
    return "\n".join(str(m.get("content") or "") for m in messages)


async def render_new_chat(settings, counter, language: str, chat_id: str) -> str:
    engine = ContextEngine(settings, counter, None, recall=Recall())
    with msg.use_language(language):
        session = SessionState(chat_id=chat_id)
        await engine.open(session)
        await engine.add_message(session, "user", "42")
        rt = engine.runtime(session)
        rt.notices["probe"] = "x"
        messages = await engine.build(session, query="42", notes=["123"])
    return everything_read(messages)


async def test_an_english_chat_reads_no_spanish(settings, counter) -> None:
    text = await render_new_chat(settings, counter, "en", "901")
    assert not spanish_markers(text), (spanish_markers(text), text)
    for part in ("Reply language: English", "Metacognition dashboard", "Recalled memories",
                 "automatic system context", "Language: English", "MEMORY STATE:"):
        assert part in text


async def test_a_spanish_chat_reads_no_english(settings, counter) -> None:
    text = await render_new_chat(settings, counter, "es", "902")
    assert not english_markers(text), (english_markers(text), text)
    assert "Idioma de respuesta: español" in text and "Dashboard de metacognición" in text


async def test_an_existing_chat_keeps_its_files_in_another_language(settings, counter) -> None:
    """Defaults are for new chats only: a profile the person wrote is never replaced."""
    engine = ContextEngine(settings, counter, None)
    session = SessionState(chat_id="903")
    with msg.use_language("es"):
        await engine.open(session)
    profile = engine.runtime(session).paths.smma / "user_profile.md"
    profile.write_text("## Usuario\n- Nombre: Ana, escribe en español\n", encoding="utf-8")
    again = ContextEngine(settings, counter, None)
    with msg.use_language("en"):
        await again.open(SessionState(chat_id="903"))
    assert profile.read_text(encoding="utf-8") == "## Usuario\n- Nombre: Ana, escribe en español\n"


@pytest.mark.parametrize("language", ["es", "en"])
async def test_the_leading_message_is_stable_within_a_chat(settings, counter, language) -> None:
    """Prompt caching: the same chat in the same language gets a byte-identical prefix."""
    engine = ContextEngine(settings, counter, None)
    with msg.use_language(language):
        session = SessionState(chat_id="904")
        await engine.open(session)
        await engine.add_message(session, "user", "42")
        first = (await engine.build(session))[0]["content"]
        await engine.add_message(session, "assistant", "7")
        await engine.add_message(session, "user", "8")
        second = (await engine.build(session))[0]["content"]
    assert first == second

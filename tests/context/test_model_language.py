"""Issue 27: with `agent.language = "en"` the model read "Reply language: English" beside
«Dashboard de metacognición», «Memorias recuperadas» and `- Idioma: español`. Everything the
context engine writes for the model (identity, section headers and defaults, the automatic
marker, recalled-memories header, notices, the dashboard) is rendered for a new chat in each
language and judged by the word detector, not against the texts themselves. So are the tool
schemas (every tool `build_app` can register) and what the tools return to the model."""

from __future__ import annotations

import json
from typing import Any

import pytest

from rumi import messages as msg
from rumi.base.tools import Tool, ToolContext, ToolRegistry
from rumi.context import ContextEngine
from rumi.memory.commands import MemoryCommands
from rumi.reminders.commands import schedule_tool
from rumi.sandbox.manager import SandboxManager
from rumi.sandbox.tools import sandbox_tools
from rumi.sessions.state import SessionState
from tests.language_words import english_markers, spanish_markers

MARKERS = {"en": spanish_markers, "es": english_markers}   # what must NOT be found


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


def every_tool(engine: ContextEngine, settings) -> list[Tool]:
    """Every tool the model can be offered: context, sandbox, memory and reminders."""
    memory = MemoryCommands(settings.data_dir, store=None,  # type: ignore[arg-type]
                            lifecycle=None, journal=None)  # type: ignore[arg-type]
    return [*engine.tools(), *sandbox_tools(SandboxManager(settings.sandbox, settings.data_dir)),
            *memory.tools(), schedule_tool(None)]  # type: ignore[arg-type]


def schema_words(node: Any) -> list[str]:
    """The descriptions of a tool list: what the model reads besides names and types."""
    if isinstance(node, list):
        return [w for n in node for w in schema_words(n)]
    if not isinstance(node, dict):
        return []
    found = [str(node["description"])] if isinstance(node.get("description"), str) else []
    return found + [w for v in node.values() for w in schema_words(v)]


@pytest.mark.parametrize("language", ["es", "en"])
def test_every_tool_schema_reads_in_the_chat_language(settings, counter, language) -> None:
    """Issue 27: an English chat was offered «Quita mensajes del contexto…», a Spanish one
    "Save a lasting fact about the user…"; the registry renders each chat's language."""
    registry = ToolRegistry()
    for tool in every_tool(ContextEngine(settings, counter, None), settings):
        registry.register(tool)
    specs = registry.specs(language)
    words = schema_words(specs)
    assert len(words) >= len(specs) + 4   # tool and parameter descriptions were all read
    for text in words:
        assert not MARKERS[language](text), (language, MARKERS[language](text), text)
    # the same chat gets a byte-identical list every turn (prompt cache), and the names
    # never change with the language
    assert json.dumps(registry.specs(language)) == json.dumps(specs)
    other = registry.specs("en" if language == "es" else "es")
    assert [s["function"]["name"] for s in other] == [s["function"]["name"] for s in specs]


@pytest.mark.parametrize("language", ["es", "en"])
async def test_tool_results_read_in_the_chat_language(settings, counter, language) -> None:
    """"Liberados ≈… tokens" after "Reply language: English": a memory system call's result
    (and its refusals) follow the chat's language, numbers too (1.500 / 1,500)."""
    engine = ContextEngine(settings, counter, None)
    registry = ToolRegistry()
    for tool in engine.tools():
        registry.register(tool)
    with msg.use_language(language):
        session = SessionState(chat_id="905")
        await engine.open(session)
        for n in range(3):
            await engine.add_message(session, "user", "42 " * 700)
            await engine.add_message(session, "assistant", str(n))
        ctx = ToolContext(chat_id="905", session=session)
        ids = [item.id for item in session.items]
        freed = sum(item.token_count or 0 for item in session.items[:2])
        results = [await registry.execute("prune_messages",
                                          json.dumps({"message_ids": ids[:2] + [999]}), ctx),
                   await registry.execute("load_from_disk", '{"file_name": "x.md"}', ctx),
                   await registry.execute("edit_section", json.dumps(
                       {"section_name": "user_profile", "new_content": "- 42 " * 2000}), ctx)]
    pruned = results[0]
    assert freed > 1_000 and not pruned.is_error
    shown = f"{freed:,}".replace(",", ".") if language == "es" else f"{freed:,}"
    assert f"≈{shown} tokens" in pruned.content, pruned.content
    assert all(r.is_error for r in results[1:])
    for result in results:
        assert not MARKERS[language](result.content), (language, result.content)
    big = "1.500" if language == "es" else "1,500"
    assert big in results[2].content, results[2].content


def test_every_tool_text_set_has_the_same_entries_and_placeholders() -> None:
    """A result missing in one language would fail in front of the model mid-turn."""
    import string

    from rumi.context import syscall_text
    from rumi.memory import tool_text as memory_text
    from rumi.reminders import tool_text as reminder_text

    def fields(text: str) -> list[str]:
        return sorted(f for _, f, _, _ in string.Formatter().parse(text) if f)

    for module in (syscall_text, memory_text, reminder_text):
        assert set(module.SPANISH) == set(module.ENGLISH), module.__name__
        for key, spanish in module.SPANISH.items():
            assert fields(spanish) == fields(module.ENGLISH[key]), (module.__name__, key)
            assert not english_markers(spanish), (key, english_markers(spanish))
            assert not spanish_markers(module.ENGLISH[key]), (key, module.ENGLISH[key])

"""Token counting primitives and the remaining limits (action log budget, big disk files)."""

from __future__ import annotations

import json
from typing import Any

from rumi.context import ContextEngine, TokenCounter
from rumi.context.builder import render_item
from rumi.sessions.state import ContextItem, SessionState
from tests.prompt_shape import automatic


def test_counts_match_tiktoken(counter: TokenCounter, encoding: Any) -> None:
    text = "El módulo de autenticación falla con OAuth2 ☃ — ¿por qué?"
    assert counter.count(text) == len(encoding.encode(text))
    assert counter.count("") == 0
    assert counter.count("<|endoftext|>") > 1  # special tokens counted as plain text
    calls = [{"id": "c1", "type": "function", "function": {"name": "bash", "arguments": "{}"}}]
    message = {"role": "assistant", "content": "hola", "tool_calls": calls}
    expected = 4 + len(encoding.encode("hola")) + len(encoding.encode(json.dumps(calls)))
    assert counter.count_message(message) == expected


def test_truncate_on_token_boundary(counter: TokenCounter) -> None:
    text = "palabra " * 500
    cut = counter.truncate(text, 100)
    assert counter.count(cut) <= 100 and text.startswith(cut) and len(cut) > 100
    assert counter.truncate("corto", 100) == "corto"
    assert counter.truncate("algo", 0) == ""


def test_item_count_is_cached(counter: TokenCounter) -> None:
    item = ContextItem(id=7, role="user", content="hola " * 50)
    first = counter.item_tokens(item, render_item(item))
    assert item.token_count == first
    assert counter.item_tokens(item, {"role": "user", "content": ""}) == first


def test_fallback_estimate_is_chars_over_four() -> None:
    fallback = TokenCounter("does-not-exist")
    assert fallback.is_fallback and fallback.fallback_reason
    assert fallback.count("x" * 40) == 10
    assert fallback.truncate("x" * 40, 5) == "x" * 20


async def test_action_log_over_budget_is_flagged(make_settings, counter: TokenCounter) -> None:
    settings = make_settings(
        "[context.section_budgets]\nidentity = 2000\ndashboard = 300\nuser_profile = 1500\n"
        "project_context = 5000\ncurrent_task = 3000\nagent_notes = 2000\n"
        "action_log = 200\nrecalled_memories = 1500\n")
    engine = ContextEngine(settings, counter, None)
    session = SessionState(chat_id="log")
    for n in range(10):
        await engine.add_message(session, "user", f"mensaje {n} " * 10)
    dashboard = automatic(await engine.build(session))
    assert "Sección action_log por encima de su presupuesto" in dashboard


async def test_load_from_disk_truncates_a_huge_human_file(engine: ContextEngine,
                                                         session: SessionState, calls) -> None:
    limit = engine.cfg.disk_file_max_chars
    path = engine.runtime(session).paths.smma / "enorme.md"
    path.write_text("y" * (limit + 500))
    result = await calls("load_from_disk", file_name="enorme.md")
    assert not result.is_error
    assert "archivo truncado" in result.content
    assert result.content.count("y") == limit

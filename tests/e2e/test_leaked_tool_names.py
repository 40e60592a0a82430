"""The real bot, through fake Telegram and the real `groq` client, when gpt-oss leaks its
harmony wrapping into a tool name (as Groq's gpt-oss does: `<|channel|>` in the name, the
`functions.` namespace, `json` glued on). The tool runs in the same step: one request for the
call, one for the answer, and the stored history names the real tool.
"""

from __future__ import annotations

import json

import pytest

from tests.e2e.conftest import ALICE, chat_dir

pytestmark = pytest.mark.e2e


@pytest.fixture(params=[True, False], ids=["stream", "whole"])
def telegram_stream(request: pytest.FixtureRequest) -> bool:
    """Every fault here is met on streamed answers (drafts) and on whole ones."""
    return bool(request.param)

NOTES_CALL = {"file_name": "agent_notes.md"}


async def ask(fake_telegram, text: str) -> str:
    before = len(fake_telegram.sent)
    fake_telegram.push_text(ALICE, ALICE, text)
    sent = await fake_telegram.wait_for_sent(before + 1)
    return sent[before].text or ""


def stored_calls(bot) -> list[dict]:
    tape = chat_dir(bot.app.settings, ALICE) / ".smma" / "session_log.jsonl"
    records = [json.loads(line) for line in tape.read_text().splitlines()]
    return [call for r in records for call in r.get("tool_calls") or []]


@pytest.mark.parametrize("leaked", ["load_from_disk<|channel|>commentary",
                                    "functions.load_from_disk", "load_from_diskjson",
                                    "load_from_disk<|constrain|>json"])
async def test_a_leaked_name_runs_the_tool_without_an_extra_request(
        start_bot, fake_telegram, fake_groq, leaked: str) -> None:
    bot = await start_bot()
    fake_groq.enqueue_tool_call(leaked, NOTES_CALL)
    fake_groq.enqueue_text("Tus notas están vacías.")
    assert await ask(fake_telegram, "¿qué dicen mis notas?") == "Tus notas están vacías."
    assert len(fake_groq.requests) == 2
    second = fake_groq.requests[1]["messages"]
    call = next(m for m in second if m.get("tool_calls"))["tool_calls"][0]
    assert call["function"]["name"] == "load_from_disk"
    result = next(m for m in second if m["role"] == "tool")
    assert result["tool_call_id"] == call["id"]
    assert "unknown tool" not in result["content"].lower()
    assert "error" not in result["content"].lower()
    assert [c["function"]["name"] for c in stored_calls(bot)] == ["load_from_disk"]


async def test_a_leaked_name_in_failed_generation_is_recovered_in_one_step(
        start_bot, fake_telegram, fake_groq) -> None:
    await start_bot()
    fake_groq.enqueue_tool_use_failed(
        '{"name": "load_from_disk<|channel|>commentary", '
        '"arguments": {"file_name": "agent_notes.md"}}',
        message="tool call validation failed: attempted to call tool "
                "'load_from_disk<|channel|>commentary' which was not in request.tools")
    fake_groq.enqueue_text("Tus notas están vacías.")
    assert await ask(fake_telegram, "¿qué dicen mis notas?") == "Tus notas están vacías."
    assert len(fake_groq.requests) == 2
    second = fake_groq.requests[1]["messages"]
    call = next(m for m in second if m.get("tool_calls"))["tool_calls"][0]
    assert call["function"]["name"] == "load_from_disk"
    assert json.loads(call["function"]["arguments"]) == NOTES_CALL
    assert not any(str(m.get("content") or "").startswith("[Rumi · aviso") for m in second)


async def test_an_ambiguous_name_gets_the_unknown_tool_answer(start_bot, fake_telegram,
                                                              fake_groq) -> None:
    await start_bot()
    fake_groq.enqueue_tool_call("load_from_disk<|channel|>save_to_disk", NOTES_CALL)
    fake_groq.enqueue_text("Perdona.")
    assert await ask(fake_telegram, "¿qué dicen mis notas?") == "Perdona."
    result = next(m for m in fake_groq.requests[1]["messages"] if m["role"] == "tool")
    assert "Unknown tool" in result["content"]

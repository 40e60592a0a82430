"""Long-term memory wired into the running bot: /remember, then recalled into the prompt."""

from __future__ import annotations

import pytest

from tests.e2e.conftest import ALICE
from tests.prompt_shape import automatic

pytestmark = pytest.mark.e2e


async def test_remembered_fact_is_recalled_into_the_prompt(start_bot, fake_telegram,
                                                           fake_groq) -> None:
    await start_bot()
    fake_telegram.push_text(ALICE, ALICE, "/remember me encanta el té verde con jengibre")
    [saved] = await fake_telegram.wait_for_sent(1)
    assert "té verde" in (saved.text or "")
    fake_groq.enqueue_text("Té verde con jengibre, claro.")
    fake_telegram.push_text(ALICE, ALICE, "¿qué té me gusta? el verde con jengibre")
    await fake_telegram.wait_for_sent(2)
    chat = [r for r in fake_groq.requests if "response_format" not in r][-1]
    assert "jengibre" in automatic(chat)  # recalled (section 8), before the person's words
    assert "jengibre" not in chat["messages"][0]["content"]  # the stable prefix stays stable
    tools = {t["function"]["name"] for t in chat["tools"]}
    assert {"edit_section", "prune_messages", "remember", "forget", "search_memory"} <= tools

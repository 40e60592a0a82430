"""A document lands in the chat's sandbox workspace (real Docker engine) and the agent is told
where; a second file with the same name never replaces the first."""

from __future__ import annotations

import pytest

from tests.e2e.conftest import ALICE
from tests.e2e.test_sandbox_e2e import new_chat, owned_sandboxes, sandbox_settings
from tests.prompt_shape import person

pytestmark = [pytest.mark.e2e, pytest.mark.docker]
__all__ = ["owned_sandboxes"]   # the fixture, used by name

CSV = "fecha,concepto,importe\n2026-11-01,pan,1.20\n2026-11-02,café,2.50\n".encode()


async def test_document_is_saved_in_the_workspace_and_the_agent_told(
        start_bot, bot_settings, fake_telegram, fake_groq, owned_sandboxes) -> None:
    bot = await start_bot(sandbox_settings(bot_settings))
    manager = bot.app.parts["sandbox"]
    owned_sandboxes(manager.instance)
    chat = new_chat()
    fake_groq.enqueue_text("Guardado; ¿lo sumo?")
    fake_telegram.push_document(ALICE, chat, "gastos.csv", CSV, caption="mis gastos",
                                mime_type="text/csv")
    [sent] = await fake_telegram.wait_for_sent(1, timeout=90)
    assert sent.text == "Guardado; ¿lo sumo?"
    spoken = person([r for r in fake_groq.requests if "response_format" not in r][0])
    assert "/workspace/archivos/gastos.csv" in spoken["content"]
    assert "mis gastos" in spoken["content"]
    saved = await manager.exec(str(chat), "cat /workspace/archivos/gastos.csv")
    assert saved.stdout.encode() == CSV

    fake_groq.enqueue_text("Tengo las dos versiones.")
    other = b"fecha,concepto,importe\n"
    fake_telegram.push_document(ALICE, chat, "gastos.csv", other, mime_type="text/csv")
    await fake_telegram.wait_for_sent(2, timeout=90)
    spoken = person([r for r in fake_groq.requests if "response_format" not in r][-1])
    assert "/workspace/archivos/gastos-2.csv" in spoken["content"]
    first = await manager.exec(str(chat), "cat /workspace/archivos/gastos.csv")
    second = await manager.exec(str(chat), "cat /workspace/archivos/gastos-2.csv")
    assert first.stdout.encode() == CSV and second.stdout.encode() == other

"""The sandbox wired into the real app: a bash tool call runs in the chat's own container,
and /reset removes that container."""

from __future__ import annotations

import asyncio

import pytest

from tests.conftest import SANDBOX_TEST_IMAGE
from tests.e2e.conftest import ALICE

pytestmark = [pytest.mark.e2e, pytest.mark.docker]


async def test_bash_round_trip_and_reset_removes_container(docker_engine, start_bot,
                                                           bot_settings, fake_telegram,
                                                           fake_groq) -> None:
    settings = bot_settings()
    settings.sandbox.enabled = True
    settings.sandbox.image = SANDBOX_TEST_IMAGE
    bot = await start_bot(settings)
    fake_groq.enqueue_tool_call("bash", {"command": "echo hola-desde-$((20+22)) && id -u"})
    fake_groq.enqueue_text("Ejecutado.")
    fake_telegram.push_text(ALICE, ALICE, "ejecuta algo")
    [sent] = await fake_telegram.wait_for_sent(1, timeout=60)
    assert sent.text == "Ejecutado."
    chat_requests = [r for r in fake_groq.requests if "response_format" not in r]
    offered = {t["function"]["name"] for t in chat_requests[0]["tools"]}
    assert {"bash", "read_file", "write_file", "edit_section"} <= offered
    tool_msg = chat_requests[1]["messages"][-1]
    assert tool_msg["role"] == "tool" and "hola-desde-42" in tool_msg["content"]
    assert "1000" in tool_msg["content"]  # never root
    manager = bot.app.parts["sandbox"]
    name = manager.identity(str(ALICE)).container_name

    async def exists() -> bool:
        proc = await asyncio.create_subprocess_exec(
            "docker", "ps", "-aq", "--filter", f"name=^{name}$",
            stdout=asyncio.subprocess.PIPE)
        out, _ = await proc.communicate()
        return bool(out.strip())

    assert await exists()
    fake_telegram.push_text(ALICE, ALICE, "/reset")
    await fake_telegram.wait_for_sent(2, timeout=60)
    assert not await exists()

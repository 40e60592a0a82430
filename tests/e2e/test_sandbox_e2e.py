"""The sandbox wired into the real app, driven through Telegram: the issue's "done when" command,
/reset, /status saying why the sandbox is down, and the engine vanishing mid-session."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Callable

import pytest

import docker
from rumi import messages as msg
from rumi.sandbox import loopvolume
from tests.conftest import SANDBOX_TEST_IMAGE
from tests.e2e.conftest import ALICE
from tests.fakes.docker_relay import docker_socket_path

pytestmark = [pytest.mark.e2e, pytest.mark.docker]

SANDBOX_TOOLS = {"bash", "read_file", "write_file", "list_files"}
TWO_TO_THE_100 = "1267650600228229401496703205376"


def new_chat() -> int:
    """A private chat of ALICE's own for this test: container and volume names are global on
    the engine, so a fixed id would collide with a parallel run (and with earlier runs)."""
    return 10**9 + uuid.uuid4().int % 10**9


@pytest.fixture
async def owned_sandboxes(docker_engine: None) -> AsyncIterator[Callable[[str], None]]:
    """Register a bot's sandbox instance; at teardown its containers and volumes go.

    They are found by this instance's labels (a hash of this test's data_dir, so never another
    run's or another Rumi's) and removed through their handles. The socket is fixed now, before
    a test points DOCKER_HOST at a relay it then cuts.
    """
    base_url = f"unix://{docker_socket_path()}"
    instances: list[str] = []
    yield instances.append

    def remove_all() -> None:
        client = docker.DockerClient(base_url=base_url)
        try:
            for instance in instances:
                filters = {"label": ["rumi.managed=1", f"rumi.instance={instance}"]}
                for container in client.containers.list(all=True, filters=filters):
                    container.remove(force=True)
                loopvolume.remove_volumes(client, SANDBOX_TEST_IMAGE,
                                          client.volumes.list(filters=filters))
        finally:
            client.close()

    await asyncio.to_thread(remove_all)


def chat_requests(fake_groq) -> list[dict]:
    """The agent's requests (memory extraction, which asks for JSON, left out)."""
    return [r for r in fake_groq.requests if "response_format" not in r]


def offered(request: dict) -> set[str]:
    return {t["function"]["name"] for t in request.get("tools") or []}


def sandbox_settings(bot_settings, image: str = SANDBOX_TEST_IMAGE):
    settings = bot_settings()
    settings.sandbox.enabled = True
    settings.sandbox.image = image
    return settings


async def test_done_when_command_and_reset_removes_container(
    start_bot, bot_settings, fake_telegram, fake_groq, owned_sandboxes
) -> None:
    """The issue's acceptance: asked to run `python3 -c 'print(2**100)'`, the user gets the
    number; then /reset removes the chat's container."""
    bot = await start_bot(sandbox_settings(bot_settings))
    manager = bot.app.parts["sandbox"]
    owned_sandboxes(manager.instance)
    chat = new_chat()
    fake_groq.enqueue_tool_call("bash", {"command": "python3 -c 'print(2**100)'"})
    fake_groq.enqueue_text(f"2**100 = {TWO_TO_THE_100}")
    fake_telegram.push_text(ALICE, chat, "ejecuta python3 -c 'print(2**100)'")
    [sent] = await fake_telegram.wait_for_sent(1, timeout=60)
    assert TWO_TO_THE_100 in (sent.text or "")
    requests = chat_requests(fake_groq)
    assert {"bash", "read_file", "write_file", "edit_section"} <= offered(requests[0])
    tool_msg = requests[1]["messages"][-1]   # the step ends with the tool result
    assert tool_msg["role"] == "tool"
    assert f"{TWO_TO_THE_100}\n" in tool_msg["content"]  # after the context's "[#id] " tag
    assert "[exit code 0]" in tool_msg["content"]

    name = manager.identity(str(chat)).container_name
    client = docker.from_env()
    try:
        container = await asyncio.to_thread(client.containers.get, name)
        assert container.labels["rumi.instance"] == manager.instance
        fake_telegram.push_text(ALICE, chat, "/status")   # /status for people: running
        assert msg.STATUS_SANDBOX_RUNNING in ((await fake_telegram.wait_for_sent(2))[1].text
                                              or "")
        fake_telegram.push_text(ALICE, chat, "/reset")
        await fake_telegram.wait_for_sent(3, timeout=60)
        with pytest.raises(docker.errors.NotFound):
            await asyncio.to_thread(container.reload)
        fake_telegram.push_text(ALICE, chat, "/status")   # gone with the session: stopped
        assert msg.STATUS_SANDBOX_OK in ((await fake_telegram.wait_for_sent(4))[3].text or "")
    finally:
        client.close()


async def test_status_says_the_image_is_missing(
    start_bot, bot_settings, fake_telegram, docker_engine
) -> None:
    await start_bot(sandbox_settings(bot_settings, image="rumi-sandbox:does-not-exist"))
    chat = new_chat()
    fake_telegram.push_text(ALICE, chat, "/status")
    [sent] = await fake_telegram.wait_for_sent(1, timeout=30)
    text = sent.text or ""
    assert "Sandbox: no disponible ahora" in text
    assert "falta la imagen rumi-sandbox:does-not-exist" in text
    assert "rumi sandbox build" in text


async def test_status_says_docker_does_not_answer(
    start_bot, bot_settings, fake_telegram, monkeypatch, tmp_path
) -> None:
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-engine.sock")
    await start_bot(sandbox_settings(bot_settings))
    chat = new_chat()
    fake_telegram.push_text(ALICE, chat, "/status")
    [sent] = await fake_telegram.wait_for_sent(1, timeout=30)
    text = sent.text or ""
    assert "Sandbox: no disponible ahora" in text
    assert "Docker no responde" in text


async def test_engine_lost_mid_session_bot_keeps_answering_without_tools(
    start_bot, bot_settings, fake_telegram, fake_groq, owned_sandboxes, docker_relay, monkeypatch
) -> None:
    """"Docker daemon stopped mid-session": simulated by cutting the bot's only path to the
    engine (the shared dockerd cannot be stopped in a test)."""
    monkeypatch.setenv("DOCKER_HOST", f"unix://{docker_relay.path}")
    bot = await start_bot(sandbox_settings(bot_settings))
    owned_sandboxes(bot.app.parts["sandbox"].instance)
    chat = new_chat()

    fake_groq.enqueue_tool_call("bash", {"command": "echo engine-up"})
    fake_groq.enqueue_text("Funciona.")
    fake_telegram.push_text(ALICE, chat, "prueba el sandbox")
    await fake_telegram.wait_for_sent(1, timeout=60)
    first = chat_requests(fake_groq)
    assert offered(first[0]) >= SANDBOX_TOOLS
    assert "engine-up\n[exit code 0]" in first[1]["messages"][-1]["content"]

    await docker_relay.stop()  # the engine goes away between two turns
    seen = len(chat_requests(fake_groq))
    fake_groq.enqueue_tool_call("bash", {"command": "echo engine-gone"})
    fake_groq.enqueue_text("Ahora no puedo ejecutar comandos.")
    fake_telegram.push_text(ALICE, chat, "otra vez")
    sent = await fake_telegram.wait_for_sent(2, timeout=60)
    assert sent[1].text == "Ahora no puedo ejecutar comandos."  # the reply still goes out
    second = chat_requests(fake_groq)[seen:]
    assert offered(second[0]) >= SANDBOX_TOOLS  # the failure is only found by trying
    tool_msg = second[1]["messages"][-1]
    assert tool_msg["role"] == "tool"
    assert "sandbox is unavailable" in tool_msg["content"]
    assert "Traceback" not in tool_msg["content"]
    assert offered(second[1]).isdisjoint(SANDBOX_TOOLS)  # withdrawn for the very next request
    assert "edit_section" in offered(second[1])  # the other tools stay

    seen = len(chat_requests(fake_groq))
    fake_groq.enqueue_text("Sigo aquí, sin sandbox.")
    fake_telegram.push_text(ALICE, chat, "¿sigues ahí?")
    sent = await fake_telegram.wait_for_sent(3, timeout=60)
    assert sent[2].text == "Sigo aquí, sin sandbox."
    [third] = chat_requests(fake_groq)[seen:]
    assert offered(third).isdisjoint(SANDBOX_TOOLS)

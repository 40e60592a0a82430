"""Docker going away: friendly errors, tools withdrawn from the model, recovery later."""

from __future__ import annotations

import asyncio
import json
import threading

import pytest

import docker
from rumi.base.tools import ToolContext, ToolRegistry
from rumi.sandbox.engine import STATUS_TTL
from rumi.sandbox.errors import PROBLEM_ENGINE, PROBLEM_IMAGE, SandboxUnavailable
from rumi.sandbox.tools import sandbox_tools
from tests.sandbox.conftest import FakeClock

pytestmark = pytest.mark.docker

SANDBOX_TOOLS = {"bash", "read_file", "write_file", "list_files"}


def _registry(manager) -> ToolRegistry:
    registry = ToolRegistry()
    for tool in sandbox_tools(manager):
        registry.register(tool)
    return registry


async def test_dead_socket_means_tools_are_not_offered(make_manager):
    manager = make_manager(docker_client_factory=lambda: docker.DockerClient(
        base_url="unix:///nonexistent/docker.sock", version="1.41", timeout=5))
    available, reason = await manager.status()
    assert not available
    assert "Docker engine not reachable" in reason
    assert manager.last_problem == PROBLEM_ENGINE  # what /status puts into words
    registry = _registry(manager)
    assert set(registry.names()).isdisjoint(SANDBOX_TOOLS)
    with pytest.raises(SandboxUnavailable, match="sandbox is unavailable"):
        await manager.exec("t_dead", "true")


async def test_missing_image_is_reported(make_manager, sandbox_settings):
    manager = make_manager(settings=sandbox_settings(image="rumi-sandbox:does-not-exist"))
    available, reason = await manager.status()
    assert not available
    assert "rumi-sandbox:does-not-exist" in reason and "rumi sandbox build" in reason
    assert manager.last_problem == PROBLEM_IMAGE


async def test_disabled_sandbox(make_manager, sandbox_settings):
    manager = make_manager(settings=sandbox_settings(enabled=False))
    assert await manager.status() == (False, "sandbox disabled (sandbox.enabled = false)")


async def test_daemon_lost_mid_session_gives_friendly_error_then_recovers(
    make_manager, docker_relay, chat_ids
):
    clock = FakeClock()
    manager = make_manager(clock=clock, docker_client_factory=lambda: docker.DockerClient(
        base_url=f"unix://{docker_relay.path}", timeout=10))
    registry = _registry(manager)
    chat = chat_ids()
    ctx = ToolContext(chat_id=chat)
    assert await manager.status() == (True, None)
    assert set(registry.names()) >= SANDBOX_TOOLS
    ok = await registry.execute("bash", json.dumps({"command": "echo up"}), ctx)
    assert (ok.is_error, ok.content) == (False, "up\n[exit code 0]")

    await docker_relay.stop()  # the engine disappears mid-session
    failed = await registry.execute("bash", json.dumps({"command": "echo again"}), ctx)
    assert failed.is_error
    assert "sandbox is unavailable" in failed.content
    assert "Traceback" not in failed.content
    assert manager.available() is False
    assert set(registry.names()).isdisjoint(SANDBOX_TOOLS)  # the model no longer sees them

    await docker_relay.start()  # back again: the periodic re-check restores the tools
    clock.advance(STATUS_TTL + 1)
    assert manager.available() is False  # answers from cache, schedules a background check
    for _ in range(200):
        if manager.available():
            break
        await asyncio.sleep(0.05)
    assert manager.last_status == (True, None)
    assert set(registry.names()) >= SANDBOX_TOOLS
    again = await registry.execute("bash", json.dumps({"command": "echo back"}), ctx)
    assert again.content == "back\n[exit code 0]"


class RecordingClient(docker.DockerClient):
    """The real SDK client; remembers on which thread `close()` ran."""

    closed_on: list[int] = []

    def close(self) -> None:
        RecordingClient.closed_on.append(threading.get_ident())
        super().close()


async def test_engine_failure_closes_the_old_client_off_the_event_loop(
    make_manager, docker_relay, chat_ids
):
    RecordingClient.closed_on = []
    manager = make_manager(docker_client_factory=lambda: RecordingClient(
        base_url=f"unix://{docker_relay.path}", timeout=10))
    chat = chat_ids()
    await manager.exec(chat, "true")
    await docker_relay.stop()
    with pytest.raises(SandboxUnavailable):
        await manager.exec(chat, "true")
    assert manager.last_problem == PROBLEM_ENGINE
    assert RecordingClient.closed_on, "the broken client was not closed"
    assert threading.get_ident() not in RecordingClient.closed_on  # never on the loop's thread

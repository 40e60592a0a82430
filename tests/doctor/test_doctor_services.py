"""Doctor's service checks with the real clients: Groq and Telegram against the fake servers,
Docker against the real engine (and against a socket nobody listens on)."""

from __future__ import annotations

import shutil
import socket
from collections.abc import AsyncIterator

import pytest
from aiohttp import web

import docker
from rumi.base.checks import Status
from rumi.config import LLMSettings, SandboxSettings, TelegramSettings
from rumi.doctor.services import check_docker, check_groq, check_sandbox_image, check_telegram
from rumi.image_tag import default_sandbox_image
from tests.conftest import SANDBOX_TEST_IMAGE, docker_available, require
from tests.fakes.groq_server import FakeGroqServer
from tests.fakes.telegram_server import FakeTelegramServer

TOKEN = "424242:doctor-TOKEN-abcdef"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
async def fake_telegram() -> AsyncIterator[FakeTelegramServer]:
    server = await FakeTelegramServer(TOKEN, bot_username="doctor_bot").start()
    try:
        yield server
    finally:
        await server.stop()


async def test_groq_reachable_with_model(fake_groq: FakeGroqServer) -> None:
    settings = LLMSettings(api_key="gsk_secret_value_1234", base_url=fake_groq.base_url,
                           model="fake")
    result = await check_groq(settings)
    assert result.status is Status.OK
    assert "…1234" in result.detail and "gsk_secret_value" not in result.detail


async def test_retired_model_with_a_served_fallback_warns_and_names_the_replacement(
        fake_groq: FakeGroqServer) -> None:
    settings = LLMSettings(api_key="gsk_x_123456789", base_url=fake_groq.base_url,
                           model="llama-3.3-70b-versatile")
    result = await check_groq(settings)
    assert result.status is Status.WARN
    assert "fallback openai/gpt-oss-20b" in result.detail
    assert result.fix == 'set llm.model = "openai/gpt-oss-120b" (Groq\'s replacement)'


async def test_no_served_model_at_all_fails(fake_groq: FakeGroqServer) -> None:
    fake_groq.retire("openai/gpt-oss-20b")
    settings = LLMSettings(api_key="gsk_x_123456789", base_url=fake_groq.base_url,
                           model="llama-3.1-8b-instant")
    result = await check_groq(settings)
    assert result.status is Status.FAIL
    assert "llama-3.1-8b-instant" in result.detail and "openai/gpt-oss-20b" in result.detail
    assert "openai/gpt-oss-120b" in result.fix  # the small one is gone: the big one is named


async def test_a_fallback_that_is_not_served_warns(fake_groq: FakeGroqServer) -> None:
    settings = LLMSettings(api_key="gsk_x_123456789", base_url=fake_groq.base_url,
                           fallback_models=["llama-3.1-8b-instant"])
    result = await check_groq(settings)
    assert result.status is Status.WARN and "llama-3.1-8b-instant" in result.detail


async def test_groq_unreachable_fails() -> None:
    settings = LLMSettings(api_key="gsk_x_123456789", base_url=f"http://127.0.0.1:{free_port()}")
    result = await check_groq(settings, network_timeout=5)
    assert result.status is Status.FAIL and "cannot reach" in result.detail


async def test_groq_missing_key_fails() -> None:
    result = await check_groq(LLMSettings(api_key=""))
    assert result.status is Status.FAIL and "GROQ_API_KEY" in result.fix


async def test_groq_rejected_key_fails() -> None:
    async def unauthorized(request: web.Request) -> web.Response:
        return web.json_response({"error": {"message": "Invalid API Key"}}, status=401)

    app = web.Application()
    app.router.add_get("/openai/v1/models", unauthorized)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    port = free_port()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    try:
        settings = LLMSettings(api_key="gsk_revoked_key_9999",
                               base_url=f"http://127.0.0.1:{port}")
        result = await check_groq(settings)
    finally:
        await runner.cleanup()
    assert result.status is Status.FAIL and "rejected key …9999" in result.detail
    assert "revoked" not in result.detail


async def test_telegram_token_accepted(fake_telegram: FakeTelegramServer) -> None:
    settings = TelegramSettings(token=TOKEN, base_url=fake_telegram.base_url,
                                base_file_url=fake_telegram.base_file_url)
    result = await check_telegram(settings)
    assert result.status is Status.OK and "@doctor_bot" in result.detail
    assert TOKEN not in result.detail
    assert [m for m, _ in fake_telegram.calls] == ["getMe"]


async def test_telegram_token_rejected(fake_telegram: FakeTelegramServer) -> None:
    settings = TelegramSettings(token="424242:wrong-token-zzzz", base_url=fake_telegram.base_url)
    result = await check_telegram(settings)
    assert result.status is Status.FAIL and "rejected" in result.detail
    assert "wrong-token" not in result.detail + result.fix


async def test_telegram_without_token_warns_for_terminal_only_use() -> None:
    result = await check_telegram(TelegramSettings())
    assert result.status is Status.WARN and "rumi chat" in result.detail
    assert "@BotFather" in result.fix


async def test_telegram_unreachable_fails() -> None:
    settings = TelegramSettings(token=TOKEN, base_url=f"http://127.0.0.1:{free_port()}/bot")
    result = await check_telegram(settings, network_timeout=5)
    assert result.status is Status.FAIL and "cannot reach" in result.detail


def _nowhere() -> docker.DockerClient:
    return docker.DockerClient(base_url="unix:///nonexistent/docker.sock", network_timeout=5)


@pytest.mark.docker
async def test_docker_reachable_reports_version() -> None:
    require(docker_available(), "Docker engine not reachable (start dockerd)")
    result = await check_docker(SandboxSettings())
    assert result.status in (Status.OK, Status.WARN)
    assert result.detail.startswith("engine ") and "API" in result.detail


async def test_docker_unreachable_fails() -> None:
    result = await check_docker(SandboxSettings(), factory=_nowhere,
                                env={"DOCKER_HOST": "unix:///nonexistent/docker.sock"})
    assert result.status is Status.FAIL
    if shutil.which("docker"):  # installed, nothing listening: start it, do not reinstall
        assert "daemon stopped" in result.detail and "systemctl" in result.fix
        assert "get.docker.com" not in result.fix
    else:
        assert "not installed" in result.detail and "get.docker.com" in result.fix


async def test_docker_unreachable_is_fine_without_sandbox() -> None:
    result = await check_docker(SandboxSettings(enabled=False), factory=_nowhere)
    assert result.status is Status.OK and "sandbox disabled" in result.detail


@pytest.mark.docker
async def test_sandbox_image_present(docker_engine: None) -> None:
    result = await check_sandbox_image(SandboxSettings(image=SANDBOX_TEST_IMAGE))
    assert result.status is Status.OK and SANDBOX_TEST_IMAGE in result.detail


@pytest.mark.docker
async def test_sandbox_image_missing_fails() -> None:
    require(docker_available(), "Docker engine not reachable (start dockerd)")
    result = await check_sandbox_image(SandboxSettings(image="rumi-doctor-absent:none"))
    assert result.status is Status.FAIL and "not found" in result.detail
    # a pinned tag is named as such, beside this version's own (issue 27: shared images)
    assert f"this version's own would be {default_sandbox_image()}" in result.detail


@pytest.mark.docker
async def test_sandbox_image_names_this_versions_own(docker_engine: None) -> None:
    """With the default tag, doctor says the image is this version's own; one label on a
    throwaway tag of the test image, so no other test's image is touched."""
    import docker

    client = docker.from_env()
    own = default_sandbox_image()
    existed = any(own in image.tags for image in client.images.list(name=own.split(":")[0]))
    if not existed:
        assert client.images.get(SANDBOX_TEST_IMAGE).tag(own)
    try:
        result = await check_sandbox_image(SandboxSettings())
        assert result.status is Status.OK
        assert f"{own} (" in result.detail and "this version's own image" in result.detail
    finally:
        if not existed:
            client.images.remove(own, noprune=True)
        client.close()


async def test_sandbox_image_without_engine_fails() -> None:
    result = await check_sandbox_image(SandboxSettings(), factory=_nowhere)
    assert result.status is Status.FAIL and "docker" in result.fix


def test_sandbox_settings_check_refuses_what_rumi_run_refuses() -> None:
    """An unsafe sandbox config must fail doctor, not pass it and then stop `rumi run`."""
    from rumi.doctor.runner import CHECKS
    from rumi.doctor.services import check_sandbox_settings

    assert "sandbox settings" in CHECKS
    unsafe = check_sandbox_settings(SandboxSettings(extra_volumes=["/var/run:/host-run:ro"]))
    assert unsafe.status == Status.FAIL
    assert "sandbox.extra_volumes" in unsafe.detail and "/var/run" in unsafe.detail
    root = check_sandbox_settings(SandboxSettings(user="0000:1000"))
    assert root.status == Status.FAIL and "sandbox.user" in root.detail
    assert check_sandbox_settings(SandboxSettings()).status == Status.OK
    disabled = SandboxSettings(enabled=False, privileged=True)
    assert check_sandbox_settings(disabled).status == Status.OK  # not used, not a risk

"""SIGTERM (systemd stop) and SIGINT (Ctrl-C) on a real `rumi chat` process: the chat's
container goes with it, its workspace stays."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys

import pytest
from docker.errors import NotFound

from rumi.config import SandboxSettings
from rumi.sandbox import loopvolume
from rumi.sandbox.manager import SandboxManager
from tests.conftest import SANDBOX_TEST_IMAGE

pytestmark = pytest.mark.docker


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
async def test_signal_removes_the_chats_container(tmp_path, fake_groq, docker_client, sig):
    data = tmp_path / "data"
    config = tmp_path / "config.toml"
    config.write_text(f'data_dir = "{data}"\n[llm]\napi_key = "k"\n'
                      f'base_url = "{fake_groq.base_url}"\nmax_retries = 0\n'
                      f'[sandbox]\nimage = "{SANDBOX_TEST_IMAGE}"\nstop_wait_seconds = 120\n'
                      "[memory]\nembeddings_enabled = false\n", encoding="utf-8")
    ident = SandboxManager(SandboxSettings(image=SANDBOX_TEST_IMAGE), data).identity("terminal")
    fake_groq.enqueue_tool_call("bash", {"command": "echo hola > /workspace/f"})
    fake_groq.enqueue_text("hecho")
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", "import sys; from rumi.cli import main; sys.exit(main())",
        "chat", "--config", str(config), stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    try:
        proc.stdin.write(b"crea un archivo\n")
        await proc.stdin.drain()

        async def answered() -> None:
            while len(fake_groq.requests) < 2:
                await asyncio.sleep(0.1)

        await asyncio.wait_for(answered(), 60)
        assert docker_client.containers.get(ident.container_name).status == "running"
        proc.send_signal(sig)
        assert await asyncio.wait_for(proc.wait(), 60) == 0
        with pytest.raises(NotFound):
            docker_client.containers.get(ident.container_name)
        docker_client.volumes.get(ident.volume_name)  # the workspace survived
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
        with contextlib.suppress(NotFound):
            docker_client.containers.get(ident.container_name).remove(force=True)
        loopvolume.remove_volumes(docker_client, SANDBOX_TEST_IMAGE, docker_client.volumes.list(
            filters={"label": f"rumi.instance={ident.instance}"}))

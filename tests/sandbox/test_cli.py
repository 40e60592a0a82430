"""`rumi sandbox ls|prune|build` against the real engine (parser built from this module only)."""

from __future__ import annotations

import argparse
import contextlib
import inspect

import pytest
from docker.errors import ImageNotFound, NotFound

from rumi.cli import sandbox as sandbox_cli
from tests.conftest import SANDBOX_TEST_IMAGE

pytestmark = pytest.mark.docker


async def run_cli(settings, *argv: str) -> int:
    parser = argparse.ArgumentParser(prog="rumi")
    sandbox_cli.register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(list(argv))
    result = args.handler(args, settings)
    return await result if inspect.isawaitable(result) else result


@pytest.fixture
def cli_settings(make_settings):
    return make_settings(f'[sandbox]\nimage = "{SANDBOX_TEST_IMAGE}"\n')


async def test_ls_and_prune(cli_settings, make_manager, chat_ids, docker_client, capsys):
    manager = make_manager(data_dir=cli_settings.data_dir)
    running, stopped = chat_ids(), chat_ids()
    await manager.exec(running, "true")
    await manager.exec(stopped, "true")
    docker_client.containers.get(manager.identity(stopped).container_name).stop(timeout=1)

    assert await run_cli(cli_settings, "sandbox", "ls") == 0
    listing = capsys.readouterr().out
    assert manager.identity(running).container_name in listing
    assert manager.identity(stopped).container_name in listing
    assert "running" in listing and "exited" in listing

    assert await run_cli(cli_settings, "sandbox", "prune") == 0
    assert capsys.readouterr().out.strip() == (
        f"removed 1 container(s): {manager.identity(stopped).container_name}")
    with pytest.raises(NotFound):
        docker_client.containers.get(manager.identity(stopped).container_name)
    live = docker_client.containers.get(manager.identity(running).container_name)
    assert live.status == "running"


async def test_build_minimal_offline_image(cli_settings, docker_client, capsys):
    tag = "rumi-sandbox:cli-test-minimal"
    try:
        assert await run_cli(cli_settings, "sandbox", "build", "--minimal", "--tag", tag) == 0
        image = docker_client.images.get(tag)
        assert image.attrs["Config"]["User"] == "1000:1000"
        assert image.attrs["Config"]["WorkingDir"] == "/workspace"
        output = docker_client.containers.run(
            tag, ["sh", "-c", "id -u; stat -c %u /workspace; ls /bin/wget /bin/nc 2>/dev/null; :"],
            remove=True, network_mode="none")
        assert output.decode().split() == ["1000", "1000"]
    finally:
        with contextlib.suppress(ImageNotFound):
            docker_client.images.remove(tag, force=True)

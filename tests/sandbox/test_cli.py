"""`rumi sandbox ls|prune|build` against the real engine (parser built from this module only)."""

from __future__ import annotations

import argparse
import contextlib
import inspect

import pytest
from docker.errors import ImageNotFound, NotFound

from rumi.cli import image_build
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
    await manager.start()  # a running Rumi on this data dir
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
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0] == f"removed 1 container(s): {manager.identity(stopped).container_name}"
    assert lines[1].startswith("kept 1 running container(s)")
    assert lines[1].endswith(manager.identity(running).container_name)
    with pytest.raises(NotFound):
        docker_client.containers.get(manager.identity(stopped).container_name)
    live = docker_client.containers.get(manager.identity(running).container_name)
    assert live.status == "running"

    await manager.aclose()  # that Rumi was killed: its running container is an orphan now
    assert await run_cli(cli_settings, "sandbox", "prune") == 0
    assert capsys.readouterr().out.strip() == (
        f"removed 1 container(s): {manager.identity(running).container_name}")
    with pytest.raises(NotFound):
        docker_client.containers.get(manager.identity(running).container_name)


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


async def test_prune_volumes_deletes_unused_workspaces_only_when_confirmed(
        cli_settings, make_manager, chat_ids, docker_client, capsys):
    """A workspace whose container is gone (the terminal chat's after `rumi chat` exits) is
    listed and, with --yes, deleted; without --yes and no terminal nothing is lost."""
    manager = make_manager(data_dir=cli_settings.data_dir)
    await manager.start()
    ended, live = chat_ids(), chat_ids()
    await manager.exec(ended, "touch /workspace/keep")
    await manager.exec(live, "true")
    await manager.remove(ended)  # session ended: container gone, workspace kept
    ended_volume = manager.identity(ended).volume_name
    live_volume = manager.identity(live).volume_name

    assert await run_cli(cli_settings, "sandbox", "prune", "--volumes") == 1
    captured = capsys.readouterr()
    assert ended_volume in captured.out and live_volume not in captured.out
    assert "--yes" in captured.err
    docker_client.volumes.get(ended_volume)  # still there

    assert await run_cli(cli_settings, "sandbox", "prune", "--volumes", "--yes") == 0
    out = capsys.readouterr().out
    assert f"deleted 1 workspace volume(s): {ended_volume}" in out
    with pytest.raises(NotFound):
        docker_client.volumes.get(ended_volume)
    docker_client.volumes.get(live_volume)  # its container is running: kept


async def test_remove_all_stops_every_container_of_this_instance_and_keeps_files(
        make_manager, chat_ids, docker_client):
    manager = make_manager()
    first, second = chat_ids(), chat_ids()
    await manager.exec(first, "echo hola > /workspace/nota")
    await manager.exec(second, "true")

    removed = await manager.remove_all(wait=120)

    assert sorted(removed) == sorted(manager.identity(c).container_name
                                     for c in (first, second))
    for chat in (first, second):
        with pytest.raises(NotFound):
            docker_client.containers.get(manager.identity(chat).container_name)
    result = await manager.exec(first, "cat /workspace/nota")
    assert result.stdout.strip() == "hola"


async def test_build_without_registry_suggests_offline(cli_settings, capsys):
    """Docker's raw "lookup … no such host" is followed by the way out, not left alone."""
    code = await run_cli(cli_settings, "sandbox", "build", "--no-fallback",
                         "--base", "registry.invalid/nothing:1", "--tag", "rumi-sandbox:never")
    assert code != 0
    err = capsys.readouterr().err
    assert "registry.invalid" in err  # Docker's own progress was shown
    assert "`rumi sandbox build --offline`" in err


async def test_quiet_build_speaks_for_docker(capsys):
    """What `rumi setup` shows by default: no raw daemon text, no deprecation notice, one line
    of Rumi's with the way out (the real engine answering a registry it cannot resolve)."""
    code = await image_build.build_with_fallback(
        "rumi-sandbox:never", base="registry.invalid/nothing:1", fallback=False, verbose=False)
    assert code != 0
    err = capsys.readouterr().err
    for raw in ('Get "https://', "no such host", "DEPRECATED", "legacy builder", "+ docker"):
        assert raw not in err  # old code: Docker's output as it came
    assert "`rumi sandbox build --offline`" in err
    lines = [line for line in err.splitlines() if line.strip()]
    assert all(line.startswith(("rumi: ", "   Step ", "   #")) for line in lines), lines
    assert sum(line.startswith("rumi: ") for line in lines) == 1


async def test_verbose_build_shows_docker_without_the_deprecation_notice(capsys):
    await image_build.build_with_fallback(
        "rumi-sandbox:never", base="registry.invalid/nothing:1", fallback=False, verbose=True)
    err = capsys.readouterr().err
    assert "registry.invalid" in err and "DEPRECATED" not in err and "buildx" not in err


def test_registry_unreachable_is_told_from_a_broken_recipe():
    assert image_build.registry_unreachable(
        'Get "https://registry-1.docker.io/v2/": dial tcp: lookup registry-1.docker.io on '
        "10.255.255.53:53: no such host")
    assert not image_build.registry_unreachable(
        "Step 3/9 : RUN useradd sandbox\nuseradd: group '1000' does not exist\n"
        "The command '/bin/sh -c useradd sandbox' returned a non-zero code: 6")

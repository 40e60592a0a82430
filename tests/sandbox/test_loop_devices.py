"""Loop devices are a host resource (issue 32, item 8), `workspace_mode = "volume"` (the
default): an idle chat holds none, a start detaches the ones this installation left attached
(its images deleted since, too) and never another's, and `rumi sandbox prune --volumes` removes
workspace images whose volume is gone. Real engine; each device found on the host by the inode
of its own image (other tests on this host use loop devices too)."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest
from docker.errors import NotFound

from rumi.sandbox import loopvolume
from tests.conftest import require
from tests.sandbox.conftest import FakeClock
from tests.sandbox.test_cli import run_cli

pytestmark = pytest.mark.docker


def identity(docker_client, store: str) -> str:  # noqa: ANN001
    """The image's backing identity as losetup shows it: inode and major:minor."""
    mountpoint = docker_client.volumes.get(store).attrs["Mountpoint"]
    info = os.stat(os.path.join(mountpoint, "workspace.img"))
    return f"{info.st_ino} {os.major(info.st_dev)}:{os.minor(info.st_dev)}"


def devices(ident: str) -> list[str]:
    """The host's loop devices backed by the file with that identity."""
    listing = subprocess.run(["losetup", "-l", "-n", "-O", "NAME,BACK-INO,BACK-MAJ:MIN"],
                             capture_output=True, text=True, check=True).stdout
    found = []
    for line in listing.splitlines():
        name, _, rest = line.strip().partition(" ")
        if " ".join(rest.split()) == ident:
            found.append(name)
    return found


@pytest.fixture(autouse=True)
def _host() -> None:
    require(shutil.which("losetup") is not None and os.access("/var/lib/docker", os.R_OK),
            "needs the engine's host (losetup, /var/lib/docker) to see loop devices")


async def test_an_idle_chat_holds_no_loop_device(make_manager, chat_ids, docker_client) -> None:
    clock = FakeClock()
    manager = make_manager(clock=clock)
    chat = chat_ids()
    assert (await manager.exec(chat, "echo guardado > f")).exit_code == 0
    image = identity(docker_client, loopvolume.store_name(manager.identity(chat).volume_name))
    assert len(devices(image)) == 1
    clock.advance(manager.settings.idle_prune_minutes * 60 + 1)
    assert await manager.prune_idle() == [chat]
    assert devices(image) == []                       # 0.7.0: still attached
    assert (await manager.exec(chat, "cat f")).stdout == "guardado\n"
    assert len(devices(image)) == 1                   # attached again by the next command


async def test_a_start_detaches_this_installations_devices_only(
        make_manager, chat_ids, docker_client, data_dir, tmp_path) -> None:
    mine = make_manager()
    theirs = make_manager(data_dir=tmp_path / "another-rumi")
    stale, kept = chat_ids(), chat_ids()
    await mine.exec(stale, "true")
    await theirs.exec(kept, "true")
    store = loopvolume.store_name(mine.identity(stale).volume_name)
    image = identity(docker_client, store)
    their_image = identity(docker_client, loopvolume.store_name(theirs.identity(kept).volume_name))
    # the way a device goes stale: the chat's volumes removed by hand while it is attached
    docker_client.containers.get(mine.identity(stale).container_name).remove(force=True)
    docker_client.volumes.get(mine.identity(stale).volume_name).remove(force=True)
    docker_client.volumes.get(store).remove(force=True)
    assert len(devices(image)) == 1 and len(devices(their_image)) == 1
    await mine.aclose()
    restarted = make_manager()
    await restarted.start()
    assert devices(image) == []                       # 0.7.0: attached until a reboot
    assert len(devices(their_image)) == 1             # another installation's: untouched
    assert (await theirs.exec(kept, "echo sigue")).stdout == "sigue\n"


async def test_prune_volumes_removes_orphaned_workspace_images(
        make_settings, make_manager, chat_ids, docker_client, capsys) -> None:
    from tests.conftest import SANDBOX_TEST_IMAGE

    settings = make_settings(f'[sandbox]\nimage = "{SANDBOX_TEST_IMAGE}"\n')
    manager = make_manager(data_dir=settings.data_dir)
    chat = chat_ids()
    await manager.exec(chat, "true")
    volume = manager.identity(chat).volume_name
    store = loopvolume.store_name(volume)
    image = identity(docker_client, store)
    docker_client.containers.get(manager.identity(chat).container_name).remove(force=True)
    docker_client.volumes.get(volume).remove(force=True)  # the workspace volume alone went
    await manager.aclose()
    assert await run_cli(settings, "sandbox", "prune", "--volumes", "--yes") == 0
    out = capsys.readouterr().out
    assert f"deleted 1 orphaned workspace image(s): {store}" in out
    with pytest.raises(NotFound):
        docker_client.volumes.get(store)
    assert devices(image) == []

"""The default workspace (workspace_mode = "volume") has a hard size and file-count limit.

Real Docker engine: the limited volume is an ext4 loop device attached by a privileged helper
container, so Rumi itself needs no root. Each test removes its workspaces by handle
(`manager.remove(..., workspace=True)`), which also detaches the loop device.
"""

from __future__ import annotations

import pytest

from rumi.sandbox import loopvolume
from rumi.sandbox.errors import SandboxError
from tests.sandbox.conftest import image_without

pytestmark = pytest.mark.docker

_FILL = ("python3 -c \"\nimport os\nn = 0\ntry:\n    for i in range({count}):\n"
         "        open(f'f{{i}}', 'w').close(); n += 1\nexcept OSError as e:\n"
         "    print(n, e.strerror)\nelse:\n    print(n, 'all')\n\"")


@pytest.fixture
async def limited(make_manager, sandbox_settings, chat_ids):
    """A default-settings manager with a small workspace_size; workspaces removed after."""
    made = []

    def make(size="64m", **overrides):
        manager = make_manager(settings=sandbox_settings(
            workspace_size=size, exec_timeout=120.0, fsize_limit_mb=4096, **overrides))
        chat = chat_ids()
        made.append((manager, chat))
        return manager, chat

    yield make
    for manager, chat in made:
        await manager.remove(chat, workspace=True)


async def test_default_mode_is_volume_with_a_limited_workspace(limited, docker_client):
    manager, chat = limited()
    assert manager.settings.workspace_mode == "volume"
    await manager.exec(chat, "true")
    volume = docker_client.volumes.get(manager.identity(chat).volume_name)
    assert volume.attrs["Options"]["type"] == "ext4"
    assert volume.attrs["Labels"][loopvolume.LIMIT_LABEL] == str(64 * 1024**2)


async def test_four_big_files_stop_at_workspace_size(limited):
    manager, chat = limited("64m")
    # the four 400 MB files, scaled to 64 MB: four of 20 MB (80 MB > 64 MB)
    flood = await manager.exec(
        chat, "for i in 1 2 3 4; do dd if=/dev/zero of=big$i bs=1M count=20 2>&1 | grep -v records;"
              " done; du -sk /workspace 2>/dev/null | cut -f1; df -k /workspace | tail -n 1")
    assert "No space left on device" in flood.stdout
    lines = flood.stdout.strip().splitlines()
    assert int(lines[-2]) <= 64 * 1024
    assert int(lines[-1].split()[1]) <= 64 * 1024  # the filesystem itself is ≤ 64 MiB


async def test_a_million_empty_files_stop_at_the_inode_share(limited):
    manager, chat = limited("64m")
    flood = await manager.exec(chat, _FILL.format(count=1_000_000))
    count, reason = flood.stdout.split(maxsplit=1)
    assert reason.strip() == "No space left on device"
    assert 1_000 < int(count) <= 64 * 1024**2 // loopvolume.BYTES_PER_INODE
    df = await manager.exec(chat, "df -i /workspace | tail -n 1")
    assert int(df.stdout.split()[1]) <= 64 * 1024**2 // loopvolume.BYTES_PER_INODE


async def test_files_survive_reset_and_a_lost_loop_device(limited, docker_client):
    manager, chat = limited("64m")
    await manager.exec(chat, "echo guardado > nota.txt")
    assert await manager.remove(chat)  # /reset: the container goes, the workspace stays
    ident = manager.identity(chat)
    # a reboot detaches every loop device: simulate it, the volume now names a stale device
    store = loopvolume.store_name(ident.volume_name)
    labels = {"rumi.managed": "1", "rumi.instance": manager.instance, "rumi.chat": chat}
    docker_client.volumes.get(ident.volume_name).remove(force=True)
    loopvolume._helper(docker_client, manager.settings.image, store, labels,  # noqa: SLF001
                       'for d in $(losetup -j "$1" | cut -d: -f1); do losetup -d "$d"; done')
    manager2 = manager.__class__(manager.settings, manager.data_dir)
    try:
        assert (await manager2.exec(chat, "cat nota.txt")).stdout == "guardado\n"
    finally:
        await manager2.remove(chat)
        await manager2.aclose()


async def test_an_existing_unlimited_workspace_keeps_its_files(limited, docker_client):
    manager, chat = limited("64m")
    ident = manager.identity(chat)
    docker_client.volumes.create(ident.volume_name, labels={
        "rumi.managed": "1", "rumi.instance": manager.instance, "rumi.chat": chat})
    await manager.exec(chat, "echo viejo > antes.txt")
    assert await manager.remove(chat)
    assert (await manager.exec(chat, "cat antes.txt")).stdout == "viejo\n"


async def test_reset_with_workspace_detaches_the_loop_device(limited, docker_client):
    manager, chat = limited("64m")
    await manager.exec(chat, "true")
    ident = manager.identity(chat)
    device = docker_client.volumes.get(ident.volume_name).attrs["Labels"][loopvolume.DEVICE_LABEL]
    await manager.remove(chat, workspace=True)
    names = {v.name for v in docker_client.volumes.list(filters={"label": f"rumi.chat={chat}"})}
    assert names == set()
    listing = docker_client.containers.run(
        manager.settings.image, ["losetup", "-a"], user="0", cap_add=["SYS_ADMIN"],
        device_cgroup_rules=["b 7:* rmw"], volumes={"/dev": {"bind": "/dev", "mode": "ro"}},
        environment={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin"}, remove=True,
        network_mode="none").decode()
    assert f"rumi-wsimg-{manager.instance}-{chat}" not in listing, (device, listing)


async def test_a_workspace_image_that_cannot_be_attached_is_never_swapped_for_an_empty_one(
        limited, make_manager, sandbox_settings, docker_client):
    """When the loop device cannot be attached again (none left, no losetup in a new image),
    the chat's command fails with a clear line and its files stay in the image; before, the
    chat silently got a new, empty plain volume (seen as `cat` finding nothing after a
    container was recreated)."""
    manager, chat = limited("64m")
    await manager.exec(chat, "echo kept > f")
    await manager.remove(chat)   # the container goes, the workspace stays
    with image_without(docker_client, "/sbin/losetup /usr/sbin/losetup") as broken:
        other = make_manager(settings=sandbox_settings(
            image=broken, workspace_size="64m", exec_timeout=120.0, fsize_limit_mb=4096))
        with pytest.raises(SandboxError, match="files are kept"):
            await other.exec(chat, "cat f")
    assert (await manager.exec(chat, "cat f")).stdout == "kept\n"

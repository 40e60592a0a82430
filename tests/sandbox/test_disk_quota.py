"""workspace_mode = "image": a real per-chat disk quota on ext4 (a loop-mounted image).

These need root on the host (mount); CI runs as root, so they fail there if it cannot mount.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil

import pytest

from tests.conftest import require

pytestmark = pytest.mark.docker


@pytest.fixture
def image_manager(make_manager, sandbox_settings, data_dir):
    require(os.geteuid() == 0 and shutil.which("mkfs.ext4") is not None
            and os.path.exists("/dev/loop-control"),
            "workspace_mode=image needs root, mkfs.ext4 and loop devices")

    def make(**overrides):
        values = {"workspace_mode": "image", "exec_timeout": 60.0, **overrides}
        return make_manager(settings=sandbox_settings(**values))

    return make


@pytest.fixture
async def cleanup_images(data_dir):
    """Unmount whatever a test mounted under its data_dir, even when it fails."""
    yield
    from rumi.sandbox import diskimage

    for chat_dir in (data_dir / "chats").glob("*"):
        await asyncio.to_thread(diskimage.destroy, chat_dir)


async def test_writing_past_the_quota_fails_and_spares_the_host(image_manager, chat_ids,
                                                                data_dir, cleanup_images):
    manager = image_manager(workspace_size="1g", fsize_limit_mb=4096)
    chat = chat_ids()
    await manager.exec(chat, "true")
    free_before = shutil.disk_usage(data_dir).free
    flood = await manager.exec(
        chat, "dd if=/dev/zero of=big bs=1M count=2048 2>&1; ls -l big")
    assert "No space left on device" in flood.stdout
    size = int(flood.stdout.split()[-5])  # ls -l's size column
    assert 900 * 1024**2 < size <= 1024**3
    used = free_before - shutil.disk_usage(data_dir).free
    assert used <= 1.1 * 1024**3
    df = await manager.exec(chat, "df -k /workspace | tail -n 1")
    assert int(df.stdout.split()[1]) <= 1024 * 1024  # the filesystem itself is ≤ 1 GiB
    # the chat's own files and the image survive a container removal (/reset)
    assert await manager.remove(chat)
    assert (await manager.exec(chat, "ls -l big | cut -d' ' -f5")).stdout.strip() == str(size)


async def test_a_million_file_flood_is_bounded_by_the_inode_table(image_manager, chat_ids,
                                                                  cleanup_images):
    manager = image_manager(workspace_size="256m")
    chat = chat_ids()
    flood = await manager.exec(
        chat, "python3 -c \"\nimport os\nn = 0\ntry:\n    for i in range(1_000_000):\n"
              "        open(f'f{i}', 'w').close(); n += 1\nexcept OSError as e:\n"
              "    print(n, e.strerror)\n\"")
    count, *reason = flood.stdout.split(maxsplit=1)
    assert reason == ["No space left on device\n"]
    assert 10_000 < int(count) <= 256 * 1024 // 16  # ext4's ratio: one inode per 16 KiB
    df = await manager.exec(chat, "df -i /workspace | tail -n 1")
    assert int(df.stdout.split()[1]) <= 256 * 1024 // 16


async def test_existing_bind_workspace_migrates_into_the_image(image_manager, make_manager,
                                                               sandbox_settings, chat_ids,
                                                               data_dir, cleanup_images):
    chat = chat_ids()
    old = make_manager(settings=sandbox_settings(workspace_mode="bind"))
    await old.exec(chat, "mkdir -p sub && echo before > sub/notes.txt")
    await old.remove(chat)
    manager = image_manager(workspace_size="64m")
    seen = await manager.exec(chat, "cat sub/notes.txt; stat -c %u sub/notes.txt; "
                                    "df -k /workspace | tail -n 1")
    lines = seen.stdout.splitlines()
    assert lines[:2] == ["before", "1000"]
    assert int(lines[2].split()[1]) <= 64 * 1024
    assert os.path.ismount(data_dir / "chats" / chat / "workspace")
    assert not (data_dir / "chats" / chat / "workspace.migrating").exists()


async def test_existing_volume_migrates_and_removal_deletes_the_image(image_manager,
                                                                      make_manager,
                                                                      sandbox_settings,
                                                                      chat_ids, data_dir,
                                                                      docker_client,
                                                                      cleanup_images):
    chat = chat_ids()
    old = make_manager()  # workspace_mode = "volume"
    await old.exec(chat, "echo from-volume > f")
    await old.remove(chat)
    manager = image_manager(workspace_size="64m")
    assert (await manager.exec(chat, "cat f")).stdout == "from-volume\n"
    assert await manager.remove(chat, workspace=True)
    chat_dir = data_dir / "chats" / chat
    assert not (chat_dir / "workspace.img").exists()
    assert not os.path.ismount(chat_dir / "workspace")
    assert docker_client.volumes.list(filters={"label": f"rumi.chat={chat}"}) == []


async def test_a_workspace_too_big_for_its_image_is_not_lost(image_manager, make_manager,
                                                             sandbox_settings, chat_ids,
                                                             data_dir, cleanup_images):
    """Migration into a smaller quota fails clearly and leaves the old files where they were."""
    chat = chat_ids()
    old = make_manager(settings=sandbox_settings(workspace_mode="bind"))
    await old.exec(chat, "head -c 20000000 /dev/urandom > big")
    await old.remove(chat)
    manager = image_manager(workspace_size="8m")
    from rumi.sandbox.errors import SandboxError

    with pytest.raises(SandboxError, match="could not be mounted"):
        await manager.exec(chat, "true")
    workspace = data_dir / "chats" / chat / "workspace"
    assert (workspace / "big").stat().st_size == 20_000_000
    assert not os.path.ismount(workspace)
    assert not (data_dir / "chats" / chat / "workspace.img").exists()


def _attached(image) -> str:
    import subprocess

    return subprocess.run(["losetup", "-j", str(image)], capture_output=True, text=True,
                          check=True).stdout.strip()


async def test_stop_unmounts_the_images_and_keeps_their_files(image_manager, chat_ids,
                                                              data_dir, cleanup_images):
    """Issue 26: after a stop the image stayed mounted and its loop device attached."""
    manager = image_manager(workspace_size="64m")
    chat = chat_ids()
    assert (await manager.exec(chat, "echo guardado > nota.txt")).exit_code == 0
    mountpoint = data_dir / "chats" / chat / "workspace"
    assert os.path.ismount(mountpoint) and _attached(mountpoint.with_name("workspace.img"))
    await manager.remove_all(wait=120)
    assert not os.path.ismount(mountpoint)
    assert _attached(mountpoint.with_name("workspace.img")) == ""
    again = image_manager(workspace_size="64m")  # the next start mounts it again, files kept
    assert (await again.exec(chat, "cat nota.txt")).stdout.strip() == "guardado"


async def test_sigterm_unmounts_the_image(image_manager, tmp_path, fake_groq, docker_client,
                                          cleanup_images, data_dir):
    """A real `rumi chat` process in `image` mode, stopped by SIGTERM (systemd's stop)."""
    import signal
    import sys

    from docker.errors import NotFound

    from tests.conftest import SANDBOX_TEST_IMAGE

    config = tmp_path / "image.toml"
    config.write_text(f'data_dir = "{data_dir}"\n[llm]\napi_key = "k"\n'
                      f'base_url = "{fake_groq.base_url}"\nmax_retries = 0\n'
                      f'[sandbox]\nimage = "{SANDBOX_TEST_IMAGE}"\nstop_wait_seconds = 120\n'
                      'workspace_mode = "image"\n'
                      'workspace_size = "64m"\n[memory]\nembeddings_enabled = false\n',
                      encoding="utf-8")
    ident = image_manager().identity("terminal")
    fake_groq.enqueue_tool_call("bash", {"command": "echo hola > /workspace/f"})
    fake_groq.enqueue_text("hecho")
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", "import sys; from rumi.cli import main; sys.exit(main())",
        "chat", "--config", str(config), stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    mountpoint = data_dir / "chats" / "terminal" / "workspace"
    try:
        proc.stdin.write(b"crea un archivo\n")
        await proc.stdin.drain()

        async def answered() -> None:
            while len(fake_groq.requests) < 2:
                await asyncio.sleep(0.1)

        await asyncio.wait_for(answered(), 60)
        assert os.path.ismount(mountpoint)
        proc.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(proc.wait(), 60) == 0
        assert not os.path.ismount(mountpoint)
        assert _attached(mountpoint.with_name("workspace.img")) == ""
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
        with contextlib.suppress(NotFound):
            docker_client.containers.get(ident.container_name).remove(force=True)

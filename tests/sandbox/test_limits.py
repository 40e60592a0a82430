"""The hardening really holds: no network, read-only root, pids and memory limits."""

from __future__ import annotations

import asyncio

import pytest

pytestmark = pytest.mark.docker


async def test_no_network(manager, chat_ids):
    chat = chat_ids()
    interfaces = await manager.exec(chat, "cat /proc/net/dev")
    names = [line.split(":")[0].strip() for line in interfaces.stdout.splitlines()[2:]]
    assert names == ["lo"]
    resolve = await manager.exec(chat, "getent hosts deb.debian.org")
    assert resolve.exit_code != 0
    connect = await manager.exec(
        chat,
        "python3 -c \"import socket; socket.create_connection(('1.1.1.1', 53), timeout=3)\"",
    )
    assert connect.exit_code != 0
    assert "Network is unreachable" in connect.stderr
    tools = await manager.exec(chat, "command -v curl wget; true")
    assert tools.stdout == ""


def _write_as_owner(docker_client, chat: str, path: str) -> tuple[int, str]:
    """Touch a root-owned path as uid 0, its owner: only a read-only mount can stop that.

    (As uid 1000 the write fails with EACCES whether or not the root is read-only, so such a
    test could not tell the two apart.) Blocking SDK call: run it with asyncio.to_thread.
    """
    container = docker_client.containers.get(f"rumi-sbx-{chat}")
    code, output = container.exec_run(["touch", path], user="0")
    return code, output.decode(errors="replace")


async def test_read_only_root_but_writable_workspace_and_tmp(manager, chat_ids, docker_client):
    chat = chat_ids()
    ok = await manager.exec(chat, "touch /workspace/a /tmp/b && echo ok")
    assert ok.stdout == "ok\n"
    for path in ("/etc/rumi-test", "/usr/bin/rumi-test", "/rumi-test"):
        code, output = await asyncio.to_thread(_write_as_owner, docker_client, chat, path)
        assert code != 0
        assert "Read-only file system" in output, output
    mounts = await manager.exec(chat, "cat /proc/mounts")
    [root] = [line.split() for line in mounts.stdout.splitlines() if line.split()[1] == "/"]
    assert "ro" in root[3].split(",")


async def test_writable_root_control(make_manager, sandbox_settings, chat_ids, docker_client):
    """With read_only_root = false the same owner write succeeds: the test above can fail."""
    manager = make_manager(settings=sandbox_settings(read_only_root=False))
    chat = chat_ids()
    await manager.exec(chat, "true")
    for path in ("/etc/rumi-test", "/usr/bin/rumi-test", "/rumi-test"):
        code, output = await asyncio.to_thread(_write_as_owner, docker_client, chat, path)
        assert (code, output) == (0, "")


async def test_fork_bomb_is_contained_by_pids_limit(manager, chat_ids):
    chat = chat_ids()
    bomb = await manager.exec(chat, "bomb() { bomb | bomb & }; bomb; sleep 3", timeout=4)
    assert "Resource temporarily unavailable" in bomb.stderr  # it did hit the limit
    current = await manager.exec(chat, "cat /sys/fs/cgroup/pids/pids.max /sys/fs/cgroup/pids.max "
                                       "2>/dev/null; ps -e --no-headers | wc -l")
    lines = current.stdout.split()
    assert lines[0] == str(manager.settings.pids_limit)
    assert int(lines[-1]) < 10  # the bomb is gone, only init, sleep and this shell remain
    assert (await manager.exec(chat, "echo alive")).stdout == "alive\n"


async def test_memory_hog_is_killed_by_the_limit(manager, chat_ids, docker_client):
    chat = chat_ids()
    hog = await manager.exec(chat, "python3 -c \"x = b'x' * (1024 ** 3); print('survived')\"")
    assert hog.exit_code == 137
    assert not hog.timed_out
    assert "survived" not in hog.stdout
    assert docker_client.containers.get(f"rumi-sbx-{chat}").status == "running"
    assert (await manager.exec(chat, "echo alive")).stdout == "alive\n"

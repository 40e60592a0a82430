"""The hardening really holds: no network, read-only root, pids and memory limits."""

from __future__ import annotations

import asyncio
import time

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


def _write_as_owner(docker_client, name: str, path: str) -> tuple[int, str]:
    """Touch a root-owned path as uid 0, its owner: only a read-only mount can stop that.

    (As uid 1000 the write fails with EACCES whether or not the root is read-only, so such a
    test could not tell the two apart.) Blocking SDK call: run it with asyncio.to_thread.
    """
    container = docker_client.containers.get(name)
    code, output = container.exec_run(["touch", path], user="0")
    return code, output.decode(errors="replace")


async def test_read_only_root_but_writable_workspace_and_tmp(manager, chat_ids, docker_client):
    chat = chat_ids()
    ok = await manager.exec(chat, "touch /workspace/a /tmp/b && echo ok")
    assert ok.stdout == "ok\n"
    for path in ("/etc/rumi-test", "/usr/bin/rumi-test", "/rumi-test"):
        code, output = await asyncio.to_thread(_write_as_owner, docker_client,
                                                  manager.identity(chat).container_name, path)
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
        code, output = await asyncio.to_thread(_write_as_owner, docker_client,
                                                  manager.identity(chat).container_name, path)
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
    assert docker_client.containers.get(manager.identity(chat).container_name).status == "running"
    assert (await manager.exec(chat, "echo alive")).stdout == "alive\n"


async def _others(manager, chat) -> list[str]:
    """Processes in the sandbox besides init, the keep-alive and the `ps` command itself."""
    listing = await manager.exec(chat, "ps -eo pid=,args=")
    return [line for line in listing.stdout.splitlines()
            if not any(part in line for part in ("docker-init", "sleep infinity", "rumi-exec",
                                                 "ps -eo"))]


async def test_a_detached_busy_loop_ends_with_its_command(manager, chat_ids):
    """Dropping the exec marker and leaving the session used to keep a core busy until /reset."""
    chat = chat_ids()
    started = await manager.exec(
        chat, "env -u RUMI_EXEC setsid sh -c 'while :; do :; done' >/dev/null 2>&1 & "
              "env -u RUMI_EXEC nohup sleep 600 >/dev/null 2>&1 & sleep 0.3; ps -eo args")
    assert "while :" in started.stdout and "sleep 600" in started.stdout  # they did run
    assert await _others(manager, chat) == []


async def test_a_detached_fork_bomb_ends_with_its_command(manager, chat_ids):
    chat = chat_ids()
    bomb = await manager.exec(
        chat, "env -u RUMI_EXEC setsid bash -c 'b() { b | b & }; b' >/dev/null 2>&1 & "
              # counted with builtins only: with the pids full, a pipeline could not fork
              "sleep 1; n=0; for p in /proc/[0-9]*; do n=$((n+1)); done; echo $n")
    assert int(bomb.stdout.split()[-1]) > manager.settings.pids_limit // 2  # it was spreading
    assert await _others(manager, chat) == []
    assert (await manager.exec(chat, "echo alive")).stdout == "alive\n"


async def test_a_sandbox_that_cannot_fork_is_recreated_with_a_note(manager, chat_ids,
                                                                   docker_client):
    """A fork bomb started outside Rumi's commands (a bare `docker exec`) fills the pids limit:
    the next command cannot even start, so the container is recreated, the command runs in the
    new one, and the result carries a note for the person; the workspace is kept."""
    chat = chat_ids()
    await manager.exec(chat, "echo kept > f")
    name = manager.identity(chat).container_name
    old = await asyncio.to_thread(docker_client.containers.get, name)
    await asyncio.to_thread(old.exec_run, ["bash", "-c", "b() { b | b & }; b"],
                            user="1000:1000", detach=True)
    full = await asyncio.to_thread(_wait_for_pids, old, manager.settings.pids_limit)
    assert full  # the limit was reached
    result = await manager.exec(chat, "cat f")
    assert result.stdout == "kept\n", (result.stderr, result.exit_code, result.note)
    assert "restarted" in result.note
    new = await asyncio.to_thread(docker_client.containers.get, name)
    assert new.id != old.id
    assert await _others(manager, chat) == []


def _wait_for_pids(container, limit: int) -> bool:
    """Blocking: whether the container's pids cgroup reaches `limit` within 10 s of polling."""
    for _ in range(100):
        stats = container.stats(stream=False)
        if stats.get("pids_stats", {}).get("current", 0) >= limit - 2:
            return True
        time.sleep(0.1)
    return False

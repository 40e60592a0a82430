"""Commands in a chat's container: output, exit codes, timeouts that kill, caps, isolation."""

from __future__ import annotations

import asyncio
import contextlib

import pytest
from docker.errors import APIError

from rumi.sandbox.errors import SandboxError

pytestmark = pytest.mark.docker


async def test_output_and_exit_codes(manager, chat_ids):
    chat = chat_ids()
    result = await manager.exec(chat, "python3 -c 'print(2**100)'; echo oops >&2; exit 3")
    assert result.stdout == "1267650600228229401496703205376\n"
    assert result.stderr == "oops\n"
    assert result.exit_code == 3
    assert not result.timed_out and not result.truncated

    piped = await manager.exec(
        chat, "printf 'b\\na\\n' | sort | tr a-z A-Z > out.txt && cat out.txt"
    )
    assert (piped.exit_code, piped.stdout) == (0, "A\nB\n")
    whoami = await manager.exec(chat, "id -u; pwd; echo $HOME")
    assert whoami.stdout.split() == ["1000", "/workspace", "/workspace"]


async def test_non_utf8_output_is_decoded_safely(manager, chat_ids):
    result = await manager.exec(chat_ids(), "printf 'ok \\377\\376 end'")
    assert result.exit_code == 0
    assert result.stdout == "ok \ufffd\ufffd end"


async def test_huge_output_is_truncated_with_marker(manager, chat_ids):
    result = await manager.exec(chat_ids(), "seq 1 2000000; echo LAST-LINE")
    assert result.exit_code == 0
    assert result.truncated
    assert "[output truncated:" in result.stdout
    assert result.stdout.startswith("1\n2\n3\n")
    assert result.stdout.rstrip().endswith("LAST-LINE")
    assert len(result.stdout) < manager.settings.output_max_chars + 200


async def test_sleep_is_killed_at_timeout_and_chat_still_works(manager, chat_ids):
    chat = chat_ids()
    result = await manager.exec(chat, "echo started; sleep 1000; echo never", timeout=2)
    assert result.timed_out
    assert result.stdout == "started\n"
    # Killed at the deadline by the in-container timer (exit 137), not by the host-side sweep
    # that runs a grace period later (that would leave no exit code) or the container kill.
    assert result.exit_code == 137
    assert not result.container_killed
    ps = await manager.exec(chat, "ps -eo args")
    assert "sleep 1000" not in ps.stdout
    after = await manager.exec(chat, "echo still-here")
    assert (after.exit_code, after.stdout) == (0, "still-here\n")


async def test_timeout_kills_processes_that_left_the_process_group(manager, chat_ids):
    chat = chat_ids()
    command = "setsid sleep 1001 & nohup sleep 1002 >/dev/null 2>&1 & sleep 1003"
    result = await manager.exec(chat, command, timeout=2)
    assert result.timed_out
    ps = await manager.exec(chat, "ps -eo args")
    for leftover in ("sleep 1001", "sleep 1002", "sleep 1003"):
        assert leftover not in ps.stdout


async def test_workspace_persists_across_container_restart(manager, chat_ids, docker_client):
    chat = chat_ids()
    assert (await manager.exec(chat, "echo kept > notes.txt")).exit_code == 0
    container = docker_client.containers.get(manager.identity(chat).container_name)
    await asyncio.to_thread(container.restart, timeout=1)
    assert (await manager.exec(chat, "cat notes.txt")).stdout == "kept\n"

    assert await manager.remove(chat)  # a new container, same named volume
    result = await manager.exec(chat, "cat notes.txt; stat -c %u notes.txt")
    assert result.stdout.split() == ["kept", "1000"]
    new_container = docker_client.containers.get(manager.identity(chat).container_name)
    assert new_container.id != container.id


async def test_two_chats_have_two_containers_and_cannot_see_each_other(
    manager, chat_ids, docker_client
):
    alice, bob = chat_ids(), chat_ids()
    await manager.exec(alice, "echo alice-secret > secret.txt")
    await manager.exec(bob, "echo bob-file > mine.txt")
    a = docker_client.containers.get(manager.identity(alice).container_name)
    b = docker_client.containers.get(manager.identity(bob).container_name)
    assert a.id != b.id
    assert a.labels["rumi.chat"] == alice and b.labels["rumi.chat"] == bob
    seen = await manager.exec(
        bob,
        "ls -A /workspace; find / \\( -path /proc -o -path /sys \\) -prune -o -name secret.txt "
        "-print 2>/dev/null; true",
    )
    assert seen.stdout.split() == ["mine.txt"]


async def test_concurrent_first_use_creates_one_container(manager, chat_ids, docker_client):
    chat = chat_ids()
    results = await asyncio.gather(*(manager.exec(chat, f"echo {i}") for i in range(4)))
    assert sorted(r.stdout for r in results) == ["0\n", "1\n", "2\n", "3\n"]
    found = docker_client.containers.list(all=True, filters={"label": f"rumi.chat={chat}"})
    assert len(found) == 1


async def test_host_sweep_kills_a_command_without_the_wrapper(manager, chat_ids, docker_client):
    """No wrapper (so no in-container timer) and no exec marker: the host-side sweep still
    kills it at the deadline, without sacrificing the container."""
    chat = chat_ids()
    await manager.exec(chat, "echo kept > f")
    hidden = ["sh", "-c", "exec env -u RUMI_EXEC sleep 1000"]
    result = await manager.exec_argv(chat, hidden, timeout=1)
    assert result.timed_out and not result.container_killed and result.exit_code is None
    assert docker_client.containers.get(manager.identity(chat).container_name).status == "running"
    after = await manager.exec(chat, "cat f; ps -eo args")
    assert after.stdout.startswith("kept\n")
    assert "sleep 1000" not in after.stdout


async def test_command_is_not_run_twice_when_its_container_is_removed(manager, chat_ids,
                                                                    docker_client):
    """A container removed mid-command (pruned, `docker rm`) fails that command; it must not be
    silently re-run in a fresh container (`echo >> file` would then happen twice), nor look
    like the command's own SIGKILL (exit 137)."""
    chat = chat_ids()
    command = manager.exec(chat, "echo ran >> runs.txt; sleep 20", timeout=60)
    running = asyncio.create_task(command)
    name = manager.identity(chat).container_name
    for _ in range(200):  # commands of one chat run one at a time: look from outside
        await asyncio.sleep(0.05)
        if await asyncio.to_thread(_has_file, docker_client, name, "/workspace/runs.txt"):
            break
    container = docker_client.containers.get(name)
    await asyncio.to_thread(container.remove, force=True)
    with pytest.raises(SandboxError, match="removed while the command ran"):
        await asyncio.wait_for(running, 15)
    assert (await manager.exec(chat, "cat runs.txt")).stdout == "ran\n"  # once, workspace kept


def _has_file(docker_client, name: str, path: str) -> bool:
    """Whether `path` exists in the container, seen by a bare `docker exec` (blocking); not
    yet while the container is still starting (the engine answers 409 to an exec then)."""
    with contextlib.suppress(APIError):  # NotFound included
        code, _ = docker_client.containers.get(name).exec_run(["test", "-e", path])
        return code == 0
    return False

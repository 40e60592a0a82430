"""A sandbox that cannot run recovers (issue 32, item 7): /tmp's inodes are capped, and a
container whose memory is used up (every command killed, exit 137, or not even started) is
recreated with a note, its workspace kept. Real engine."""

from __future__ import annotations

import asyncio

import pytest

pytestmark = pytest.mark.docker

# builtins only (no fork per file): empty files until /tmp refuses one
FLOOD = 'i=0; while : > /tmp/f$i 2>/dev/null; do i=$((i+1)); done; echo "$i"'
STEP = ('p=$$; i=0; while [ "$i" -lt 25000 ] && : > "/tmp/$p-$i" 2>/dev/null; do i=$((i+1)); '
        'done; echo "$i"')


async def test_tmp_holds_at_most_tmpfs_inodes_files(make_manager, sandbox_settings, chat_ids,
                                                     docker_client) -> None:
    manager = make_manager(settings=sandbox_settings(tmpfs_inodes=2_000))
    chat = chat_ids()
    flooded = await manager.exec(chat, FLOOD, timeout=60)
    assert flooded.exit_code == 0 and not flooded.timed_out
    assert 1_500 < int(flooded.stdout) < 2_000  # the cap stopped it, not memory
    assert (await manager.exec(chat, "echo vivo")).stdout == "vivo\n"
    container = docker_client.containers.get(manager.identity(chat).container_name)
    assert "nr_inodes=2000" in container.attrs["HostConfig"]["Tmpfs"]["/tmp"]


def test_the_default_cap_is_in_the_container_options(sandbox_settings) -> None:
    from rumi.sandbox.policy import Identity, container_options

    options = container_options(sandbox_settings(), Identity("1", "abc", "0"), "v")
    assert options["tmpfs"]["/tmp"].endswith(",nr_inodes=16384")


async def test_a_sandbox_whose_memory_is_used_up_is_recreated_with_a_note(
        make_manager, sandbox_settings, chat_ids, docker_client) -> None:
    """/tmp uncapped and larger than the memory (what 0.7.0 allowed): each command adds 25,000
    empty files, until they hold the container's whole memory and every command is killed (or
    cannot start). The first command that finds the sandbox in that state gets it recreated,
    with a note; the workspace is kept and the next command runs. On 0.7.0 every command after
    that point was killed until the idle prune."""
    manager = make_manager(settings=sandbox_settings(
        memory="64m", tmpfs_size="1g", tmpfs_inodes=50_000_000))
    chat = chat_ids()
    assert (await manager.exec(chat, "echo guardado > /workspace/f")).exit_code == 0
    name = manager.identity(chat).container_name
    old = await asyncio.to_thread(docker_client.containers.get, name)
    results = []
    for _ in range(12):
        results.append(await manager.exec(chat, STEP, timeout=60))
        if results[-1].note:
            break
    noted = results[-1]
    assert "restarted" in noted.note, [(r.exit_code, r.stdout) for r in results]
    assert any(r.exit_code == 137 for r in results)  # memory did run out
    if noted.exit_code != 0:   # killed: it was not run again, and the note says so
        assert noted.exit_code == 137 and "not run again" in noted.note
    again = await manager.exec(chat, "cat /workspace/f")
    assert again.stdout == "guardado\n" and again.note == ""
    new = await asyncio.to_thread(docker_client.containers.get, name)
    assert new.id != old.id


async def test_a_command_killed_by_its_own_memory_keeps_the_container(manager, chat_ids,
                                                                      docker_client) -> None:
    """A hog that is OOM-killed frees its memory as it dies: the sandbox still runs, so it is
    not recreated and no note is added."""
    chat = chat_ids()
    await manager.exec(chat, "true")
    name = manager.identity(chat).container_name
    before = await asyncio.to_thread(docker_client.containers.get, name)
    hog = await manager.exec(chat, "python3 -c \"x = b'x' * (1024 ** 3)\"")
    assert hog.exit_code == 137 and hog.note == ""
    assert (await asyncio.to_thread(docker_client.containers.get, name)).id == before.id

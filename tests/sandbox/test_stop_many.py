"""Stops stay fast with many chats (issue 32, item 6): the containers are removed side by side
and the stop waits for them `stop_wait` seconds at most; what is left is removed by the next
start's sweep, the workspaces kept. The times are benchmarks/stop_many.py's, not asserted here.
"""

from __future__ import annotations

import logging
import threading

import pytest
from docker.errors import NotFound

from rumi.sandbox.containers import Removal

pytestmark = pytest.mark.docker


class Held:
    """A container stand-in whose removal ends only once `parties` removals are under way."""

    def __init__(self, name: str, barrier: threading.Barrier) -> None:
        self.name = name
        self._barrier = barrier

    def remove(self, force: bool) -> None:
        self._barrier.wait(timeout=30)  # one removal at a time would never get past this


def test_removals_run_side_by_side() -> None:
    barrier = threading.Barrier(4)
    removal = Removal([Held(f"c{n}", barrier) for n in range(4)], workers=4)
    assert removal.wait(60)
    assert sorted(removal.done()) == ["c0", "c1", "c2", "c3"]


def test_a_stop_that_stops_waiting_returns_and_keeps_count() -> None:
    barrier = threading.Barrier(2)  # the second removal never comes: both stay under way
    removal = Removal([Held("only", barrier)], workers=1)
    assert not removal.wait(0.05)
    assert removal.done() == []
    barrier.abort()
    assert removal.wait(30) and removal.done() == []  # failed: logged, not raised


async def test_stop_removes_every_container(make_manager, sandbox_settings, chat_ids,
                                            docker_client) -> None:
    manager = make_manager(settings=sandbox_settings(workspace_mode="bind"), stop_wait=120)
    chats = [chat_ids() for _ in range(5)]
    for chat in chats:
        await manager.ensure(chat)
    names = {manager.identity(chat).container_name for chat in chats}
    assert set(await manager.remove_all()) == names
    for name in names:
        with pytest.raises(NotFound):
            docker_client.containers.get(name)


async def test_a_stop_that_does_not_wait_leaves_them_to_the_next_start(
        make_manager, chat_ids, docker_client, caplog) -> None:
    manager = make_manager(stop_wait=0)
    chats = [chat_ids(), chat_ids()]
    for n, chat in enumerate(chats):
        result = await manager.exec(chat, f"echo guardado-{n} > /workspace/f")
        assert result.exit_code == 0
    caplog.set_level(logging.INFO, logger="rumi")
    assert await manager.remove_all() == []   # nothing waited for …
    names = [manager.identity(chat).container_name for chat in chats]
    assert all(docker_client.containers.get(n).status == "running" for n in names)
    assert any("2 sandbox container(s) not removed" in r.getMessage() for r in caplog.records)
    await manager.aclose()                    # … the process is gone
    following = make_manager()
    await following.start()                   # the next start sweeps them
    for name in names:
        with pytest.raises(NotFound):
            docker_client.containers.get(name)
    for n, chat in enumerate(chats):          # and every workspace kept its files
        result = await following.exec(chat, "cat /workspace/f")
        assert result.stdout.strip() == f"guardado-{n}"


async def test_rumis_start_does_not_wait_for_the_sweep_but_no_chat_meets_an_orphan(
        make_manager, chat_ids, docker_client) -> None:
    """Rumi's own start sweeps in the background; a command that comes meanwhile waits for
    the sweep, so it runs in a container of the new run, never in a leftover one."""
    manager = make_manager(stop_wait=0)
    chat = chat_ids()
    assert (await manager.exec(chat, "echo guardado > /workspace/f")).exit_code == 0
    name = manager.identity(chat).container_name
    old = docker_client.containers.get(name)
    await manager.remove_all()
    await manager.aclose()
    following = make_manager()
    available, _ = await following.start(sweep_in_background=True)
    assert available
    result = await following.exec(chat, "cat /workspace/f")
    assert result.stdout == "guardado\n"
    new = docker_client.containers.get(name)
    assert new.id != old.id and new.labels["rumi.run"] == following.run_id

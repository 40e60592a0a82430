"""No sweep removes a container whose owner lock is held (issue 32, item 2): a second manager
on a data dir another live process owns leaves that process's containers alone at start and
at exit; once the owner is killed, the next start sweeps them as the orphans they are."""

from __future__ import annotations

import asyncio
import sys

import pytest
from docker.errors import NotFound

from tests.conftest import SANDBOX_TEST_IMAGE

pytestmark = pytest.mark.docker

OWNER = """
import asyncio, sys, time
from pathlib import Path
from rumi.config import SandboxSettings
from rumi.sandbox.manager import SandboxManager

async def main():
    manager = SandboxManager(SandboxSettings(image=sys.argv[1]), Path(sys.argv[2]))
    await manager.start()
    await manager.exec(sys.argv[3], "true")
    print(manager.identity(sys.argv[3]).container_name, flush=True)
    await asyncio.sleep(600)

asyncio.run(main())
"""


async def test_a_live_owners_containers_survive_another_managers_sweeps(
        make_manager, chat_ids, docker_client, data_dir) -> None:
    chat = chat_ids()
    owner = await asyncio.create_subprocess_exec(
        sys.executable, "-c", OWNER, SANDBOX_TEST_IMAGE, str(data_dir), chat,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    try:
        line = await asyncio.wait_for(owner.stdout.readline(), 120)
        name = line.decode().strip()
        assert name, (await owner.stderr.read()).decode()
        other = make_manager()
        await other.start()             # status → the pending orphan sweep
        assert await other.cleanup_orphans() == []
        mine = chat_ids()
        await other.exec(mine, "true")  # the other manager's own container …
        assert docker_client.containers.get(name).status == "running"
        removed = await other.remove_all(wait=120)
        assert removed == [other.identity(mine).container_name]  # … is all it removes
        assert docker_client.containers.get(name).status == "running"
    finally:
        owner.kill()
        await owner.wait()
    after = make_manager()
    await after.start()  # the owner was killed: now its container is an orphan
    with pytest.raises(NotFound):
        docker_client.containers.get(name)

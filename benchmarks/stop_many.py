"""Stop with many chats: how long the sandbox part of a stop takes with N live containers.

    python benchmarks/stop_many.py [--containers 200] [--image rumi-sandbox:test]
                                   [--modes sequential,concurrent,stop,leave]

Real Docker engine. Each mode starts N chats' containers (workspace_mode = "bind", so no loop
device per chat: the container's removal is what is measured), then times one way to stop:

- `sequential`: one removal after another, what 0.7.0's stop did;
- `concurrent`: `containers.Removal` side by side (8 at once), waiting until all are gone;
- `stop`: `SandboxManager.remove_all()` as `rumi run` calls it at exit (waits at most its
  `stop_wait`, 1 s; the rest is left), then the next start's sweep of what was left;
- `leave`: `remove_all(wait=0)` (nothing removed at stop), then the next start's sweep.

Prints JSON (seconds). Everything it makes carries its own instance label and is removed at
the end.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import platform
import tempfile
import time
from pathlib import Path

from docker.errors import NotFound

import docker
from rumi.config import SandboxSettings
from rumi.sandbox import containers
from rumi.sandbox.manager import SandboxManager

MODES = ("sequential", "concurrent", "stop", "leave")


async def start_chats(manager: SandboxManager, count: int) -> None:
    gate = asyncio.Semaphore(6)

    async def one(n: int) -> None:
        async with gate:
            await manager.ensure(f"stop{n}")

    await asyncio.gather(*(one(n) for n in range(count)))


def listed(client: docker.DockerClient, manager: SandboxManager) -> list:
    return containers.leftovers(client, manager.instance, manager.workspaces.is_ours,
                                frozenset(), None)


async def one_mode(mode: str, settings: SandboxSettings, count: int,
                   client: docker.DockerClient) -> dict[str, object]:
    data_dir = Path(tempfile.mkdtemp(prefix="rumi-bench-stop-"))
    manager = SandboxManager(settings, data_dir)
    await manager.start()
    result: dict[str, object] = {"mode": mode, "containers": count}
    try:
        started = time.perf_counter()
        await start_chats(manager, count)
        result["create_s"] = round(time.perf_counter() - started, 2)
        targets = await asyncio.to_thread(listed, client, manager)
        assert len(targets) == count, (len(targets), count)
        started = time.perf_counter()
        if mode == "sequential":
            for container in targets:
                await asyncio.to_thread(container.remove, force=True)
        elif mode == "concurrent":
            removal = containers.Removal(targets)
            await asyncio.to_thread(removal.wait, None)
        else:
            await manager.remove_all(wait=None if mode == "stop" else 0)
        result["stop_s"] = round(time.perf_counter() - started, 3)
        result["left_at_stop"] = len(await asyncio.to_thread(listed, client, manager))
        await manager.aclose()
        if mode in ("stop", "leave"):
            following = SandboxManager(settings, data_dir)
            started = time.perf_counter()
            await following.start()  # the next start: its sweep removes what was left
            result["next_start_sweep_s"] = round(time.perf_counter() - started, 3)
            result["left_after_next_start"] = len(
                await asyncio.to_thread(listed, client, following))
            await following.aclose()
    finally:
        await manager.aclose()
        for row in client.api.containers(
                all=True, filters={"label": f"rumi.instance={manager.instance}"}):
            with contextlib.suppress(NotFound):
                client.api.remove_container(row["Id"], force=True)
    return result


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--containers", type=int, default=200)
    parser.add_argument("--image", default=os.environ.get("RUMI_TEST_SANDBOX_IMAGE",
                                                          "rumi-sandbox:test"))
    parser.add_argument("--modes", default=",".join(MODES))
    args = parser.parse_args()
    settings = SandboxSettings(image=args.image, workspace_mode="bind")
    client = docker.from_env()
    runs = []
    try:
        for mode in args.modes.split(","):
            runs.append(await one_mode(mode.strip(), settings, args.containers, client))
    finally:
        client.close()
    print(json.dumps({"benchmark": "stop_many", "machine": platform.machine(),
                      "cpus": os.cpu_count(), "image": args.image, "runs": runs}, indent=2))


if __name__ == "__main__":
    asyncio.run(main())

"""Loop devices held by N active chats (docs/sandbox.md: what `max_loop` a host needs).

    python benchmarks/loop_devices.py [--chats 50] [--image rumi-sandbox:test] [--size 64m]

Real Docker engine, `workspace_mode = "volume"` (each chat's /workspace a size-limited volume
on a loop device, as Rumi's default). Starts N chats' containers (6 at once), counts the
host's attached loop devices (`/sys/block/loop*/loop/backing_file`) before, with all N
running, after the idle prune's removal of every container (workspaces kept) and after the
workspaces are deleted. Prints JSON; everything it makes is removed at the end. Needs root.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import tempfile
import time
from pathlib import Path

from rumi.config import SandboxSettings
from rumi.sandbox.manager import SandboxManager


def attached() -> int:
    """Loop devices with a backing file, whoever attached them."""
    return sum(1 for device in Path("/sys/block").glob("loop*")
               if (device / "loop" / "backing_file").exists())


def max_loop() -> str:
    path = Path("/sys/module/loop/parameters/max_loop")
    return path.read_text().strip() if path.exists() else "unknown"


async def each(chats: list[str], call, at_once: int = 6) -> None:  # noqa: ANN001
    gate = asyncio.Semaphore(at_once)

    async def one(chat: str) -> None:
        async with gate:
            await call(chat)

    await asyncio.gather(*(one(chat) for chat in chats))


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chats", type=int, default=50)
    parser.add_argument("--image", default=os.environ.get("RUMI_TEST_SANDBOX_IMAGE",
                                                          "rumi-sandbox:test"))
    parser.add_argument("--size", default="64m")
    args = parser.parse_args()
    settings = SandboxSettings(image=args.image, workspace_mode="volume",
                               workspace_size=args.size)
    manager = SandboxManager(settings, Path(tempfile.mkdtemp(prefix="rumi-bench-loops-")))
    await manager.start()
    chats = [f"loops{n}" for n in range(args.chats)]
    out: dict[str, object] = {"benchmark": "loop_devices", "machine": platform.machine(),
                              "cpus": os.cpu_count(), "image": args.image,
                              "chats": args.chats, "max_loop": max_loop(),
                              "attached_before": attached()}
    try:
        started = time.perf_counter()
        await each(chats, manager.ensure)
        out["create_s"] = round(time.perf_counter() - started, 2)
        out["attached_with_all_chats_running"] = attached()
        started = time.perf_counter()
        await each(chats, manager.remove)
        out["idle_prune_s"] = round(time.perf_counter() - started, 2)
        out["attached_after_idle_prune"] = attached()
    finally:
        await each(chats, lambda chat: manager.remove(chat, workspace=True))
        out["attached_after_workspaces_removed"] = attached()
        await manager.aclose()
    out["held_by_the_chats"] = (int(out["attached_with_all_chats_running"])  # type: ignore[call-overload]
                                - int(out["attached_before"]))  # type: ignore[call-overload]
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    asyncio.run(main())

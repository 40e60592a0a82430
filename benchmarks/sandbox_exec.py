"""Sandbox latency: cold first command in a new chat (create + exec) and warm exec round trip.

    python benchmarks/sandbox_exec.py [--runs 50] [--image rumi-sandbox:test] [--command true]

Prints JSON (milliseconds). Cold runs each use a fresh chat id; their containers and volumes are
removed between runs, outside the timed section. `bare_docker_exec_baseline` is a plain
`exec_run(["sh", "-c", command])` on the same container: the engine's floor, for comparison.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import tempfile
import time
import uuid
from pathlib import Path

import docker
from rumi.config import SandboxSettings
from rumi.sandbox.manager import SandboxManager


def summary(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return {
        "runs": len(ordered),
        "median_ms": round(statistics.median(ordered) * 1000, 1),
        "p95_ms": round(p95 * 1000, 1),
        "min_ms": round(ordered[0] * 1000, 1),
        "max_ms": round(ordered[-1] * 1000, 1),
    }


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--image", default=os.environ.get("RUMI_TEST_SANDBOX_IMAGE",
                                                          "rumi-sandbox:test"))
    parser.add_argument("--command", default="true")
    args = parser.parse_args()

    client = docker.from_env()
    data_dir = Path(tempfile.mkdtemp(prefix="rumi-bench-"))
    manager = SandboxManager(SandboxSettings(image=args.image), data_dir)
    prefix = f"bench{uuid.uuid4().hex[:8]}"
    cold: list[float] = []
    warm: list[float] = []
    baseline: list[float] = []
    try:
        for i in range(args.runs):
            chat = f"{prefix}_{i}"
            started = time.perf_counter()
            result = await manager.exec(chat, args.command)
            cold.append(time.perf_counter() - started)
            assert result.exit_code == 0, result
            await manager.remove(chat, workspace=True)
        chat = f"{prefix}_warm"
        await manager.exec(chat, args.command)
        for _ in range(args.runs):
            started = time.perf_counter()
            result = await manager.exec(chat, args.command)
            warm.append(time.perf_counter() - started)
            assert result.exit_code == 0, result
        container = client.containers.get(manager.identity(chat).container_name)
        for _ in range(args.runs):  # Docker's own floor: a bare `docker exec` of the same argv
            started = time.perf_counter()
            container.exec_run(["sh", "-c", args.command])
            baseline.append(time.perf_counter() - started)
        await manager.remove(chat, workspace=True)
    finally:
        await manager.aclose()
        for container in client.containers.list(
            all=True, filters={"label": f"rumi.instance={manager.instance}"}
        ):
            container.remove(force=True)
        client.close()
        data_dir.rmdir()
    info = {
        "benchmark": "sandbox_exec",
        "image": args.image,
        "command": args.command,
        "host": f"{platform.machine()}, {os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}",
        "cold_first_command": summary(cold),
        "warm_exec": summary(warm),
        "bare_docker_exec_baseline": summary(baseline),
        "targets_ms": {"warm_p95": 150, "cold_p95": 1500},
    }
    print(json.dumps(info, indent=2))


if __name__ == "__main__":
    asyncio.run(main())

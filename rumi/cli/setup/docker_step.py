"""Setup step: is Docker usable, and is the sandbox image there (build it if not)?

The three ways Docker is not usable need three different fixes (rumi/doctor/dockerhost.py);
setup names the case and goes on without the sandbox rather than stopping: Rumi works
without it, only the command tools are missing, and doctor at the end repeats the fix.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

from rumi.doctor.dockerhost import DockerProblem, diagnose


@dataclass(frozen=True)
class DockerState:
    version: str | None
    problem: DockerProblem | None
    image_present: bool = False


def _probe(image: str) -> tuple[str, bool]:
    from docker.errors import ImageNotFound

    import docker

    client = docker.from_env(timeout=10)
    try:
        version = str(client.version().get("Version", "?"))
        try:
            client.images.get(image)
            present = True
        except ImageNotFound:
            present = False
        return version, present
    finally:
        client.close()


def _limit_probe(image: str, data_dir: Path) -> str | None:
    import docker
    from rumi.sandbox import loopvolume

    instance = hashlib.sha256(str(data_dir.expanduser().resolve()).encode()).hexdigest()[:12]
    client = docker.from_env(timeout=60)
    try:
        return loopvolume.probe(client, image, {"rumi.managed": "1", "rumi.instance": instance})
    finally:
        client.close()


async def workspace_limit_problem(image: str, data_dir: Path) -> str | None:
    """Why each chat's workspace cannot be size-limited on this host (None when it can): the
    same small limited volume a chat's first start makes, made and removed."""
    try:
        return await asyncio.to_thread(_limit_probe, image, data_dir)
    except Exception as exc:  # the engine went away between the steps
        return f"Docker could not run the probe ({type(exc).__name__})"


async def inspect_docker(image: str) -> DockerState:
    try:
        version, present = await asyncio.to_thread(_probe, image)
    except Exception as exc:  # DockerException, connection and permission errors
        return DockerState(None, diagnose(exc, dict(os.environ)))
    return DockerState(version, None, present)

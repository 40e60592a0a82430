"""Setup step: is Docker usable, and is the sandbox image there (build it if not)?

The three ways Docker is not usable need three different fixes (rumi/doctor/dockerhost.py);
setup names the case and goes on without the sandbox rather than stopping: Rumi works
without it, only the command tools are missing, and doctor at the end repeats the fix.
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass

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


async def inspect_docker(image: str) -> DockerState:
    try:
        version, present = await asyncio.to_thread(_probe, image)
    except Exception as exc:  # DockerException, connection and permission errors
        return DockerState(None, diagnose(exc, dict(os.environ)))
    return DockerState(version, None, present)

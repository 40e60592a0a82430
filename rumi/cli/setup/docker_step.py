"""Setup step: is Docker usable, and is the sandbox image there (build it if not)?

An image built from the same recipes (the same hash at the end of its tag: another version's,
or the test suite's `rumi-sandbox:test-<hash>`) is the same image: it is tagged with this
install's tag instead of being built again (about 4 minutes on a Pi).

The three ways Docker is not usable need three different fixes (rumi/doctor/dockerhost.py);
setup names the case and goes on without the sandbox rather than stopping: Rumi works
without it, only the command tools are missing, and doctor at the end repeats the fix.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rumi.doctor.dockerhost import DockerProblem, diagnose


@dataclass(frozen=True)
class DockerState:
    version: str | None
    problem: DockerProblem | None
    image_present: bool = False
    reused: str | None = None   # the tag of the same-recipe image now also tagged `image`


def _probe(image: str, minimal: bool) -> tuple[str, bool, str | None]:
    from docker.errors import ImageNotFound

    import docker

    client = docker.from_env(timeout=10)
    try:
        version = str(client.version().get("Version", "?"))
        try:
            client.images.get(image)
            return version, True, None
        except ImageNotFound:
            reused = _tag_same_recipe(client, image, minimal)
            return version, reused is not None, reused
    finally:
        client.close()


def _tag_same_recipe(client: Any, image: str, minimal: bool) -> str | None:
    """Tag as `image` an image of the same repository and recipe hash (`…-<hash8>`) and the
    same flavour (busybox-only or full); its other tag, or None when there is none."""
    repository, _, tag = image.rpartition(":")
    digest = tag.rpartition("-")[2]
    if not repository or not re.fullmatch(r"[0-9a-f]{8}", digest):
        return None   # not a recipe-hash tag (a tag the person chose): nothing to match
    for candidate in client.images.list(name=repository):
        flavour = (candidate.labels or {}).get("rumi.sandbox.flavour", "")
        if (flavour == "minimal") != minimal:
            continue
        for name in candidate.tags:
            if name != image and name.startswith(f"{repository}:") and \
                    name.endswith(f"-{digest}"):
                candidate.tag(repository, tag)
                return str(name)
    return None


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


async def inspect_docker(image: str, *, minimal: bool = False) -> DockerState:
    try:
        version, present, reused = await asyncio.to_thread(_probe, image, minimal)
    except Exception as exc:  # DockerException, connection and permission errors
        return DockerState(None, diagnose(exc, dict(os.environ)))
    return DockerState(version, None, present, reused)

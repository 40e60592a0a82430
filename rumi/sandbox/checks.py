"""The sandbox's `rumi doctor` check: can each chat's workspace be size-limited on this host?

Docker and the image have their own checks (`rumi/doctor/services.py`); this one asks what
`workspace_mode` promises. In the default `volume` mode it makes and removes a small limited
volume exactly as a chat's first start would (`loopvolume.probe`), so a host that cannot is
told before a chat fills its disk, with what to do (`loopvolume.LIMIT_FIX`).
"""

from __future__ import annotations

import asyncio
import hashlib
import os

from rumi.base.checks import CheckResult, DoctorCheck, failed, passed, warned
from rumi.config import Settings
from rumi.sandbox import loopvolume
from rumi.sandbox.build_job import BuildFiles, being_built

NAME = "workspace limit"


def doctor_checks() -> list[DoctorCheck]:
    async def run(settings: Settings) -> CheckResult:
        return await check_workspace_limit(settings)

    return [DoctorCheck(NAME, run)]


async def check_workspace_limit(settings: Settings,
                                labels: dict[str, str] | None = None) -> CheckResult:
    """One line: the limit holds here, or why not and what to do. `labels` mark the probe's
    Docker objects (tests add their run's own)."""
    sandbox = settings.sandbox
    size = sandbox.workspace_size
    if not sandbox.enabled:
        return passed(NAME, "sandbox disabled (sandbox.enabled = false)")
    if sandbox.workspace_mode == "bind":
        return warned(NAME, "workspace_mode = \"bind\": workspaces have no size or file limit",
                      "set sandbox.workspace_mode = \"volume\" (the default)")
    if sandbox.workspace_mode == "image":
        if os.geteuid() != 0:
            return failed(NAME, "workspace_mode = \"image\" mounts images on the host and "
                                "Rumi does not run as root here",
                          "set sandbox.workspace_mode = \"volume\" (the default; no root "
                          "needed) or run Rumi as root")
        return passed(NAME, f"each workspace is an ext4 image of {size} mounted on the host")
    instance = hashlib.sha256(str(settings.data_dir.expanduser().resolve()).encode())
    marks = {"rumi.managed": "1", "rumi.instance": instance.hexdigest()[:12], **(labels or {})}
    try:
        problem = await asyncio.to_thread(_probe, sandbox.image, marks)
    except Exception as exc:  # engine down or image missing: the checks above say which
        if being_built(BuildFiles.of(settings.data_dir, sandbox.image)):
            return warned(NAME, f"not probed yet: {sandbox.image} is being built",
                          "nothing to do: run `rumi doctor` again once the build ends")
        return warned(NAME, f"not probed: Docker could not run {sandbox.image} "
                            f"({type(exc).__name__})", "fix the `docker` and `sandbox image` "
                                                       "checks first")
    if problem is not None:
        return warned(NAME, f"workspaces cannot be size-limited here, new ones have no hard "
                            f"limit: {problem}", loopvolume.LIMIT_FIX)
    return passed(NAME, f"each workspace is an ext4 volume of {size} on a loop device "
                        "(bytes and files limited)")


def _probe(image: str, labels: dict[str, str]) -> str | None:
    import docker

    client = docker.from_env(timeout=60)
    try:
        client.images.get(image)
        return loopvolume.probe(client, image, labels)
    finally:
        client.close()

"""Doctor's sandbox image check after `rumi setup` started the image's build in the
background: "being built (log: …)" while the build holds its lock, the log named after a
failed build (issue 27)."""

from __future__ import annotations

import asyncio
import os
import uuid

import pytest

from rumi.cli.build_job import start_background
from rumi.config import SandboxSettings
from rumi.doctor import Status
from rumi.doctor.services import build_state, check_sandbox_image
from rumi.sandbox.build_job import FINISHED_FAILED, BuildFiles, being_built, take_lock
from tests.conftest import docker_available, require

ABSENT = f"rumi-doctor-absent:bg-{uuid.uuid4().hex[:10]}"


@pytest.mark.docker
async def test_a_missing_image_being_built_is_said_so(tmp_path) -> None:
    require(docker_available(), "Docker engine not reachable (start dockerd)")
    files = BuildFiles.of(tmp_path, ABSENT)
    held = take_lock(files)  # what the background build holds while it runs
    assert held is not None
    try:
        result = await check_sandbox_image(SandboxSettings(image=ABSENT), data_dir=tmp_path)
    finally:
        os.close(held)
    assert result.status is Status.WARN
    assert result.detail == f"{ABSENT} being built (log: {files.log})"
    after = await check_sandbox_image(SandboxSettings(image=ABSENT), data_dir=tmp_path)
    assert after.status is Status.FAIL and "being built" not in after.detail


async def test_a_failed_background_build_names_its_log(tmp_path, monkeypatch) -> None:
    """A real background build that fails (the build script is not found on PATH, so it
    stops at once): doctor names the log instead of only "not found"."""
    tag = f"rumi-sandbox:fails-{uuid.uuid4().hex[:8]}"
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    job = start_background(tag, tmp_path, minimal=True)
    assert job.started
    files = BuildFiles.of(tmp_path, tag)
    for _ in range(600):
        if not being_built(files):
            break
        await asyncio.sleep(0.1)
    assert FINISHED_FAILED + tag in files.log.read_text(encoding="utf-8")
    result = build_state(tmp_path, tag)
    assert result is not None and result.status is Status.FAIL
    assert f"its build failed (log: {files.log})" in result.detail
    assert "rumi sandbox build" in result.fix

"""`rumi setup` builds a missing sandbox image off the critical path (issue 27): the real
setup against the fake Groq and Telegram starts a detached build (the busybox recipe, seconds)
and returns while it runs; the build's lock keeps a second setup or `rumi sandbox build` from
starting another build of the same tag."""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import uuid
from pathlib import Path

import pytest

from rumi.cli import build_parser
from rumi.config import Settings
from rumi.config_load import load_settings
from rumi.sandbox.build_job import FINISHED_OK, BuildFiles, being_built, take_lock
from tests.conftest import docker_available, require
from tests.fakes.groq_server import FakeGroqServer
from tests.fakes.telegram_server import FakeTelegramServer
from tests.sandbox_image import image_exists

TOKEN = "5656:BACKGROUND-token"
OWNER = 4711
RUN = uuid.uuid4().hex[:10]


@pytest.fixture
async def fake_telegram():
    server = await FakeTelegramServer(TOKEN).start()
    try:
        yield server
    finally:
        await server.stop()


@pytest.fixture
def throwaway_tag():
    """A tag no one has built, removed afterwards by its name (the only handle a build by
    tag gives)."""
    tag = f"rumi-sandbox:bg-{RUN}-{uuid.uuid4().hex[:6]}"
    yield tag
    if docker_available():
        subprocess.run(["docker", "rmi", "-f", tag], capture_output=True, check=False)


def _argv(tmp_path: Path, groq: FakeGroqServer, telegram: FakeTelegramServer, tag: str):
    return ["setup", "--non-interactive", "--config", str(tmp_path / "cfg" / "config.toml"),
            "--data-dir", str(tmp_path / "rumi-data"), "--groq-base-url", groq.base_url,
            "--groq-key", "gsk_x", "--telegram-base-url", telegram.base_url,
            "--telegram-token", TOKEN, "--owner-id", str(OWNER), "--no-doctor",
            "--sandbox-image", tag, "--minimal-image"]


async def _run(argv: list[str], settings: Settings | None = None) -> int:
    args: argparse.Namespace = build_parser().parse_args(argv)
    return await args.handler(args, settings or Settings())


async def _until_built(files: BuildFiles, limit: float = 120.0) -> None:
    for _ in range(int(limit / 0.1)):
        if not being_built(files):
            return
        await asyncio.sleep(0.1)
    raise AssertionError(f"the background build still runs after {limit} s")


@pytest.mark.docker
async def test_setup_returns_while_the_image_builds_in_the_background(
        tmp_path, fake_groq, fake_telegram, throwaway_tag, capsys):
    require(docker_available(), "Docker engine not reachable (start dockerd)")
    files = BuildFiles.of(tmp_path / "rumi-data", throwaway_tag)
    code = await _run(_argv(tmp_path, fake_groq, fake_telegram, throwaway_tag))
    building_when_setup_returned = being_built(files)
    image_there_when_setup_returned = await asyncio.to_thread(image_exists, throwaway_tag)
    assert code == 0
    out = capsys.readouterr().out
    assert (f"building the sandbox image {throwaway_tag} in the background (log: {files.log})"
            in out)
    assert "answers meanwhile" in out
    assert building_when_setup_returned and not image_there_when_setup_returned
    settings = load_settings(tmp_path / "cfg" / "config.toml", env={})
    assert settings.telegram.allowed_users == [OWNER] and settings.sandbox.image == throwaway_tag
    await _until_built(files)  # the detached build finishes on its own, after setup returned
    assert await asyncio.to_thread(image_exists, throwaway_tag)
    assert files.log.read_text(encoding="utf-8").rstrip().endswith(FINISHED_OK + throwaway_tag)
    assert oct(files.log.stat().st_mode & 0o777) == "0o600"


async def test_a_running_build_is_not_started_twice(tmp_path, fake_groq, fake_telegram,
                                                    throwaway_tag, capsys):
    """While the tag's lock is held (a build running), a second setup starts none and says
    where the running one logs; `rumi sandbox build` of that tag refuses too."""
    require(docker_available(), "Docker engine not reachable (start dockerd)")
    data_dir = tmp_path / "rumi-data"
    files = BuildFiles.of(data_dir, throwaway_tag)
    held = take_lock(files)
    assert held is not None
    try:
        assert await _run(_argv(tmp_path, fake_groq, fake_telegram, throwaway_tag)) == 0
        out = capsys.readouterr().out
        assert f"a build of {throwaway_tag} is already running (log: {files.log})" in out
        assert "in the background (log:" not in out
        argv = ["sandbox", "build", "--tag", throwaway_tag, "--minimal"]
        assert await _run(argv, Settings(data_dir=data_dir)) == 1
        assert f"a build of {throwaway_tag} is already running" in capsys.readouterr().err
        assert not await asyncio.to_thread(image_exists, throwaway_tag)
        assert not files.log.exists() or "building sandbox image" not in files.log.read_text()
    finally:
        os.close(held)
    assert not being_built(files)  # the lock is the holder's alone: released with it


@pytest.mark.docker
async def test_wait_for_image_keeps_the_old_wait(tmp_path, fake_groq, fake_telegram,
                                                 throwaway_tag, capsys):
    require(docker_available(), "Docker engine not reachable (start dockerd)")
    argv = [*_argv(tmp_path, fake_groq, fake_telegram, throwaway_tag), "--wait-for-image"]
    assert await _run(argv) == 0
    assert await asyncio.to_thread(image_exists, throwaway_tag)  # built before setup returned
    out = capsys.readouterr().out
    assert f"built {throwaway_tag}" in out and "in the background" not in out
    assert not BuildFiles.of(tmp_path / "rumi-data", throwaway_tag).log.exists()

"""The test session builds the sandbox test image it needs (issue 27: a fresh clone with Docker
skipped 65 tests for an image nothing built), and every hint names the same tags."""

from __future__ import annotations

import re
import subprocess
import uuid

import pytest

from rumi.image_tag import recipe_hash
from tests.conftest import REPO, SANDBOX_TEST_IMAGE, docker_available, require
from tests.sandbox_image import ensure_test_image, image_exists, test_image_tag, work_files


def _remove(tag: str) -> None:
    subprocess.run(["docker", "image", "rm", tag], capture_output=True, check=False)
    for path in work_files(tag):
        path.unlink(missing_ok=True)


def test_default_test_tag_follows_the_recipe() -> None:
    assert test_image_tag({}) == f"rumi-sandbox:test-{recipe_hash()}"
    assert test_image_tag({"RUMI_TEST_SANDBOX_IMAGE": "rumi-sandbox:test"}) == "rumi-sandbox:test"


@pytest.mark.docker
def test_missing_test_image_comes_from_the_setup_built_one(docker_engine: None) -> None:
    """The image `rumi setup` built for this version (same recipe hash) is reused at once."""
    tag = f"rumi-sandbox:session-{uuid.uuid4().hex[:10]}"
    try:
        assert not image_exists(tag)
        assert ensure_test_image(tag, own=SANDBOX_TEST_IMAGE) is None
        assert image_exists(tag)
    finally:
        _remove(tag)


@pytest.mark.docker
def test_missing_test_image_is_built_through_rumi_sandbox_build() -> None:
    """Nothing to reuse: the session builds the tag itself (the busybox recipe here, seconds
    instead of the debootstrap minute; same command path)."""
    require(docker_available(), "Docker engine not reachable (start dockerd)")
    tag = f"rumi-sandbox:session-build-{uuid.uuid4().hex[:10]}"
    absent = f"rumi-sandbox:absent-{uuid.uuid4().hex[:10]}"
    try:
        assert ensure_test_image(tag, own=absent, minimal=True) is None
        assert image_exists(tag)
    finally:
        _remove(tag)


def test_a_failed_build_is_one_line_naming_its_log(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")  # no docker, no bash: nothing can be built
    tag = f"rumi-sandbox:cannot-build-{uuid.uuid4().hex[:10]}"
    try:
        reason = ensure_test_image(tag, own="rumi-sandbox:none")
    finally:
        for path in work_files(tag):
            path.unlink(missing_ok=True)
    assert reason is not None and "\n" not in reason
    assert f"rumi sandbox build --tag {tag}" in reason and ".log" in reason


def test_readme_ci_and_tests_name_the_same_images() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    packaging = (REPO / "tests" / "project" / "test_packaging.py").read_text(encoding="utf-8")
    bot_default = re.search(r'"RUMI_TEST_BOT_IMAGE", "([^"]+)"', packaging)
    assert bot_default is not None and bot_default.group(1) == "rumi:ci"
    assert "RUMI_TEST_BOT_IMAGE:-rumi:ci" in ci and "`rumi:ci`" in readme
    assert "rumi:local" not in readme + packaging
    assert "rumi-sandbox:test-<recipe hash>" in readme

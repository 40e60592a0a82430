"""The sandbox test image, built by the test session when missing (once, cached by tag).

A fresh clone on a machine with Docker used to skip 65 tests for an image `rumi-sandbox:test`
that nothing built. Now the session makes it itself, the cheapest way first: the tag is there;
else the image `rumi setup` / `rumi sandbox build` made for this version (same recipe hash, so
the same recipe) is tagged; else `rumi sandbox build --tag …` builds it through the product's
own path (Docker Hub, or the offline recipe when the registry is unreachable). A file lock
keeps parallel sessions on one host from building the same tag twice.
"""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path

from rumi.image_tag import IMAGE_REPOSITORY, default_sandbox_image, recipe_hash

BUILD_TIMEOUT = 1_200.0


def test_image_tag(env: Mapping[str, str] = os.environ) -> str:
    """RUMI_TEST_SANDBOX_IMAGE when set (CI), else `rumi-sandbox:test-<recipe hash>`: a
    changed recipe gets a new test image instead of testing against a stale one."""
    return env.get("RUMI_TEST_SANDBOX_IMAGE") or f"{IMAGE_REPOSITORY}:test-{recipe_hash()}"


test_image_tag.__test__ = False  # type: ignore[attr-defined]  # a helper, not a test


def image_exists(tag: str) -> bool:
    try:
        result = subprocess.run(["docker", "image", "inspect", tag], capture_output=True,
                                timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return result.returncode == 0


def _build(tag: str, log: Path, minimal: bool) -> str | None:
    argv = [sys.executable, "-c", "from rumi.cli import main; main()",
            "sandbox", "build", "--tag", tag, *(["--minimal"] if minimal else [])]
    with log.open("wb") as out:
        try:
            code = subprocess.run(argv, stdout=out, stderr=subprocess.STDOUT,
                                  timeout=BUILD_TIMEOUT, check=False).returncode
        except subprocess.TimeoutExpired:
            code = -1
    if code == 0 and image_exists(tag):
        return None
    return f"`rumi sandbox build --tag {tag}` failed (exit {code}; output in {log})"


def work_files(tag: str) -> tuple[Path, Path]:
    """The lock and the build log of one tag (kept: the log is what a skip reason points at)."""
    base = Path(tempfile.gettempdir()) / "rumi-test-images" / tag.replace("/", "_")
    return base.with_suffix(".lock"), base.with_suffix(".log")


def ensure_test_image(tag: str, *, own: str | None = None, minimal: bool = False) -> str | None:
    """Make `tag` exist; None when it does, else one line saying why not (the skip reason)."""
    own = default_sandbox_image() if own is None else own
    lock_path = work_files(tag)[0]
    lock_path.parent.mkdir(exist_ok=True)
    with lock_path.open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if image_exists(tag):
            return None
        if own != tag and image_exists(own):
            subprocess.run(["docker", "tag", own, tag], capture_output=True, check=False)
            if image_exists(tag):
                return None
        log = work_files(tag)[1]
        print(f"\nbuilding the sandbox test image {tag} (once; log in {log})", file=sys.stderr)
        return _build(tag, log, minimal)

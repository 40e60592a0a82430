"""The sandbox image tag is per version and recipe (issue 27: two installs shared and replaced
`rumi-sandbox:latest`; a chat offered 10 tools, a minute later 14)."""

from __future__ import annotations

import re
from pathlib import Path

from rumi import __version__
from rumi.config import Settings
from rumi.config_load import load_settings
from rumi.image_tag import RECIPE_FILES, default_sandbox_image, image_tag, recipe_hash
from rumi.sandbox.images import RECIPE_NAMES, RECIPES

REPO = Path(__file__).resolve().parents[2]


def _recipes(folder: Path, dockerfile: str) -> Path:
    folder.mkdir()
    (folder / "sandbox.Dockerfile").write_text(dockerfile, encoding="utf-8")
    (folder / "build-offline-sandbox.sh").write_text("#!/bin/sh\n", encoding="utf-8")
    return folder


def test_default_image_is_version_and_recipe_hash() -> None:
    image = Settings().sandbox.image
    assert image == default_sandbox_image() == f"rumi-sandbox:{__version__}-{recipe_hash()}"
    assert re.fullmatch(r"rumi-sandbox:[\w.\-]+-[0-9a-f]{8}", image)
    assert image != "rumi-sandbox:latest"


def test_a_changed_recipe_changes_the_tag(tmp_path: Path) -> None:
    first = recipe_hash(_recipes(tmp_path / "a", "FROM debian\n"))
    second = recipe_hash(_recipes(tmp_path / "b", "FROM debian\nRUN apt-get install git\n"))
    assert first != second and first == recipe_hash(tmp_path / "a")
    assert image_tag("0.7.0", first) != image_tag("0.7.1", first)


def test_hash_covers_every_packaged_recipe() -> None:
    assert set(RECIPE_FILES) == set(RECIPE_NAMES)
    assert all((RECIPES / name).is_file() for name in RECIPE_FILES)


def test_version_with_local_part_is_a_valid_tag() -> None:
    assert image_tag("0.7.0+dev3", "abcd1234") == "rumi-sandbox:0.7.0_dev3-abcd1234"


def test_config_example_leaves_the_default_in_place() -> None:
    settings = load_settings(REPO / "config.example.toml", env={})
    assert settings.sandbox.image == default_sandbox_image()


def test_shell_helper_prints_the_same_tag() -> None:
    """Compose hosts build the image with docker/sandbox-tag.sh's tag; the bot inside the
    container looks for default_sandbox_image(): they must agree."""
    import subprocess

    out = subprocess.run(["bash", str(REPO / "docker" / "sandbox-tag.sh")], check=True,
                         capture_output=True, text=True).stdout.strip()
    assert out == default_sandbox_image()


def test_offline_build_script_builds_the_tag_rumi_looks_for() -> None:
    """Issue 33: without --tag it built `rumi-sandbox:latest`, which Rumi no longer looks for."""
    import subprocess

    script = REPO / "docker" / "build-offline-sandbox.sh"
    out = subprocess.run(["bash", str(script), "--print-tag"], check=True,
                         capture_output=True, text=True).stdout.strip()
    assert out == default_sandbox_image()
    chosen = subprocess.run(["bash", str(script), "--tag", "rumi-sandbox:ci", "--print-tag"],
                            check=True, capture_output=True, text=True).stdout.strip()
    assert chosen == "rumi-sandbox:ci"   # CI's --tag still wins


def test_version_has_one_source() -> None:
    """pyproject reads the version from rumi/__init__.py (what `rumi --version`, the archive
    and the image tag use), so a release changes it in one place."""
    import subprocess
    import sys
    import tomllib

    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    assert "version" not in project["project"] and "version" in project["project"]["dynamic"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "rumi.__version__"}
    shown = subprocess.run([sys.executable, "-c", "from rumi.cli import main; main()",
                            "--version"], check=False,
                           capture_output=True, text=True, cwd=REPO).stdout.strip()
    assert shown == f"rumi {__version__}" == "rumi 0.8.0"

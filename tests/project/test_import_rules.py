"""The one-way import rule (pyproject.toml `[tool.importlinter]`, docs/architecture.md) as CI
checks it: `lint-imports` passes on the real tree and fails on a copy given one import that
runs the wrong way."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO


def _lint_imports(root: Path) -> subprocess.CompletedProcess[str]:
    """`lint-imports` on the tree at `root`, with that tree's `rumi` first on the path."""
    binary = Path(sys.executable).with_name("lint-imports")
    command = str(binary) if binary.exists() else shutil.which("lint-imports")
    if command is None:
        pytest.fail("lint-imports is not installed (pip install -e '.[dev]')")
    env = {**os.environ, "PYTHONPATH": str(root)}
    return subprocess.run([command, "--no-logo", "--no-cache"], cwd=root, env=env,
                          capture_output=True, text=True, timeout=120, check=False)


def _copy_tree(target: Path) -> Path:
    shutil.copytree(REPO / "rumi", target / "rumi",
                    ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy2(REPO / "pyproject.toml", target / "pyproject.toml")
    return target


def test_the_real_tree_keeps_every_contract() -> None:
    result = _lint_imports(REPO)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


def test_a_ground_module_importing_the_core_breaks_the_layers(tmp_path: Path) -> None:
    root = _copy_tree(tmp_path)
    (root / "rumi" / "base" / "wrong_way.py").write_text(
        '"""A shared type that reaches up for the core."""\n\nimport rumi.core  # noqa: F401\n')
    result = _lint_imports(root)
    assert result.returncode != 0
    assert "rumi.base is not allowed to import rumi.core" in result.stdout
    assert "rumi.base.wrong_way -> rumi.core" in result.stdout


def test_two_features_importing_each_other_break_the_layers(tmp_path: Path) -> None:
    root = _copy_tree(tmp_path)
    voice = root / "rumi" / "voice" / "service.py"
    voice.write_text(voice.read_text() + "\nfrom rumi.reminders import when  # noqa: E402,F401\n")
    result = _lint_imports(root)
    assert result.returncode != 0
    assert "rumi.voice is not allowed to import rumi.reminders" in result.stdout


def test_a_channel_reaching_past_the_core_breaks_its_contract(tmp_path: Path) -> None:
    root = _copy_tree(tmp_path)
    (root / "rumi" / "channels" / "wrong_way.py").write_text(
        '"""A channel that opens sessions itself."""\n\n'
        "from rumi.sessions import manager  # noqa: F401\n")
    result = _lint_imports(root)
    assert result.returncode != 0
    assert "Channels speak to the core and the ground only BROKEN" in result.stdout
    assert "rumi.channels is not allowed to import rumi.sessions" in result.stdout

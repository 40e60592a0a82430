"""Bad input at start-up: `rumi run` and `rumi doctor` as real processes end with one line
and exit code 2 — no traceback, no hang (issue 26)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

RUMI = [sys.executable, "-c", "import sys; from rumi.cli import main; sys.exit(main())"]
BASE = ('[telegram]\ntoken = "1:x"\nbase_url = "http://127.0.0.1:9/bot"\n'
        '[llm]\napi_key = "k"\n[sandbox]\nenabled = false\n')


def _rumi(command: str, config: Path, home: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HOME": str(home)}
    for key in [k for k in env if k.startswith("RUMI_") and k != "RUMI_SHARED_DIR"]:
        env.pop(key)
    return subprocess.run([*RUMI, command, "--config", str(config)], capture_output=True,
                          text=True, timeout=40, env=env)


def _one_line_exit_2(result: subprocess.CompletedProcess[str], *needles: str) -> None:
    assert result.returncode == 2, result.stderr[-2000:]
    assert "Traceback" not in result.stderr
    assert result.stderr.count("\n") == 1, result.stderr
    for needle in needles:
        assert needle in result.stderr


def _config(tmp_path: Path, head: str) -> Path:
    config = tmp_path / "config.toml"
    config.write_text(head + BASE, encoding="utf-8")
    return config


@pytest.mark.parametrize("command", ["run", "doctor"])
def test_unknown_timezone_is_one_line(tmp_path: Path, command: str) -> None:
    config = _config(tmp_path, f'data_dir = "{tmp_path / "data"}"\ntimezone = "Mars/Olympus"\n')
    _one_line_exit_2(_rumi(command, config, tmp_path), "`timezone`", "Mars/Olympus")


@pytest.mark.parametrize("command", ["run", "doctor"])
def test_database_that_is_a_directory_is_one_line(tmp_path: Path, command: str) -> None:
    data = tmp_path / "data"
    (data / "rumi.db").mkdir(parents=True)
    (data / "rumi.db" / "keep.txt").write_text("mine", encoding="utf-8")
    config = _config(tmp_path, f'data_dir = "{data}"\n')
    _one_line_exit_2(_rumi(command, config, tmp_path), "rumi.db is a directory")
    assert (data / "rumi.db" / "keep.txt").read_text(encoding="utf-8") == "mine"


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs Linux /proc")
def test_data_dir_where_nothing_can_be_created_is_one_line(tmp_path: Path) -> None:
    config = _config(tmp_path, 'data_dir = "/proc/self"\n')
    _one_line_exit_2(_rumi("run", config, tmp_path), "/proc/self", "cannot create files")


@pytest.mark.parametrize("command", ["run", "doctor"])
def test_config_path_that_is_a_fifo_does_not_hang(tmp_path: Path, command: str) -> None:
    fifo = tmp_path / "config.toml"
    os.mkfifo(fifo)
    _one_line_exit_2(_rumi(command, fifo, tmp_path), "not a regular file")

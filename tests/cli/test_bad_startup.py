"""Bad input at start-up: `rumi run` and `rumi doctor` as real processes end with one line
and exit code 2 — no traceback, no hang (issue 26); also a value of the wrong type, a
`rumi.db` locked by another process, read-only, or in a read-only directory (issue 32)."""

from __future__ import annotations

import contextlib
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import require
from tests.environment import without_rumi_settings

RUMI = [sys.executable, "-c", "import sys; from rumi.cli import main; sys.exit(main())"]
BASE = ('[telegram]\ntoken = "1:x"\nbase_url = "http://127.0.0.1:9/bot"\n'
        '[llm]\napi_key = "k"\n[sandbox]\nenabled = false\n')


def _rumi(command: str, config: Path, home: Path) -> subprocess.CompletedProcess[str]:
    env = {**without_rumi_settings(), "HOME": str(home)}
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


@pytest.mark.parametrize("command", ["run", "doctor"])
def test_a_string_where_a_boolean_belongs_is_one_line(tmp_path: Path, command: str) -> None:
    """0.7.0 read `read_only_root = "no"` as False: the sandbox's root became writable."""
    config = tmp_path / "config.toml"
    config.write_text(f'data_dir = "{tmp_path / "data"}"\n'
                      + BASE.replace("enabled = false", 'enabled = false\nread_only_root = "no"'),
                      encoding="utf-8")
    _one_line_exit_2(_rumi(command, config, tmp_path), "`sandbox.read_only_root`", '"no"')


def _database(data: Path) -> Path:
    data.mkdir(parents=True, exist_ok=True)
    db = data / "rumi.db"
    with contextlib.closing(sqlite3.connect(db)) as conn:
        conn.execute("CREATE TABLE schema_migrations (version INTEGER)")   # as Rumi's has
        conn.execute("CREATE TABLE mine (x TEXT)")
        conn.execute("INSERT INTO mine VALUES ('keep')")
        conn.commit()
    return db


def _kept(db: Path) -> bool:
    with contextlib.closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as conn:
        return conn.execute("SELECT x FROM mine").fetchall() == [("keep",)]


def test_a_database_locked_by_another_process_is_one_line(tmp_path: Path) -> None:
    db = _database(tmp_path / "data")
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sqlite3, sys\n"
         f"c = sqlite3.connect({str(db)!r}, isolation_level=None)\n"
         "c.execute('PRAGMA locking_mode=EXCLUSIVE'); c.execute('BEGIN EXCLUSIVE')\n"
         "c.execute('INSERT INTO mine VALUES (1)')\n"
         "print('locked', flush=True); sys.stdin.read()"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        config = _config(tmp_path, f'data_dir = "{tmp_path / "data"}"\n')
        _one_line_exit_2(_rumi("run", config, tmp_path), "rumi.db", "locked by another")
    finally:
        holder.kill()
        holder.wait()
    assert _kept(db)


def test_a_read_only_database_file_is_one_line(tmp_path: Path) -> None:
    """Rumi as a user who may not write rumi.db (root is made one by dropping the capability
    that lets it write any file)."""
    require(shutil.which("setpriv") is not None, "needs setpriv (util-linux)")
    db = _database(tmp_path / "data")
    db.chmod(0o444)
    config = _config(tmp_path, f'data_dir = "{tmp_path / "data"}"\n')
    drop = ["setpriv", "--inh-caps=-dac_override,-dac_read_search",
            "--bounding-set=-dac_override,-dac_read_search"]
    result = subprocess.run([*drop, *RUMI, "run", "--config", str(config)], capture_output=True,
                            text=True, timeout=40,
                            env={**without_rumi_settings(), "HOME": str(tmp_path)})
    _one_line_exit_2(result, "rumi.db", "read-only")
    assert _kept(db)


def test_a_read_only_data_dir_is_one_line(tmp_path: Path) -> None:
    data = tmp_path / "data"
    db = _database(data)
    mounted = subprocess.run(["mount", "--bind", str(data), str(data)], capture_output=True,
                             check=False).returncode == 0
    require(mounted, "needs root and mount (a read-only bind mount)")
    try:
        subprocess.run(["mount", "-o", "remount,bind,ro", str(data)], check=True)
        config = _config(tmp_path, f'data_dir = "{data}"\n')
        _one_line_exit_2(_rumi("run", config, tmp_path), str(data), "cannot create files")
    finally:
        subprocess.run(["umount", str(data)], check=True)
    assert _kept(db)

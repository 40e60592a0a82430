"""Files Rumi reads are bounded and safe: no FIFO/device hangs, no 56 MB reads into RAM."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from rumi.cli import main
from rumi.config import ConfigError
from rumi.config_load import load_settings
from rumi.fileio import UnreadableFile, read_bounded


def test_read_bounded_reads_at_most_the_limit_and_reports_the_size(tmp_path: Path) -> None:
    path = tmp_path / "big.md"
    path.write_bytes(b"x" * 100_000)
    data, size = read_bounded(path, 1_000)
    assert data == b"x" * 1_000 and size == 100_000


def test_a_fifo_without_writer_is_refused_not_waited_on(tmp_path: Path) -> None:
    fifo = tmp_path / "MEMORY.md"
    os.mkfifo(fifo)
    with pytest.raises(UnreadableFile, match="FIFO"):
        read_bounded(fifo, 1_000)  # a blocking open would never return


def test_a_device_is_refused(tmp_path: Path) -> None:
    with pytest.raises(UnreadableFile, match="dispositivo"):
        read_bounded(Path("/dev/zero"), 1_000)


def test_a_missing_file_is_file_not_found(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        read_bounded(tmp_path / "nope", 10)


@pytest.mark.parametrize("inside", [False, True])
def test_data_dir_that_is_a_file_is_one_config_error(tmp_path: Path, inside: bool,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("x")
    data_dir = blocker / "sub" if inside else blocker
    cfg = tmp_path / "config.toml"
    cfg.write_text(f'data_dir = "{data_dir}"\n[sandbox]\nenabled = false\n')
    with pytest.raises(ConfigError, match="is a file, not a directory" if not inside
                       else "which is a file"):
        load_settings(cfg, env={})
    assert main(["chat", "--config", str(cfg)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "data_dir" in err and "Traceback" not in err
    assert blocker.read_text() == "x"  # untouched

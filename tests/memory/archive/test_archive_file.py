"""Reading a local archive file: the one reader behind the terminal's `/import <path>` and
`rumi import FILE`, and the one-line errors `rumi import` prints for files it cannot take."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from rumi.cli import main
from rumi.fileio import ArchiveFileTooLarge, NotARegularFile, read_archive_file
from rumi.memory.archive.safety import ArchiveLimits


def test_reads_a_file_up_to_the_limit(tmp_path: Path) -> None:
    archive = tmp_path / "a.tar.gz"
    archive.write_bytes(b"x" * 10)
    assert read_archive_file(archive, 10) == b"x" * 10


def test_refuses_a_larger_file_with_its_size(tmp_path: Path) -> None:
    archive = tmp_path / "a.tar.gz"
    archive.write_bytes(b"x" * 11)
    with pytest.raises(ArchiveFileTooLarge) as caught:
        read_archive_file(archive, 10)
    assert caught.value.size == 11


def test_missing_path_and_non_files(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError) as missing:
        read_archive_file(tmp_path / "nope.tar.gz", 10)
    assert missing.value.strerror == "No such file or directory"
    with pytest.raises(NotARegularFile) as directory:
        read_archive_file(tmp_path, 10)
    assert directory.value.strerror == "Is a directory"
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(NotARegularFile):   # opening it to read would block forever
        read_archive_file(fifo, 10)


def _import(capsys: pytest.CaptureFixture[str], config: Path, file: Path) -> tuple[int, str]:
    code = main(["import", str(file), "--config", str(config), "--chat", "5"])
    return code, capsys.readouterr().err


def test_cli_import_unreadable_files_are_one_line(tmp_path: Path, data_dir: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "config.toml"
    config.write_text(f'data_dir = "{data_dir}"\n', encoding="utf-8")
    missing = tmp_path / "nope.tar.gz"
    assert _import(capsys, config, missing) == (
        1, f"rumi: cannot read {missing}: No such file or directory\n")
    assert _import(capsys, config, tmp_path) == (
        1, f"rumi: cannot read {tmp_path}: Is a directory\n")
    big = tmp_path / "big.tar.gz"
    size = ArchiveLimits().max_archive_bytes + 1
    with big.open("wb") as fh:
        fh.truncate(size)  # sparse: refused by its size, never read
    assert _import(capsys, config, big) == (
        1, f"rumi: refused: the file is too large ({size} bytes)\n")

"""Backups hold memory, not sandbox workspaces (up to workspace_size each, a whole disk image in
image mode), unless asked; and a very deep directory cannot make them fail."""

from __future__ import annotations

import os
import subprocess
import tarfile

from rumi.memory.archive.backup import make_backup
from tests.conftest import require


def _names(archive) -> set[str]:
    with tarfile.open(archive) as tar:
        return set(tar.getnames())


def _data_dir(tmp_path):
    data = tmp_path / "data"
    chat = data / "chats" / "42"
    (chat / "workspace").mkdir(parents=True)
    (chat / "workspace" / "big.bin").write_bytes(b"x" * 4096)
    (chat / "workspace.img").write_bytes(b"\0" * 4096)
    (chat / "workspace.migrating").mkdir()
    (chat / "workspace.migrating" / "old.txt").write_text("old")
    (chat / "MEMORY.md").write_text("# Memoria\n", encoding="utf-8")
    return data


def test_workspaces_are_left_out_unless_asked(tmp_path):
    data = _data_dir(tmp_path)
    names = _names(make_backup(data, tmp_path / "out", stamp="a").path)
    assert "chats/42/MEMORY.md" in names
    assert not [n for n in names if "workspace" in n], names
    names = _names(make_backup(data, tmp_path / "out", stamp="b", workspaces=True).path)
    assert {"chats/42/workspace/big.bin", "chats/42/workspace.img",
            "chats/42/workspace.migrating/old.txt"} <= names


def test_another_filesystem_mounted_inside_is_left_out_unless_workspaces_are_asked(tmp_path):
    """A mount point is told by its device (the parent's device at hand), not by a name."""
    data = _data_dir(tmp_path)
    mounted = data / "chats" / "42" / "files" / "usb"
    mounted.mkdir(parents=True)
    (mounted.parent / "nota.txt").write_text("mía")
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mounted)],
                          capture_output=True, check=False)
    require(done.returncode == 0, "needs root and mount to make a small tmpfs")
    try:
        (mounted / "ajeno.txt").write_text("de otro disco")
        names = _names(make_backup(data, tmp_path / "out", stamp="m").path)
        assert "chats/42/files/nota.txt" in names
        assert "chats/42/files/usb/ajeno.txt" not in names
        names = _names(make_backup(data, tmp_path / "out", stamp="w", workspaces=True).path)
        assert "chats/42/files/usb/ajeno.txt" in names
    finally:
        subprocess.run(["umount", "-l", str(mounted)], check=False)


def test_a_1500_deep_directory_does_not_stop_the_backup(tmp_path):
    data = _data_dir(tmp_path)
    deep = data / "chats" / "42" / "files"
    deep.mkdir()
    os.chdir(deep)  # relative mkdirs: the absolute path would pass PATH_MAX
    try:
        for _ in range(1500):
            os.mkdir("d")
            os.chdir("d")
        with open("fondo.txt", "w") as handle:
            handle.write("hasta aquí")
    finally:
        os.chdir(tmp_path)
    try:
        info = make_backup(data, tmp_path / "out", stamp="deep")
        names = _names(info.path)
        assert "chats/42/MEMORY.md" in names
        assert any(n.endswith("/d/fondo.txt") and n.count("/d") == 1500 for n in names)
    finally:
        _remove_deep(deep)


def _remove_deep(top) -> None:
    """Bottom-up without recursion (shutil.rmtree, pytest's tmp cleanup, recurse in 3.11)."""
    os.chdir(top)
    depth = 0
    while os.path.isdir("d"):
        os.chdir("d")
        depth += 1
    for _ in range(depth):
        for name in os.listdir("."):
            os.unlink(name)
        os.chdir("..")
        os.rmdir("d")
    os.chdir(top.parent)

"""Doctor's host checks against fake /proc and /sys trees: each passes and fails."""

from __future__ import annotations

from pathlib import Path

import pytest

from rumi.base.checks import Status
from rumi.doctor import checks, pi
from rumi.doctor.checks import check_tokenizer
from rumi.encoding import cache_key
from tests.conftest import TIKTOKEN_DIR, require

GIB = 1024**3

CGROUPS_V1_ON = """#subsys_name\thierarchy\tnum_cgroups\tenabled
cpuset\t3\t1\t1
memory\t4\t31\t1
"""
CGROUPS_OFF = """#subsys_name\thierarchy\tnum_cgroups\tenabled
cpuset\t0\t1\t1
memory\t0\t52\t0
"""


def _cgroup_tree(tmp_path: Path, table: str, controllers: str | None) -> tuple[Path, Path]:
    proc = tmp_path / "cgroups"
    proc.write_text(table)
    root = tmp_path / "sys-fs-cgroup"
    root.mkdir()
    if controllers is not None:
        (root / "cgroup.controllers").write_text(controllers + "\n")
    return proc, root


def test_memory_cgroup_v2_enabled(tmp_path: Path) -> None:
    proc, root = _cgroup_tree(tmp_path, CGROUPS_V1_ON, "cpuset cpu io memory pids")
    result = pi.check_memory_cgroup(proc, root)
    assert result.status is Status.OK and "v2" in result.detail


def test_memory_cgroup_v1_enabled(tmp_path: Path) -> None:
    proc, root = _cgroup_tree(tmp_path, CGROUPS_V1_ON, None)
    assert pi.check_memory_cgroup(proc, root).status is Status.OK


def test_memory_cgroup_disabled_like_raspberry_pi_os(tmp_path: Path) -> None:
    proc, root = _cgroup_tree(tmp_path, CGROUPS_OFF, "cpuset cpu io pids")
    result = pi.check_memory_cgroup(proc, root)
    assert result.status is Status.FAIL
    assert "cgroup_enable=memory cgroup_memory=1" in result.fix
    assert "/boot/firmware/cmdline.txt" in result.fix


def test_memory_cgroup_disabled_v1(tmp_path: Path) -> None:
    proc, root = _cgroup_tree(tmp_path, CGROUPS_OFF, None)
    assert pi.check_memory_cgroup(proc, root).status is Status.FAIL


def test_memory_cgroup_on_this_host_reads_real_files() -> None:
    result = pi.check_memory_cgroup(Path("/proc/cgroups"), Path("/sys/fs/cgroup"))
    assert result.name == "memory cgroup" and result.detail


@pytest.mark.parametrize(("machine", "bits", "status"), [
    ("aarch64", 64, Status.OK),
    ("x86_64", 64, Status.OK),
    ("aarch64", 32, Status.WARN),
    ("armv7l", 32, Status.WARN),
    ("riscv64", 64, Status.WARN),
])
def test_architecture(machine: str, bits: int, status: Status) -> None:
    result = pi.check_architecture(machine, bits)
    assert result.status is status
    if status is not Status.OK:
        assert result.fix


@pytest.mark.parametrize(("ram", "swap", "status"), [
    (8 * GIB, 0, Status.OK),
    (2 * GIB, 0, Status.WARN),
    (2 * GIB, 1 * GIB, Status.OK),
    (1 * GIB, 2 * GIB, Status.WARN),
    (512 * 1024**2, 0, Status.FAIL),
])
def test_ram_and_swap(ram: int, swap: int, status: Status) -> None:
    assert pi.check_memory(ram, swap).status is status


def test_free_disk_thresholds(tmp_path: Path) -> None:
    assert pi.check_disk(tmp_path, free_bytes=50 * GIB).status is Status.OK
    assert pi.check_disk(tmp_path, free_bytes=1 * GIB).status is Status.WARN
    low = pi.check_disk(tmp_path / "not" / "yet", free_bytes=100 * 1024**2)
    assert low.status is Status.FAIL and str(tmp_path) in low.detail


def test_free_disk_measures_real_filesystem(tmp_path: Path) -> None:
    result = pi.check_disk(tmp_path)
    assert "GiB free" in result.detail


def _fake_sys(tmp_path: Path, disk: str, part: str, rotational: str) -> Path:
    devices = tmp_path / "sys" / "devices" / "platform" / disk
    (devices / part).mkdir(parents=True)
    (devices / part / "partition").write_text("2\n")
    (devices / "queue").mkdir()
    (devices / "queue" / "rotational").write_text(rotational + "\n")
    dev_block = tmp_path / "sys" / "dev" / "block"
    dev_block.mkdir(parents=True)
    (dev_block / "179:2").symlink_to(devices / part)
    return dev_block / "179:2"


def test_storage_on_sd_card_warns(tmp_path: Path) -> None:
    node = _fake_sys(tmp_path, "mmcblk0", "mmcblk0p2", "0")
    device = pi.describe_block_node(node)
    assert device == pi.BlockDevice("mmcblk0p2", False)
    result = pi.check_storage(device, Path("/home/pi/.rumi"))
    assert result.status is Status.WARN and "SD card" in result.detail and "SSD" in result.fix


def test_storage_on_usb_ssd_passes(tmp_path: Path) -> None:
    device = pi.describe_block_node(_fake_sys(tmp_path, "sda", "sda1", "0"))
    result = pi.check_storage(device, Path("/mnt/ssd/rumi"))
    assert result.status is Status.OK and "sda1 (SSD/flash)" in result.detail


def test_storage_unknown_device_is_not_a_failure(tmp_path: Path) -> None:
    assert pi.describe_block_node(tmp_path / "missing") is None
    assert pi.check_storage(None, tmp_path).status is Status.OK


def test_storage_resolves_this_hosts_device(tmp_path: Path) -> None:
    device = pi.block_device_for(tmp_path / "data", Path("/sys/dev/block"))
    result = pi.check_storage(device, tmp_path)
    assert result.status in (Status.OK, Status.WARN)


def test_data_dir_private_and_writable(tmp_path: Path) -> None:
    path = tmp_path / "rumi"
    path.mkdir(mode=0o700)
    result = checks.check_data_dir(path)
    assert result.status is Status.OK and "700" in result.detail
    assert list(path.iterdir()) == []


def test_data_dir_not_yet_created(tmp_path: Path) -> None:
    result = checks.check_data_dir(tmp_path / "later")
    assert result.status is Status.OK and "will be created" in result.detail
    assert not (tmp_path / "later").exists()


def test_data_dir_world_readable_warns(tmp_path: Path) -> None:
    path = tmp_path / "rumi"
    path.mkdir()
    path.chmod(0o755)
    result = checks.check_data_dir(path)
    assert result.status is Status.WARN and f"chmod 700 {path}" in result.fix


def test_data_dir_that_is_a_file_fails(tmp_path: Path) -> None:
    path = tmp_path / "rumi"
    path.write_text("oops")
    assert checks.check_data_dir(path).status is Status.FAIL


def test_tokenizer_from_shared_cache() -> None:
    require((TIKTOKEN_DIR).is_dir(), f"shared tiktoken cache missing at {TIKTOKEN_DIR}")
    result = check_tokenizer({"TIKTOKEN_CACHE_DIR": str(TIKTOKEN_DIR)})
    assert result.status is Status.OK and "o200k_base loaded" in result.detail


def test_tokenizer_not_cached_warns(tmp_path: Path) -> None:
    result = check_tokenizer({"TIKTOKEN_CACHE_DIR": str(tmp_path)})
    assert result.status is Status.WARN and "rumi models download" in result.fix


def test_tokenizer_corrupt_cache_fails(tmp_path: Path) -> None:
    key = cache_key()
    (tmp_path / key).write_bytes(b"not a bpe file")
    result = check_tokenizer({"TIKTOKEN_CACHE_DIR": str(tmp_path)})
    assert result.status is Status.FAIL and key in result.fix

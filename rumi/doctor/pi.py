"""Host checks that matter on a Raspberry Pi: CPU architecture, RAM and swap, the memory
cgroup, free disk and whether data lives on an SD card.

Every check is a pure function of what it is given (strings, numbers, paths to /proc and
/sys files), so the failing cases are testable on any machine with a fake tree.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from rumi.base.checks import CheckResult, failed, passed, warned

MIB = 1024 * 1024
GIB = 1024 * MIB

CMDLINE_FIX = (
    "add `cgroup_enable=memory cgroup_memory=1` to the end of the single line in "
    "/boot/firmware/cmdline.txt (/boot/cmdline.txt before Bookworm), then reboot"
)

_ARCH_ALIASES = {"aarch64": "arm64", "arm64": "arm64", "x86_64": "amd64", "amd64": "amd64"}


def check_architecture(machine: str, pointer_bits: int) -> CheckResult:
    """arm64 and amd64 are what Rumi's wheels exist for; a 32-bit userland is the classic trap
    (a 64-bit Pi kernel reports aarch64 while Python and Docker are 32-bit armhf)."""
    name = "architecture"
    arch = _ARCH_ALIASES.get(machine.lower())
    if arch and pointer_bits == 64:
        return passed(name, f"{machine}, 64-bit userland")
    if arch and pointer_bits == 32:
        return warned(name, f"{machine} kernel but a 32-bit Python",
                      "install Raspberry Pi OS Lite 64-bit; onnxruntime (embeddings) has no "
                      "32-bit ARM wheels")
    if machine.lower().startswith("arm"):
        return warned(name, f"{machine}: 32-bit ARM is not supported",
                      "install Raspberry Pi OS Lite 64-bit (needs a Pi 3, 4 or 5)")
    return warned(name, f"{machine}: untested architecture",
                  "Rumi is tested on arm64 (Raspberry Pi 4) and amd64")


def check_memory(total_ram: int, total_swap: int) -> CheckResult:
    """Idle Rumi is ~100-150 MB; the embedding model adds ~250 MB and each sandbox may take
    `sandbox.memory`. Below 2 GB that only fits with swap."""
    name = "ram+swap"
    detail = f"RAM {total_ram / GIB:.1f} GiB, swap {total_swap / GIB:.1f} GiB"
    if total_ram < 768 * MIB:
        return failed(name, detail, "Rumi with embeddings needs at least 1 GB RAM; set "
                      "memory.embeddings_enabled = false and add 1 GB swap, or use a bigger Pi")
    if total_ram < 1800 * MIB:
        return warned(name, detail, "tight: add 1-2 GB swap (sudo dphys-swapfile: "
                      "CONF_SWAPSIZE=2048) and keep sandbox.memory ≤ 256m")
    if total_ram < 4 * GIB and total_swap < 512 * MIB:
        return warned(name, detail, "add swap so a busy sandbox cannot OOM the bot: set "
                      "CONF_SWAPSIZE=1024 in /etc/dphys-swapfile, then "
                      "`sudo systemctl restart dphys-swapfile`")
    return passed(name, detail)


def read_text(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


def check_memory_cgroup(proc_cgroups: Path, cgroup_root: Path) -> CheckResult:
    """Without the memory controller Docker silently ignores `--memory`: the sandbox limit
    (`sandbox.memory`) would be a promise nobody keeps. Raspberry Pi OS disables it by
    default on many kernels."""
    name = "memory cgroup"
    table = read_text(proc_cgroups)
    v1_enabled: bool | None = None
    if table is not None:
        for line in table.splitlines():
            fields = line.split()
            if len(fields) >= 4 and fields[0] == "memory":
                v1_enabled = fields[3] == "1"
        if v1_enabled is None:
            v1_enabled = False
    controllers = read_text(cgroup_root / "cgroup.controllers")
    if controllers is not None:
        if "memory" in controllers.split():
            return passed(name, "memory controller available (cgroup v2)")
        return failed(name, "cgroup v2 without the memory controller: sandbox memory limits "
                      "are ignored", CMDLINE_FIX)
    if v1_enabled:
        return passed(name, "memory controller enabled (cgroup v1)")
    if table is None:
        return warned(name, f"cannot read {proc_cgroups} or {cgroup_root}/cgroup.controllers",
                      "run on Linux with /proc and /sys/fs/cgroup mounted")
    return failed(name, "memory cgroup disabled: sandbox memory limits are ignored", CMDLINE_FIX)


def existing_ancestor(path: Path) -> Path:
    """The path itself or its nearest existing parent (data_dir may not exist yet)."""
    current = path
    while not current.exists() and current != current.parent:
        current = current.parent
    return current


def check_disk(path: Path, free_bytes: int | None = None) -> CheckResult:
    """SQLite, tapes and sandbox workspaces grow; a full SD card corrupts more than Rumi."""
    name = "free disk"
    where = existing_ancestor(path)
    if free_bytes is None:
        free_bytes = shutil.disk_usage(where).free
    detail = f"{free_bytes / GIB:.1f} GiB free at {where}"
    if free_bytes < 512 * MIB:
        return failed(name, detail, "free space (docker system prune, old logs) or move "
                      "data_dir to a bigger disk")
    if free_bytes < 2 * GIB:
        return warned(name, detail, "less than 2 GiB left: prune old images "
                      "(`docker image prune`) and check chats/*/workspace sizes")
    return passed(name, detail)


@dataclass(frozen=True)
class BlockDevice:
    name: str
    rotational: bool | None


def block_device_for(path: Path, sys_dev_block: Path) -> BlockDevice | None:
    """The disk behind `path`, via st_dev → /sys/dev/block/MAJ:MIN (partition → its disk)."""
    st_dev = os.stat(existing_ancestor(path)).st_dev
    node = sys_dev_block / f"{os.major(st_dev)}:{os.minor(st_dev)}"
    return describe_block_node(node)


def describe_block_node(node: Path) -> BlockDevice | None:
    try:
        resolved = node.resolve(strict=True)
    except OSError:
        return None
    disk = resolved.parent if (resolved / "partition").exists() else resolved
    rotational_text = read_text(disk / "queue" / "rotational")
    rotational = None if rotational_text is None else rotational_text.strip() == "1"
    return BlockDevice(resolved.name, rotational)


def check_storage(device: BlockDevice | None, path: Path) -> CheckResult:
    """SD cards wear out under SQLite's small synchronous writes; a USB SSD lasts years."""
    name = "storage"
    if device is None:
        return passed(name, f"{path}: not on a local block device (tmpfs, overlay or network)")
    if device.name.startswith("mmcblk"):
        return warned(name, f"{path} is on an SD card ({device.name}): heavy writes wear it out",
                      "move data_dir to a USB 3 SSD (see docs/raspberry-pi.md, "
                      "'USB SSD') and keep regular backups")
    kind = {True: "rotating disk", False: "SSD/flash", None: "disk"}[device.rotational]
    return passed(name, f"{path} is on {device.name} ({kind})")

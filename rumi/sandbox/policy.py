"""Hardening policy: the container options every chat sandbox is created with.

Kept apart from the manager so the whole security posture reads in one screen and so the
refusal of unsafe settings happens before any container exists. Every option here is visible
in `docker inspect` (see docs/sandbox.md for the field each one maps to).
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass
from typing import Any

from docker.types import Mount, Ulimit

from rumi.config import ConfigError, SandboxSettings

WORKSPACE = "/workspace"
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)i?b?\s*$", re.IGNORECASE)
_UNITS = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3, "t": 1024**4}
_FORBIDDEN_SOURCES = ("/", "/var/run/docker.sock", "/run/docker.sock")


class UnsafeSandboxConfig(ConfigError):
    """A sandbox setting that would let a chat escape its container; names the setting.

    A ConfigError, so `rumi run` stops with one line naming the key (exit code 2).
    """


def parse_size(value: str, key: str) -> int:
    """'512m' → bytes. Docker accepts the same suffixes; we parse to validate and to compare."""
    match = _SIZE.match(value)
    if not match:
        raise UnsafeSandboxConfig(f"sandbox.{key}: cannot read size {value!r} (use e.g. '512m')")
    number, unit = match.groups()
    size = int(float(number) * _UNITS[unit.lower()])
    if size <= 0:
        raise UnsafeSandboxConfig(f"sandbox.{key}: size must be positive")
    return size


def check_safe(settings: SandboxSettings) -> None:
    """Refuse settings that turn the sandbox into the host: raise with the setting's name."""
    network = settings.network_mode.strip().lower()
    if network == "host" or network.startswith("container:"):
        raise UnsafeSandboxConfig(
            f"sandbox.network_mode = {settings.network_mode!r} shares another network namespace; "
            "use 'none' (default) or a dedicated bridge network"
        )
    if settings.privileged:
        raise UnsafeSandboxConfig("sandbox.privileged = true would give the sandbox the host's "
                                  "devices and capabilities; it must be false")
    user = settings.user.split(":", 1)[0].strip()
    if user in ("", "0", "root"):
        raise UnsafeSandboxConfig("sandbox.user must be a non-root user (default '1000:1000')")
    for spec in settings.extra_volumes:
        source, target = _volume_parts(spec)
        if source in _FORBIDDEN_SOURCES or source.endswith("docker.sock"):
            raise UnsafeSandboxConfig(
                f"sandbox.extra_volumes: {spec!r} mounts {source!r} into the sandbox; the host "
                "root and the Docker socket are never allowed"
            )
        if target == WORKSPACE:
            raise UnsafeSandboxConfig(f"sandbox.extra_volumes: {spec!r} would replace /workspace")
    parse_size(settings.memory, "memory")
    parse_size(settings.tmpfs_size, "tmpfs_size")
    parse_size(settings.workspace_size, "workspace_size")


def _volume_parts(spec: str) -> tuple[str, str]:
    parts = spec.split(":")
    if len(parts) < 2 or not parts[0] or not parts[1]:
        raise UnsafeSandboxConfig(
            f"sandbox.extra_volumes: {spec!r} is not 'source:target[:ro|rw]'"
        )
    source = parts[0] if not parts[0].startswith("/") else posixpath.normpath(parts[0])
    if source.startswith("//"):
        source = "/" + source.lstrip("/")
    return source, posixpath.normpath(parts[1])


@dataclass(frozen=True)
class Identity:
    """Names and labels of one chat's resources on the shared Docker daemon."""

    chat_id: str
    instance: str
    version: str

    @property
    def container_name(self) -> str:
        return f"rumi-sbx-{self.chat_id}"

    @property
    def volume_name(self) -> str:
        return f"rumi-ws-{self.chat_id}"

    @property
    def labels(self) -> dict[str, str]:
        return {
            "rumi.managed": "1",
            "rumi.chat": self.chat_id,
            "rumi.version": self.version,
            "rumi.instance": self.instance,
        }


def container_options(
    settings: SandboxSettings, ident: Identity, workspace_source: str
) -> dict[str, Any]:
    """Keyword arguments for `client.containers.create` (hardened; call check_safe first).

    `workspace_source` is the named volume (workspace_mode="volume") or an absolute host path
    (workspace_mode="bind").
    """
    memory = parse_size(settings.memory, "memory")
    fsize = settings.fsize_limit_mb * 1024 * 1024
    mount_type = "volume" if settings.workspace_mode == "volume" else "bind"
    mounts = [Mount(WORKSPACE, workspace_source, type=mount_type, read_only=False)]
    for spec in settings.extra_volumes:
        source, target = _volume_parts(spec)
        mode = spec.split(":")[2] if spec.count(":") >= 2 else "ro"
        is_path = source.startswith("/")
        mounts.append(Mount(target, source, type="bind" if is_path else "volume",
                            read_only=mode != "rw"))
    return {
        "image": settings.image,
        "command": ["sleep", "infinity"],
        "name": ident.container_name,
        "hostname": "rumi-sandbox",
        "labels": ident.labels,
        "detach": True,
        "user": settings.user,
        "working_dir": WORKSPACE,
        "environment": {"HOME": WORKSPACE, "LANG": "C.UTF-8"},
        "network_mode": settings.network_mode,
        "read_only": settings.read_only_root,
        "privileged": False,
        "cap_drop": ["ALL"],
        "security_opt": ["no-new-privileges"],
        "pids_limit": settings.pids_limit,
        "mem_limit": memory,
        "memswap_limit": memory,
        "nano_cpus": int(settings.cpus * 1_000_000_000),
        "tmpfs": {"/tmp": f"rw,nosuid,nodev,size={parse_size(settings.tmpfs_size, 'tmpfs_size')}"},
        "mounts": mounts,
        "init": True,
        "ulimits": [
            Ulimit(name="nofile", soft=settings.nofile_limit, hard=settings.nofile_limit),
            Ulimit(name="fsize", soft=fsize, hard=fsize),
        ],
    }

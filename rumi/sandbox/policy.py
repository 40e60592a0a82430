"""Hardening policy: the container options every chat sandbox is created with.

Kept apart from the manager so the whole security posture reads in one screen and so the
refusal of unsafe settings happens before any container exists. Every option here is visible
in `docker inspect` (see docs/sandbox.md for the field each one maps to).
"""

from __future__ import annotations

import os
import posixpath
import re
import stat
from dataclasses import dataclass
from typing import Any

from docker.types import Mount, Ulimit

from rumi.config import ConfigError, SandboxSettings

WORKSPACE = "/workspace"
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)i?b?\s*$", re.IGNORECASE)
_UNITS = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3, "t": 1024**4}
# Host paths that hand over the host when they appear in a sandbox: the engine's and
# containerd's API sockets and the engine's state. A bind of any of them, of any directory that
# contains one (`/var/run`, `/run`, `/var`), or of anything inside one is refused: a `:ro` bind
# does not stop a process from connecting to a unix socket.
_PROTECTED_PATHS = (
    "/var/run/docker.sock",
    "/run/docker.sock",
    "/run/containerd/containerd.sock",
    "/var/run/containerd/containerd.sock",
    "/var/lib/docker",
    "/var/lib/containerd",
)


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
    # runc reads any all-digit uid numerically: "00" and "0000" are root as much as "0" is
    if user in ("", "root") or (user.isdigit() and int(user) == 0):
        raise UnsafeSandboxConfig("sandbox.user must be a non-root user (default '1000:1000')")
    protected = protected_paths()
    for spec in settings.extra_volumes:
        source, target = _volume_parts(spec)
        if source.startswith("/") and (reason := _dangerous_source(source, protected)):
            raise UnsafeSandboxConfig(
                f"sandbox.extra_volumes: {spec!r} mounts {source!r} into the sandbox, which "
                f"{reason}; the host root, the Docker/containerd sockets, any directory that "
                "contains them and the engine's state are never allowed"
            )
        if target == WORKSPACE:
            raise UnsafeSandboxConfig(f"sandbox.extra_volumes: {spec!r} would replace /workspace")
    parse_size(settings.memory, "memory")
    parse_size(settings.tmpfs_size, "tmpfs_size")
    parse_size(settings.workspace_size, "workspace_size")


def protected_paths(environ: dict[str, str] | None = None) -> tuple[str, ...]:
    """The socket and state paths no bind may reach, including the engine `DOCKER_HOST` names.

    Each is listed both as written and with symlinks resolved (`/var/run` is usually a link to
    `/run`), so a bind is compared with where the socket really is.
    """
    env = os.environ if environ is None else environ
    paths = list(_PROTECTED_PATHS)
    host = env.get("DOCKER_HOST", "")
    if host.startswith("unix://"):
        paths.append(posixpath.normpath(host.removeprefix("unix://")))
    resolved = [os.path.realpath(path) for path in paths]
    return tuple(dict.fromkeys(paths + resolved))


def _dangerous_source(source: str, protected: tuple[str, ...]) -> str | None:
    """Why a host bind source would expose the host, or None. Symlinks are followed.

    A source is refused when it is `/`, is or contains a protected path, lies inside one, or is
    itself a unix socket (any socket in the sandbox is a door out of it).
    """
    candidates = dict.fromkeys((source, os.path.realpath(source)))
    for path in candidates:
        if path == "/":
            return "is the host's root directory"
        if posixpath.basename(path) in ("docker.sock", "containerd.sock"):
            return "is an engine socket"
        for sock in protected:
            common = posixpath.commonpath([path, sock])
            if common == path:
                return f"is or contains {sock}"
            if common == sock:
                return f"is inside {sock}"
        try:
            if stat.S_ISSOCK(os.stat(path).st_mode):
                return "is a unix socket"
        except OSError:
            pass  # not there (yet): only its path can be judged
    return None


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
    """Names and labels of one chat's resources on the shared Docker daemon.

    Names carry the instance (a hash of data_dir) because chat ids repeat across installs (the
    terminal chat is always `terminal`): two Rumis on one engine must never meet by name.
    """

    chat_id: str
    instance: str
    version: str

    @property
    def container_name(self) -> str:
        return f"rumi-sbx-{self.instance}-{self.chat_id}"

    @property
    def volume_name(self) -> str:
        return f"rumi-ws-{self.instance}-{self.chat_id}"

    @property
    def legacy_volume_name(self) -> str:
        """The name workspaces had before names carried the instance (Rumi ≤ 0.4): still
        mounted when it is ours, so upgrading loses no files."""
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
        "tmpfs": {"/tmp": f"rw,nosuid,nodev,size={parse_size(settings.tmpfs_size, 'tmpfs_size')}"
                          f",nr_inodes={settings.tmpfs_inodes}"},
        "mounts": mounts,
        "init": True,
        "ulimits": [
            Ulimit(name="nofile", soft=settings.nofile_limit, hard=settings.nofile_limit),
            Ulimit(name="fsize", soft=fsize, hard=fsize),
        ],
    }

"""Why the Docker engine cannot be reached, as one of three cases with three different fixes.

"Install Docker" is the wrong advice for a stopped daemon or a missing group membership, and
following it on a working install does harm; so the case is told apart from what the machine
shows (the `docker` binary, the socket file) and the error the SDK raised.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

DEFAULT_SOCKET = "/var/run/docker.sock"

NOT_INSTALLED = "not installed"
STOPPED = "daemon stopped"
NO_PERMISSION = "no permission"
UNREACHABLE = "unreachable"

FIXES = {
    NOT_INSTALLED: "install Docker: `curl -fsSL https://get.docker.com | sh`, then "
                   "`sudo usermod -aG docker $USER` and log in again",
    STOPPED: "Docker is installed but its daemon is not running: "
             "`sudo systemctl enable --now docker` (or start Docker Desktop)",
    NO_PERMISSION: "you may not use the Docker socket: `sudo usermod -aG docker $USER`, then "
                   "log out and in again (or `newgrp docker`); in Docker Compose mount "
                   "/var/run/docker.sock",
    UNREACHABLE: "check DOCKER_HOST and that the engine it names is running",
}


@dataclass(frozen=True)
class DockerProblem:
    kind: str
    detail: str

    @property
    def fix(self) -> str:
        return FIXES[self.kind]


def socket_path(env: Mapping[str, str]) -> Path | None:
    """The unix socket the SDK will use, or None when DOCKER_HOST names a TCP/SSH engine."""
    host = env.get("DOCKER_HOST", "")
    if not host:
        return Path(DEFAULT_SOCKET)
    if host.startswith("unix://"):
        return Path(host[len("unix://"):])
    return None


def _chain_text(exc: BaseException) -> str:
    parts = []
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        parts.append(f"{type(current).__name__}: {current}")
        current = current.__cause__ or current.__context__
    return " | ".join(parts)


def diagnose(exc: BaseException, env: Mapping[str, str] | None = None,
             which: str | None = None) -> DockerProblem:
    """Which of the cases an engine error is. `which` is the path of the `docker` client
    (default: looked up on PATH); the socket is looked at where DOCKER_HOST points."""
    env = os.environ if env is None else env
    client = shutil.which("docker") if which is None else (which or None)
    text = _chain_text(exc)
    short = text.splitlines()[0][:200] if text else type(exc).__name__
    sock = socket_path(env)
    if "Permission denied" in text or "PermissionError" in text:
        return DockerProblem(NO_PERMISSION, f"permission denied on {sock or 'the socket'}")
    if sock is not None and not sock.exists():
        if client is None:
            return DockerProblem(NOT_INSTALLED, "no `docker` command and no engine socket")
        return DockerProblem(STOPPED, f"no engine socket at {sock}")
    if sock is not None and ("Connection refused" in text or "ConnectionRefused" in text
                             or "FileNotFoundError" in text):
        return DockerProblem(STOPPED, f"nothing answers on {sock}")
    if sock is None:
        return DockerProblem(UNREACHABLE, f"{env.get('DOCKER_HOST')}: {short}")
    return DockerProblem(UNREACHABLE, short)

"""Where the sandbox image recipes live and the commands that build them.

The recipes are files in the source tree (`docker/`), not Python strings, so operators can read
and audit exactly what goes into the image; `rumi sandbox build` only assembles the command.
"""

from __future__ import annotations

from pathlib import Path

import rumi

DOCKER_DIR = Path(rumi.__file__).resolve().parent.parent / "docker"
DOCKERFILE = DOCKER_DIR / "sandbox.Dockerfile"
OFFLINE_SCRIPT = DOCKER_DIR / "build-offline-sandbox.sh"


class RecipeMissing(FileNotFoundError):
    """The docker/ directory is not next to the package (a wheel install, not a checkout)."""


def build_command(
    tag: str, *, offline: bool = False, minimal: bool = False, base: str | None = None
) -> list[str]:
    """argv for `docker build` of the Dockerfile, or for the offline debootstrap/busybox script."""
    if offline or minimal:
        if not OFFLINE_SCRIPT.exists():
            raise RecipeMissing(f"{OFFLINE_SCRIPT} not found (run from a Rumi source checkout)")
        argv = ["bash", str(OFFLINE_SCRIPT), "--tag", tag]
        return [*argv, "--minimal"] if minimal else argv
    if not DOCKERFILE.exists():
        raise RecipeMissing(f"{DOCKERFILE} not found (run from a Rumi source checkout)")
    argv = ["docker", "build", "-f", str(DOCKERFILE), "-t", tag]
    if base:
        argv += ["--build-arg", f"BASE={base}"]
    return [*argv, str(DOCKER_DIR)]

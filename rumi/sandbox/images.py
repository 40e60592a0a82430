"""Where the sandbox image recipes live and the commands that build them.

The recipes are files, not Python strings, so operators can read and audit exactly what goes
into the image; `rumi sandbox build` only assembles the command. They ship inside the package
(`rumi/sandbox/recipes/`, package data) because `rumi sandbox build` must work from a plain
`pip install` (the Raspberry Pi guide) and in the bot image, where no source checkout exists.
`docker/sandbox.Dockerfile` and `docker/build-offline-sandbox.sh` are byte-identical copies for
readers of the repository and for CI; tests/sandbox/test_cli.py fails if they drift apart.
"""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Iterator
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path

RECIPES: Traversable = resources.files("rumi.sandbox") / "recipes"
DOCKERFILE_NAME = "sandbox.Dockerfile"
OFFLINE_SCRIPT_NAME = "build-offline-sandbox.sh"
RECIPE_NAMES = (DOCKERFILE_NAME, OFFLINE_SCRIPT_NAME)


class RecipeMissing(FileNotFoundError):
    """A recipe is not in the installed package (a broken or partial install)."""


def recipe(name: str) -> Traversable:
    """One packaged recipe file, or RecipeMissing naming what to reinstall."""
    path = RECIPES / name
    if not path.is_file():
        raise RecipeMissing(f"{name} is missing from the installed rumi package "
                            "(reinstall rumi: `pip install --force-reinstall rumi`)")
    return path


@contextlib.contextmanager
def build_command(
    tag: str, *, offline: bool = False, minimal: bool = False, base: str | None = None
) -> Iterator[list[str]]:
    """argv for `docker build` of the Dockerfile, or for the offline debootstrap/busybox script.

    A context manager: the recipe is copied into a private temporary directory that lives until
    the command has run. That directory is also the build context, which therefore holds
    nothing but the Dockerfile (it has no COPY), wherever and however rumi is installed.
    """
    name = OFFLINE_SCRIPT_NAME if offline or minimal else DOCKERFILE_NAME
    source = recipe(name)
    with tempfile.TemporaryDirectory(prefix="rumi-sandbox-build-") as tmp:
        workdir = Path(tmp)
        (workdir / name).write_bytes(source.read_bytes())
        if name == OFFLINE_SCRIPT_NAME:
            argv = ["bash", str(workdir / name), "--tag", tag]
            yield [*argv, "--minimal"] if minimal else argv
            return
        argv = ["docker", "build", "-f", str(workdir / name), "-t", tag]
        if base:
            argv += ["--build-arg", f"BASE={base}"]
        yield [*argv, str(workdir)]

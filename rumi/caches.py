"""Where downloaded models live: under the data dir, so a reboot does not wipe them.

fastembed and tiktoken default to the system temp dir (`/tmp/fastembed_cache`,
`/tmp/data-gym-cache`), which many systems empty at boot: the 200 MB embedding model would be
fetched again after every restart, and offline it could not be. Rumi's default is
`data_dir/cache/fastembed` and `data_dir/cache/tiktoken`; `FASTEMBED_CACHE_PATH` and
`TIKTOKEN_CACHE_DIR` (or tiktoken's older `DATA_GYM_CACHE_DIR`) still win when set.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, MutableMapping
from dataclasses import dataclass
from pathlib import Path

FASTEMBED_ENV = "FASTEMBED_CACHE_PATH"
TIKTOKEN_ENV = "TIKTOKEN_CACHE_DIR"
TIKTOKEN_OLD_ENV = "DATA_GYM_CACHE_DIR"


@dataclass(frozen=True)
class CacheDirs:
    fastembed: Path
    tiktoken: Path


def cache_dirs(data_dir: Path, env: MutableMapping[str, str] | None = None) -> CacheDirs:
    """The two caches for `data_dir`; a directory named in the environment wins."""
    env = os.environ if env is None else env
    root = Path(data_dir).expanduser() / "cache"
    fastembed = env.get(FASTEMBED_ENV) or str(root / "fastembed")
    tiktoken = env.get(TIKTOKEN_ENV) or env.get(TIKTOKEN_OLD_ENV) or str(root / "tiktoken")
    return CacheDirs(Path(fastembed), Path(tiktoken))


@contextlib.contextmanager
def data_dir_caches(data_dir: Path,
                    env: MutableMapping[str, str] | None = None) -> Iterator[CacheDirs]:
    """While a command runs, point the libraries (which read only their environment
    variables) at `data_dir`'s caches unless the environment already names others; the
    environment is put back afterwards."""
    env = os.environ if env is None else env
    dirs = cache_dirs(data_dir, env)
    added = []
    if FASTEMBED_ENV not in env:
        env[FASTEMBED_ENV] = str(dirs.fastembed)
        added.append(FASTEMBED_ENV)
    if TIKTOKEN_ENV not in env and TIKTOKEN_OLD_ENV not in env:
        env[TIKTOKEN_ENV] = str(dirs.tiktoken)
        added.append(TIKTOKEN_ENV)
    try:
        yield dirs
    finally:
        for name in added:
            env.pop(name, None)

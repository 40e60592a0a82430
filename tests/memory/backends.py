"""Which store a memory test runs on.

The `store` and `kw_store` fixtures (tests/memory/conftest.py) run every test on SQLite and
on PostgreSQL. A test of SQLite itself (its files, FTS5 tables, PRAGMAs, usearch, the private
steps of its editing) narrows them to SQLite with `@sqlite_only` (or `@sqlite_only_kw`).
"""

from __future__ import annotations

import weakref
from pathlib import Path
from typing import Any

import pytest

SQLITE = pytest.param("sqlite", id="sqlite")
POSTGRES = pytest.param("postgres", id="postgres")
BACKENDS = [SQLITE, POSTGRES]

sqlite_only = pytest.mark.parametrize("store", [SQLITE], indirect=True)
sqlite_only_kw = pytest.mark.parametrize("kw_store", [SQLITE], indirect=True)
postgres_only = pytest.mark.parametrize("store", [POSTGRES], indirect=True)
postgres_only_kw = pytest.mark.parametrize("kw_store", [POSTGRES], indirect=True)


# the data dir each PostgreSQL test store was opened for (it has no file there to tell)
DATA_DIRS: weakref.WeakKeyDictionary[Any, Path] = weakref.WeakKeyDictionary()


def data_dir_of(store: Any) -> Path:
    """The data dir a test store belongs to (rumi.db's folder; for PostgreSQL, the fixture's)."""
    return DATA_DIRS[store] if store in DATA_DIRS else Path(store.db_path).parent

"""`rumi doctor`'s SQLite check, memory's own (`rumi/memory/store/sqlite_probe.py`)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from rumi.base.checks import Status
from rumi.memory.store.sqlite_probe import check_sqlite


def test_sqlite_has_what_the_store_needs(tmp_path: Path) -> None:
    result = check_sqlite(scratch_dir=tmp_path)
    assert result.status is Status.OK
    assert sqlite3.sqlite_version in result.detail and "FTS5" in result.detail


def test_sqlite_too_old_fails() -> None:
    result = check_sqlite(min_version=(99, 0, 0))
    assert result.status is Status.FAIL and "older than 99.0.0" in result.detail

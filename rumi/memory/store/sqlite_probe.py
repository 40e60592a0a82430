"""Whether this Python's SQLite can hold Rumi's memory: FTS5 (keyword search), JSON functions
and WAL mode, probed on a scratch database. A `rumi doctor` check (memory contributes it)."""

from __future__ import annotations

import sqlite3
import tempfile
from pathlib import Path
from types import ModuleType

from rumi.base.checks import CheckResult, failed, passed

SQLITE_MIN = (3, 35, 0)  # RETURNING, UPSERT, window functions, json1


def check_sqlite(module: ModuleType = sqlite3, min_version: tuple[int, int, int] = SQLITE_MIN,
                 scratch_dir: Path | None = None) -> CheckResult:
    """The memory store needs FTS5 (keyword search), JSON functions and WAL mode."""
    name = "sqlite"
    version = module.sqlite_version
    found = tuple(int(p) for p in version.split("."))
    if found < min_version:
        wanted = ".".join(map(str, min_version))
        return failed(name, f"SQLite {version} is older than {wanted}",
                      "use Raspberry Pi OS Bookworm (SQLite 3.40) or the python:3.11 image")
    missing: list[str] = []
    with tempfile.TemporaryDirectory(dir=scratch_dir) as tmp:
        conn = module.connect(str(Path(tmp) / "probe.db"))
        try:
            for feature, sql in (("FTS5", "CREATE VIRTUAL TABLE t USING fts5(x)"),
                                 ("JSON", "SELECT json_extract('{\"a\": 1}', '$.a')")):
                try:
                    conn.execute(sql)
                except module.Error:
                    missing.append(feature)
            mode = conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]
            if str(mode).lower() != "wal":
                missing.append("WAL")
        finally:
            conn.close()
    if missing:
        return failed(name, f"SQLite {version} lacks {', '.join(missing)}",
                      "install a Python whose sqlite3 has FTS5 and JSON (Debian's does)")
    return passed(name, f"SQLite {version} with FTS5, JSON, WAL")

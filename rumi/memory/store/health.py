"""`rumi.db` before it is opened: is it whole, and what to do with a damaged one.

Read-only checks with the standard `sqlite3` module (blocking: callers use a thread), so
start-up and `rumi doctor` can look at a database the store has not opened (or cannot).
"""

from __future__ import annotations

import logging
import sqlite3
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from rumi.config import ConfigError
from rumi.fileio import unused_path

log = logging.getLogger(__name__)

SQLITE_HEADER = b"SQLite format 3\x00"
CORRUPT_SUFFIX = ".corrupt-"
# what MEMORY.md lists: the kinds it shows, without the self-corrections it keeps apart
_LISTED_SQL = (
    "SELECT count(*) FROM memories WHERE chat_id = ? AND status = 'active' "
    "AND type IN ('profile','fact','entity','preference','decision') "
    "AND coalesce(json_extract(metadata, '$.category'), '') != 'self_correction'"
)


@dataclass
class DbHealth:
    """What was found in `rumi.db` before opening it."""

    state: str                     # "ok" | "missing" | "empty" | "corrupt"
    detail: str = ""
    schema_version: int | None = None
    moved_to: Path | None = None   # where a corrupt database was moved


def inspect_database(db_path: Path) -> DbHealth:
    """Header, quick_check and schema version, read-only (blocking: call in a thread)."""
    try:
        size = db_path.stat().st_size
    except FileNotFoundError:
        return DbHealth("missing", "no database file")
    if size == 0:
        return DbHealth("empty", "the database file is empty (0 bytes)")
    with db_path.open("rb") as handle:
        header = handle.read(len(SQLITE_HEADER))
    if header != SQLITE_HEADER:
        return DbHealth("corrupt", "not an SQLite database (bad header)")
    try:
        conn = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True, timeout=5)
    except sqlite3.Error as exc:
        return DbHealth("corrupt", f"cannot open: {exc}")
    try:
        result = [row[0] for row in conn.execute("PRAGMA quick_check").fetchall()]
        version = int(conn.execute("PRAGMA user_version").fetchone()[0])
        conn.execute("SELECT count(*) FROM schema_migrations").fetchone()
    except sqlite3.OperationalError as exc:
        if "locked" in str(exc).lower() or "busy" in str(exc).lower():
            # another process holds it: whole, and never to be moved aside
            raise ConfigError(f"{db_path} is locked by another process (another Rumi on this "
                              "data_dir, or a program holding it open); stop that one and "
                              "start again") from exc
        return DbHealth("corrupt", f"unreadable: {exc}")
    except sqlite3.DatabaseError as exc:
        return DbHealth("corrupt", f"unreadable: {exc}")
    finally:
        conn.close()
    if result != ["ok"]:
        return DbHealth("corrupt", "quick_check: " + "; ".join(map(str, result[:3])), version)
    return DbHealth("ok", "quick_check ok", version)


def move_aside(db_path: Path) -> Path:
    """Rename a damaged database (and its -wal/-shm) out of the way; nothing is deleted."""
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
    target = unused_path(db_path.with_name(f"{db_path.name}{CORRUPT_SUFFIX}{stamp}"))
    db_path.rename(target)
    for extra in ("-wal", "-shm"):
        side = db_path.with_name(db_path.name + extra)
        if side.exists():
            side.rename(target.with_name(target.name + extra))
    return target


def prepare_database(db_path: Path) -> DbHealth:
    """Before opening: a corrupt database is moved aside so a new one can be made (blocking)."""
    health = inspect_database(db_path)
    if health.state in ("corrupt", "empty"):
        health.moved_to = move_aside(db_path)
        log.error("rumi.db is %s (%s); moved to %s, rebuilding from the MEMORY.md files",
                  health.state, health.detail, health.moved_to.name)
    elif health.state == "missing" and any(True for _ in db_path.parent.glob("chats/*")):
        log.error("rumi.db is missing; rebuilding it from the MEMORY.md files")
    return health



def listed_counts(db_path: Path, chat_ids: Sequence[str]) -> dict[str, int]:
    """Active memories of each chat of the kinds MEMORY.md lists, read-only (blocking)."""
    conn = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True, timeout=5)
    try:
        return {chat: conn.execute(_LISTED_SQL, (chat,)).fetchone()[0] for chat in chat_ids}
    finally:
        conn.close()

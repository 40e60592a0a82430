"""Start-up checks of what the config names on disk: the config file itself, the time zone,
`data_dir` and the `rumi.db` inside it.

Each returns a one-line reason (or None) so `rumi.config` can raise it as a config error:
a FIFO for a config file would block the read forever, an unknown time zone or an unusable
`data_dir` would otherwise surface later as a traceback from whichever component met it first.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import stat
import tempfile
import zoneinfo
from pathlib import Path

MAX_CONFIG_BYTES = 1024 * 1024


def config_file_problem(path: Path) -> str | None:
    """Why `path` cannot be read as a config file, checked without opening it (a FIFO or a
    device would block or never end)."""
    try:
        info = path.stat()
    except FileNotFoundError:
        return "file not found"
    except OSError as exc:
        return f"cannot read ({exc.strerror or exc})"
    if stat.S_ISDIR(info.st_mode):
        return "is a directory, not a config file"
    if not stat.S_ISREG(info.st_mode):
        return "is not a regular file (a pipe, socket or device); point --config at a file"
    if info.st_size > MAX_CONFIG_BYTES:
        return f"is {info.st_size} bytes; a config file is at most {MAX_CONFIG_BYTES} bytes"
    return None


def timezone_problem(name: str) -> str | None:
    """Why `name` is not an IANA time zone this machine knows (e.g. "Europe/Madrid")."""
    try:
        zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError):
        return f'unknown time zone {name!r}; use an IANA name such as "Europe/Madrid" or "UTC"'
    return None


def data_dir_problem(data_dir: Path) -> str | None:
    """data_dir must be (or become) a directory Rumi can create files in, and `rumi.db` there,
    when present, a file."""
    shown = f"data_dir = {str(data_dir)!r}"
    for candidate in (data_dir, *data_dir.parents):
        try:
            is_dir = candidate.is_dir()
            exists = is_dir or candidate.exists()
        except OSError as exc:
            return f"{shown}: cannot use it ({exc.strerror or exc})"
        if exists and not is_dir:
            what = "is" if candidate == data_dir else f"is inside {str(candidate)!r}, which is"
            return (f"{shown} {what} a file, not a directory; "
                    "point data_dir at a directory (it is created if missing)")
        if exists:
            break
    if not data_dir.is_dir():
        return None
    return _writable_problem(data_dir, shown) or _database_problem(data_dir / "rumi.db")


def _writable_problem(data_dir: Path, shown: str) -> str | None:
    """A directory that exists but refuses new entries (`/proc/self`, a read-only mount)."""
    try:
        probe = tempfile.mkdtemp(prefix=".rumi-probe-", dir=data_dir)
    except OSError as exc:
        return (f"{shown}: Rumi cannot create files there ({exc.strerror or exc}); "
                "point data_dir at a directory you own")
    os.rmdir(probe)
    return None


def _database_problem(db_path: Path) -> str | None:
    try:
        info = db_path.stat()
    except FileNotFoundError:
        return None
    except OSError as exc:
        return f"{db_path}: cannot read ({exc.strerror or exc})"
    if not stat.S_ISREG(info.st_mode):
        kind = "a directory" if stat.S_ISDIR(info.st_mode) else "not a regular file"
        return (f"{db_path} is {kind}, not a database; move it elsewhere and start again "
                "(Rumi rebuilds the database from the MEMORY.md files)")
    return _writable_database_problem(db_path, info.st_mode)


LOCK_WAIT_SECONDS = 3.0   # a running Rumi's own writes last milliseconds; a held lock does not


def _writable_database_problem(db_path: Path, mode: int) -> str | None:
    """Whether this process may write `rumi.db` now: not read-only for this user, not held
    by another process's exclusive lock. Only these two answers stop the start: a damaged
    file is the store's business (it is moved aside and rebuilt), never a locked one."""
    if not os.access(db_path, os.W_OK):
        return (f"{db_path} is read-only for this user (mode {stat.S_IMODE(mode):o}); make it "
                "writable by the user running Rumi (chmod u+w, or chown)")
    try:
        conn = sqlite3.connect(f"file:{db_path}?mode=rw", uri=True, timeout=LOCK_WAIT_SECONDS,
                               isolation_level=None)
    except sqlite3.Error:
        return None
    with contextlib.closing(conn):
        try:
            conn.execute("BEGIN IMMEDIATE")   # the write lock, taken and given back at once
            conn.execute("ROLLBACK")
        except sqlite3.OperationalError as exc:
            text = str(exc).lower()
            if "locked" in text or "busy" in text:
                return (f"{db_path} is locked by another process (another Rumi on this "
                        "data_dir, or a program holding it open); stop that one and start "
                        "again")
            if "readonly" in text or "read-only" in text:
                return (f"{db_path} is read-only ({exc}); make it and its directory writable "
                        "by the user running Rumi")
        except sqlite3.DatabaseError:
            return None
    return None

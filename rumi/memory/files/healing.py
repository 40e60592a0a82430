"""A database that heals: `rumi.db` is an index of the people's MEMORY.md files, not their
only copy.

On a Pi the SD card can lose or damage `rumi.db`. Opening an empty store then used to
re-render every MEMORY.md empty (all memories gone), and a damaged file stopped the bot with a
traceback. Here, before the store opens: a damaged database (bad header, `PRAGMA quick_check`
not "ok", unreadable schema) is moved aside — never deleted — and, when the database is new,
every chat's MEMORY.md is read back into it before anything is written. One chat's unreadable
file is reported and kept; it never stops the others.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rumi import messages as msg
from rumi.fileio import unused_path
from rumi.memory.files.markdown_sync import MalformedMemoryFile, MarkdownSync, parse
from rumi.memory.store.models import MemoryInputError, MemorySource, NewMemory
from rumi.paths import chats_root

log = logging.getLogger(__name__)

SQLITE_HEADER = b"SQLite format 3\x00"
CORRUPT_SUFFIX = ".corrupt-"

@dataclass
class DbHealth:
    """What was found in `rumi.db` before opening it."""

    state: str                     # "ok" | "missing" | "empty" | "corrupt"
    detail: str = ""
    schema_version: int | None = None
    moved_to: Path | None = None   # where a corrupt database was moved


@dataclass
class Recovery:
    """What start-up did about the database; `rebuilt` maps chat → memories read back."""

    health: DbHealth
    rebuilt: dict[str, int] = field(default_factory=dict)
    failed: dict[str, str] = field(default_factory=dict)
    tapes: dict[str, int] = field(default_factory=dict)   # chat → tape messages indexed again

    @property
    def fresh(self) -> bool:
        """The store starts without the memories it used to index."""
        return self.health.state in ("missing", "empty", "corrupt")


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


def set_aside_derived(folder: Path) -> Path | None:
    """Rename a derived folder (the vector index) that indexed a lost database (blocking)."""
    if not folder.exists():
        return None
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
    target = unused_path(folder.with_name(f"{folder.name}.stale-{stamp}"))
    folder.rename(target)
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


def memory_files(data_dir: Path) -> list[tuple[str, Path]]:
    """(chat id, MEMORY.md) for every chat that has one (blocking)."""
    root = chats_root(data_dir)
    return sorted((p.parent.parent.name, p) for p in root.glob("*/memory/MEMORY.md")
                  if p.is_file())


async def rebuild_from_markdown(data_dir: Path, store: Any, recovery: Recovery) -> Recovery:
    """Read every chat's MEMORY.md into a new, empty store, then rewrite each file with the
    new ids. A file that cannot be read is kept aside (`MEMORY.md.rejected-…`) and reported;
    the chats are told by `notices(recovery)` once the bot can talk."""
    sync = MarkdownSync(data_dir, store)
    for chat_id, path in await asyncio.to_thread(memory_files, data_dir):
        try:
            data = await asyncio.to_thread(path.read_bytes)
            if not data.removeprefix(b"\xef\xbb\xbf").strip():
                continue
            entries = parse(data.decode("utf-8"))
            saved = await store.save_many(chat_id, [NewMemory(
                content=e.content, type=e.type, key=e.key, source=MemorySource.EXPLICIT,
                importance=0.7, confidence=1.0, metadata={"origin": "rebuild"})
                for e in entries], embed=False)   # embedded after start: answering comes first
            await sync.adopt(chat_id, data)
            recovery.rebuilt[chat_id] = len(saved)
            log.warning("rebuilt %d memories of chat %s from MEMORY.md", len(saved), chat_id)
        except (UnicodeDecodeError, MalformedMemoryFile, MemoryInputError) as exc:
            # kept aside as MEMORY.md.rejected-…, the chat told which line; the rest goes on
            reason = msg.MD_NOT_UTF8 if isinstance(exc, UnicodeDecodeError) else str(exc)
            recovery.failed[chat_id] = reason
            log.error("could not rebuild chat %s from MEMORY.md: %s", chat_id, reason)
            await sync.set_aside(chat_id, data, reason)
        except Exception as exc:   # one chat's trouble never stops the others
            recovery.failed[chat_id] = type(exc).__name__
            log.exception("rebuilding chat %s from MEMORY.md failed", chat_id)
    return recovery


def notices(recovery: Recovery,
            language_of: Callable[[str], str] | None = None) -> list[tuple[str, str]]:
    """(chat, notice in that chat's language) for every chat the rebuild touched."""
    def said(chat: str, name: str, **values: object) -> str:
        code = language_of(chat) if language_of is not None else None
        return str(msg.text(name, code)).format(**values)

    out = [(chat, said(chat, "DB_REBUILT", count=n)
            + (said(chat, "DB_REBUILT_TAPE", count=recovery.tapes[chat])
               if recovery.tapes.get(chat) else ""))
           for chat, n in recovery.rebuilt.items() if n or not recovery.tapes.get(chat)]
    out += [(chat, said(chat, "DB_REBUILT_TAPE_ONLY", count=n))
            for chat, n in recovery.tapes.items()
            if n and not recovery.rebuilt.get(chat) and chat not in recovery.failed]
    out += [(chat, said(chat, "DB_REBUILD_FAILED", reason=why))
            for chat, why in recovery.failed.items()]
    return out


def cross_check(db_path: Path, data_dir: Path) -> list[str]:
    """Chats whose MEMORY.md shows a different number of memories than the database has
    active (blocking; for `rumi doctor`). Lines are English, for the operator."""
    if not db_path.exists():
        return []
    problems: list[str] = []
    conn = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True, timeout=5)
    try:
        for chat_id, path in memory_files(data_dir):
            try:
                shown = len(parse(path.read_text(encoding="utf-8")))
            except (UnicodeDecodeError, MalformedMemoryFile) as exc:
                problems.append(f"chat {chat_id}: MEMORY.md unreadable ({exc})")
                continue
            active = conn.execute(
                "SELECT count(*) FROM memories WHERE chat_id = ? AND status = 'active' "
                "AND type IN ('profile','fact','entity','preference','decision') "
                "AND coalesce(json_extract(metadata, '$.category'), '') != 'self_correction'",
                (chat_id,)).fetchone()[0]
            if active != shown:
                problems.append(f"chat {chat_id}: MEMORY.md shows {shown}, database has "
                                f"{active}")
    finally:
        conn.close()
    return problems

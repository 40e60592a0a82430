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
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rumi import messages as msg
from rumi.fileio import UnreadableFile, unused_path
from rumi.memory.files.markdown_disk import read_bytes
from rumi.memory.files.markdown_format import MalformedMemoryFile, parse
from rumi.memory.files.markdown_sync import MarkdownSync
from rumi.memory.store.health import DbHealth, listed_counts
from rumi.memory.store.models import MemoryInputError, MemorySource, NewMemory
from rumi.paths import chats_root

log = logging.getLogger(__name__)


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


def set_aside_derived(folder: Path) -> Path | None:
    """Rename a derived folder (the vector index) that indexed a lost database (blocking)."""
    if not folder.exists():
        return None
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
    target = unused_path(folder.with_name(f"{folder.name}.stale-{stamp}"))
    folder.rename(target)
    return target


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
        if name.startswith("DB_REBUILT_TAPE"):   # "(1 mensaje)" / "(2 mensajes)"
            values["count"] = msg.count_of(int(str(values["count"])), "MESSAGES", code)
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
    shown: list[tuple[str, int | str]] = []   # (chat, memories listed or why unreadable)
    for chat_id, path in memory_files(data_dir):
        try:
            data = read_bytes(path)
            if data is None:
                continue
            shown.append((chat_id, len(parse(data.decode("utf-8")))))
        except (UnicodeDecodeError, MalformedMemoryFile, UnreadableFile) as exc:
            shown.append((chat_id, f"chat {chat_id}: MEMORY.md unreadable ({exc})"))
    active = listed_counts(db_path, [chat for chat, n in shown if isinstance(n, int)])
    problems: list[str] = []
    for chat_id, count in shown:
        if isinstance(count, str):
            problems.append(count)
        elif active[chat_id] != count:
            problems.append(f"chat {chat_id}: MEMORY.md shows {count}, database has "
                            f"{active[chat_id]}")
    return problems

"""MEMORY.md holds memories the database lost: read them back in, never reuse their ids.

With `synchronous = NORMAL` a power cut can take the last commits with `rumi.db-wal` while
MEMORY.md (written and fsynced after each change) still shows them. Rumi then saw the file as
its own write, recalled nothing of them, rewrote MEMORY.md without them at the next change and
gave their ids to new memories. At start, before anything writes: ids are reserved past every
id a file or its write history showed, the lines whose id the database never had are saved
again as new memories, the file as it was is kept aside (`MEMORY.md.before-restore-…`), and
the log and `/memory` name it. A line that cannot be saved stays in that copy and is counted.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rumi.fileio import UnreadableFile, atomic_write_bytes, unused_path
from rumi.memory.files.markdown_disk import read_bytes
from rumi.memory.files.markdown_format import Entry, MalformedMemoryFile, parse
from rumi.memory.files.markdown_merge import snapshots
from rumi.memory.files.markdown_sync import STATE_NAME
from rumi.memory.store.models import MemoryInputError, MemorySource, NewMemory
from rumi.paths import ChatPaths, chats_root

log = logging.getLogger(__name__)

ASIDE_PREFIX = "MEMORY.md.before-restore-"
MAX_ID = 2**40   # a hand-typed `#9223372036854775807` must not use up the id space


@dataclass
class Restored:
    """One chat's read-back: how many lines came back, which could not, where the copy is."""

    file: str
    restored: list[int] = field(default_factory=list)   # the ids the file showed
    dropped: list[int] = field(default_factory=list)    # lines (1-based) that failed to save


def _chat_files(data_dir: Path) -> list[tuple[str, Path]]:
    root = chats_root(data_dir)
    return sorted((p.parent.parent.name, p) for p in root.glob("*/memory/MEMORY.md")
                  if p.is_file())


def _entries(path: Path) -> list[Entry]:
    """The file's lines; none when it is absent or unreadable (the watcher reports those)."""
    try:
        data = read_bytes(path)
        return parse(data.decode("utf-8")) if data else []
    except (UnreadableFile, UnicodeDecodeError, MalformedMemoryFile):
        return []


def _state(folder: Path) -> dict[str, Any]:
    try:
        data = json.loads(read_bytes(folder / STATE_NAME) or b"{}")
    except (UnreadableFile, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def highest_seen(data_dir: Path) -> int:
    """The highest memory id any MEMORY.md or its write history showed (blocking)."""
    high = 0
    for _, path in _chat_files(data_dir):
        ids = [e.memory_id for e in _entries(path) if e.memory_id is not None]
        for snap in snapshots(_state(path.parent)):
            ids.extend(snap.ids)
        high = max([high, *(i for i in ids if i <= MAX_ID)])
    return high


def _keep_aside(path: Path, data: bytes) -> str:
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
    target = unused_path(path.with_name(f"{ASIDE_PREFIX}{stamp}"))
    atomic_write_bytes(target, data, sync_dir=True)
    return target.name


def _record(folder: Path, done: Restored) -> None:
    """Noted in the sync's sidecar, where `/memory` reads it (`MarkdownSync.status_lines`)."""
    state = _state(folder)
    state["restored"] = {"file": done.file, "count": len(done.restored),
                         "dropped": len(done.dropped), "at": time.time()}
    atomic_write_bytes(folder / STATE_NAME, json.dumps(state, ensure_ascii=False).encode())


async def restore_lost(data_dir: Path, store: Any, sync: Any) -> dict[str, Restored]:
    """Read back every chat's memories the database lacks; `sync` (a MarkdownSync) then
    rewrites each file from the database. Call at start, before the watcher runs."""
    await store.reserve_ids(await asyncio.to_thread(highest_seen, data_dir))
    out: dict[str, Restored] = {}
    for chat_id, path in await asyncio.to_thread(_chat_files, data_dir):
        entries = await asyncio.to_thread(_entries, path)
        shown = [e for e in entries if e.memory_id is not None]
        known = {m.id for m in await store.get_many(chat_id, [e.memory_id for e in shown])}
        lost = [e for e in shown if e.memory_id not in known]
        if not lost:
            continue
        data = await asyncio.to_thread(read_bytes, path) or b""
        done = Restored(await asyncio.to_thread(_keep_aside, path, data))
        for entry in lost:
            try:
                await store.save(chat_id, NewMemory(
                    content=entry.content, type=entry.type, key=entry.key,
                    source=MemorySource.EXPLICIT, importance=0.8, confidence=1.0,
                    metadata={"origin": "restored", "lost_id": entry.memory_id}))
                done.restored.append(entry.memory_id or 0)
            except MemoryInputError:
                done.dropped.append(entry.line)
        await asyncio.to_thread(_record, path.parent, done)
        await sync.write(chat_id)
        out[chat_id] = done
        log.warning("MEMORY.md of chat %s showed %d memories the database lacked (its last "
                    "writes were lost); read back in: %s; could not save lines %s; the file as "
                    "it was is kept as %s", chat_id, len(lost),
                    ", ".join(f"#{i}" for i in done.restored) or "none",
                    ", ".join(map(str, done.dropped)) or "none",
                    ChatPaths(data_dir, chat_id).memory_dir / done.file)
    return out

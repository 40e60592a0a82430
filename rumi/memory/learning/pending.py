"""Extractions that failed, kept in `memory/pending_extraction.jsonl` until a retry saves them.

Each line holds the transcript of the messages that could not be learned from, so nothing is
lost when the model is down; the lifecycle's job retries them, a redaction rewrites them.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
from collections.abc import Awaitable, Callable, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from rumi.fileio import WHOLE_FILE, UnreadableFile, atomic_write_bytes, read_bounded
from rumi.memory.learning.extraction import render_transcript
from rumi.paths import ChatPaths, chats_root
from rumi.sessions.state import ContextItem

log = logging.getLogger(__name__)

PENDING_NAME = "pending_extraction.jsonl"


class PendingExtractions:
    """The deferred extractions of every chat; `lock` serialises appends, retries, rewrites."""

    def __init__(self, data_dir: Path, clock: Callable[[], datetime]) -> None:
        self.data_dir = Path(data_dir)
        self.clock = clock
        self.lock = asyncio.Lock()

    def path(self, chat_id: str) -> Path:
        return ChatPaths(self.data_dir, chat_id).memory_dir / PENDING_NAME

    async def record(self, chat_id: str, items: Sequence[ContextItem], reason: str,
                     error: str, *, quiet: bool = False) -> None:
        """Append one deferred range; `quiet` (a stop, not a failure) logs at info level."""
        record = {
            "at": self.clock().isoformat(timespec="seconds"), "reason": reason,
            "error": error[:300], "first_id": min(i.id for i in items),
            "last_id": max(i.id for i in items), "transcript": render_transcript(items),
        }
        line = json.dumps(record, ensure_ascii=False) + "\n"
        async with self.lock:
            await asyncio.to_thread(append_line, self.path(chat_id), line)
        log.log(logging.INFO if quiet else logging.WARNING,
                "extraction for chat %s (%s, #%s–#%s) deferred: %s", chat_id, reason,
                record["first_id"], record["last_id"], error)

    async def read(self, chat_id: str) -> list[dict[str, Any]]:
        text = await asyncio.to_thread(read_text, self.path(chat_id))
        out = []
        for line in text.splitlines():
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(record, dict) and isinstance(record.get("transcript"), str):
                out.append(record)
        return out

    async def rewrite(
        self, chat_id: str, change: Callable[[list[dict[str, Any]]], list[dict[str, Any]]],
    ) -> None:
        """Replace the records with `change(records)`, atomically (caller holds `lock`)."""
        records = await self.read(chat_id)
        if not records:
            return
        kept = change(records)
        data = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in kept)
        await asyncio.to_thread(atomic_write_bytes, self.path(chat_id), data.encode("utf-8"))

    async def keep_only(self, chat_id: str, left: list[dict[str, Any]]) -> None:
        """After a retry: the records still failing stay, the file goes when none is left."""
        path = self.path(chat_id)
        if left:
            data = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in left)
            await asyncio.to_thread(atomic_write_bytes, path, data.encode("utf-8"))
        else:
            await asyncio.to_thread(path.unlink, missing_ok=True)

    async def retry_chat(
        self, chat_id: str, retry_one: Callable[[str, dict[str, Any]], Awaitable[None]],
    ) -> int:
        """Retry one chat's records (caller holds `lock`). A stop in the middle keeps the
        ones not yet saved, so none is lost and none saved is extracted again."""
        todo = await self.read(chat_id)
        left: list[dict[str, Any]] = []
        done = 0
        try:
            while todo:
                try:
                    await retry_one(chat_id, todo[0])
                    done += 1
                except Exception as exc:
                    log.warning("pending extraction for chat %s still failing: %s",
                                chat_id, exc)
                    left.append(todo[0])
                todo.pop(0)
        finally:
            await asyncio.shield(self.keep_only(chat_id, left + todo))
        return done

    async def chats(self) -> list[str]:
        """Chats that have deferred extractions."""
        root = chats_root(self.data_dir)
        return await asyncio.to_thread(
            lambda: sorted(p.parent.parent.name for p in root.glob(f"*/memory/{PENDING_NAME}")))


def append_line(path: Path, line: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(line)
        fh.flush()
        os.fsync(fh.fileno())


def read_text(path: Path) -> str:
    """Non-blocking (a FIFO put there must not hang the job): "" when not a regular file.

    Read whole: these are Rumi's own records, rewritten after reading, so a cut would lose some.
    """
    try:
        data, _ = read_bounded(path, WHOLE_FILE)
    except FileNotFoundError:
        return ""
    except UnreadableFile as exc:
        log.warning("not reading %s: %s", path, exc)
        return ""
    return data.decode("utf-8", errors="replace")

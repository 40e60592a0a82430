"""The tape: `.smma/session_log.jsonl`, the immutable record of everything that happened.

Append-only (opened in append mode, one line per write, flushed and fsynced off the event
loop) and never rewritten, so whatever the agent prunes or summarises can be recalled
byte for byte. A line torn by a crash is skipped and reported; the next append first closes
it with a newline so later lines stay readable.

The one exception is a redaction the person asks for (`rumi/memory/redaction/redactor.py`): with the
chat locked it replaces the file atomically (tombstones keep every id) and the engine drops
this object (`forget_chat`), whose offsets no longer match.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rumi.fileio import read_json_lines
from rumi.sessions.state import ContextItem, iso, utc_now

log = logging.getLogger(__name__)


@dataclass
class TapeHealth:
    """What reading the tape found; surfaced on the dashboard when not clean."""

    lines: int = 0
    bad_lines: list[int] = field(default_factory=list)
    torn_tail: bool = False

    @property
    def clean(self) -> bool:
        return not self.bad_lines and not self.torn_tail


class Tape:
    """One chat's tape. Reads keep an in-memory index by message id, refreshed incrementally."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.health = TapeHealth()
        self._lock = asyncio.Lock()
        self._checked_tail = False
        self._offset = 0
        self._messages: dict[int, tuple[int, int]] = {}  # id -> (offset, length) of its line
        self._max_id = 0

    async def append(self, record: dict[str, Any]) -> None:
        """Write one JSON line durably before returning (the reply is sent after this)."""
        line = json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n"
        async with self._lock:
            await asyncio.to_thread(self._write, line.encode("utf-8"))

    async def append_many(self, records: list[dict[str, Any]]) -> None:
        """Several lines with one fsync (a compaction writes its summary and event together)."""
        if not records:
            return
        data = "".join(
            json.dumps(r, ensure_ascii=False, separators=(",", ":")) + "\n" for r in records
        )
        async with self._lock:
            await asyncio.to_thread(self._write, data.encode("utf-8"))

    def _write(self, data: bytes) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if not self._checked_tail:
            if self._tail_is_torn():
                log.warning("tape %s ends with a torn line; starting a new line", self.path)
                self.health.torn_tail = True
                data = b"\n" + data
            self._checked_tail = True
        with open(self.path, "ab") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())

    def _tail_is_torn(self) -> bool:
        try:
            with open(self.path, "rb") as fh:
                fh.seek(0, os.SEEK_END)
                if fh.tell() == 0:
                    return False
                fh.seek(-1, os.SEEK_END)
                return fh.read(1) != b"\n"
        except FileNotFoundError:
            return False

    async def get(self, message_id: int) -> dict[str, Any] | None:
        """The original record of message `message_id`, or None if it never was on the tape."""
        async with self._lock:
            return await asyncio.to_thread(self._get, message_id)

    def _get(self, message_id: int) -> dict[str, Any] | None:
        self._catch_up()
        where = self._messages.get(message_id)
        if where is None:
            return None
        with open(self.path, "rb") as fh:
            fh.seek(where[0])
            value = json.loads(fh.read(where[1]))
        return value if isinstance(value, dict) else None

    async def max_id(self) -> int:
        async with self._lock:
            await asyncio.to_thread(self._catch_up)
        return self._max_id

    async def records(self) -> list[dict[str, Any]]:
        """Every readable line (messages and events), in order; bad lines are skipped."""
        return await asyncio.to_thread(read_json_lines, self.path)

    def _catch_up(self) -> None:
        """Index complete lines written since the last read; a partial tail waits or is torn."""
        try:
            with open(self.path, "rb") as fh:
                fh.seek(self._offset)
                chunk = fh.read()
        except FileNotFoundError:
            return
        if not chunk:
            return
        end = chunk.rfind(b"\n")
        complete = chunk[: end + 1] if end >= 0 else b""
        tail = chunk[end + 1 :]
        position = self._offset
        for raw in complete.split(b"\n")[:-1]:
            self.health.lines += 1
            self._index_line(raw, position)
            position += len(raw) + 1
        self._offset += len(complete)
        if tail:
            # Our own appends always end in "\n" and hold the lock, so an unterminated
            # tail is a line torn by a crash. Report it and leave it unindexed.
            self.health.torn_tail = True

    def _index_line(self, raw: bytes, position: int) -> None:
        if not raw.strip():
            return
        try:
            record = json.loads(raw)
        except ValueError:
            self.health.bad_lines.append(self.health.lines)
            log.warning("tape %s: unreadable line %d skipped", self.path, self.health.lines)
            return
        if not isinstance(record, dict):
            self.health.bad_lines.append(self.health.lines)
            return
        msg_id = record.get("id")
        if isinstance(msg_id, int) and "event" not in record:
            self._messages[msg_id] = (position, len(raw))
            self._max_id = max(self._max_id, msg_id)


def event(name: str, **fields: Any) -> dict[str, Any]:
    return {"event": name, "timestamp": iso(utc_now()), **fields}


def tape_record(item: ContextItem) -> dict[str, Any]:
    """The tape line of a message: the seed's fields first, extras only when set."""
    record: dict[str, Any] = {
        "id": item.id, "timestamp": item.created_at, "role": item.role,
        "content": item.content, "token_count": item.token_count,
    }
    if item.kind != "message":
        record["kind"] = item.kind
    for key in ("tool_calls", "tool_call_id", "name", "channel_message_id", "speaker_id",
                "speaker_name"):
        value = getattr(item, key)
        if value:
            record[key] = value
    if item.covers:
        record["covers"] = item.covers
    if item.is_error:
        record["is_error"] = True
    return record

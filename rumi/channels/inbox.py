"""At-least-once answering: every received message is journaled before Telegram forgets it.

Telegram drops an update once the next getUpdates call confirms its offset, and PTB makes
that call right after queueing the batch, whatever the handlers have done. So the journal sits
in the update queue itself: `JournaledQueue.put` appends the update to `inbox.jsonl` (fsynced)
before PTB may confirm it. The journal holds only what is unanswered: once a message is
answered (or deliberately ignored) the file is rewritten atomically without it, so its text
and sender leave the disk at once. On start, what is still there is handed back: answered
again when recent, else the person is asked whether to repeat. Update ids already seen are
dropped, so a message Telegram re-sends after a crash is never answered twice; a notice sent
about a waiting message (the "⏳") is journaled too, so a restart never repeats it.

Answers are journaled as they go out: the answer's text before its first piece is sent
(`sending`), then the message id Telegram returned for each piece (`delivered`). A restart
that finds an answer begun sends what has no id yet — the same text, not a new turn. The one
piece that can go out twice is the one Telegram accepted in the moment before its id reached
the disk (the Bot API cannot tell a bot what it already sent): at least once, never lost.

A streamed answer sends its first parts while the model still writes (the draft, past 4,096
characters): each such part is journaled as a piece (`sending_piece`) before it goes out, its
id after, and the answer's rest (`sending`) follows them; so a restart knows every part that
may have gone out, whichever path sent it.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rumi.channels.safe_text import clean
from rumi.fileio import atomic_write_bytes, is_disk_full

log = logging.getLogger(__name__)

SEEN_KEEP = 1_000   # Telegram re-sends at most the unconfirmed batches (≤ 100 updates each)


@dataclass(frozen=True)
class Pending:
    update_id: int
    chat_id: int
    message_id: int
    received_at: float
    update: dict[str, Any]
    notes: frozenset[str] = field(default_factory=frozenset)   # notices already sent
    reply: PendingReply | None = None   # an answer begun before the crash


@dataclass(frozen=True)
class PendingReply:
    """An answer whose sending began: the parts a streamed answer sent as it was written
    (`parts`), then its text as sent (None: the turn was cut before its rest was known), and
    the ids of the pieces Telegram accepted, in order (the parts first); the rest is sent
    after a restart."""

    text: str | None
    markdown: bool
    reply_to: int | None
    buttons: list[list[tuple[str, str]]] | None
    sent_ids: tuple[int, ...]
    parts: tuple[str, ...] = ()


def note_key(text: str) -> str:
    """A notice is remembered by a digest, never by its words (it may quote the person)."""
    return hashlib.sha256(text.encode("utf-8", "replace")).hexdigest()[:16]


class Inbox:
    """The journal file; blocking file work runs in threads."""

    def __init__(self, path: Path, clock: Any = time.time) -> None:
        self.path = path
        self.clock = clock
        self._seen: set[int] = set()
        self._open: dict[tuple[int, int], dict[str, Any]] = {}   # received, not yet answered
        self._lock = asyncio.Lock()
        self._loaded = False

    async def load(self) -> list[Pending]:
        """Read the journal, keep only what is unanswered (rewritten compactly), remember every
        update id seen so a re-sent update is dropped."""
        async with self._lock:
            seen, records = await asyncio.to_thread(self._read_state)
            self._seen |= seen
            for key, record in records.items():
                self._open.setdefault(key, record)
            self._loaded = True
            try:
                await self._write()
            except OSError as exc:   # the file as it is stays valid: compacted another time
                if not is_disk_full(exc):
                    raise
                log.warning("the disk is full: inbox journal not compacted")
        return sorted((_pending(r) for r in self._open.values()), key=lambda p: p.update_id)

    def _read_state(self) -> tuple[set[int], dict[tuple[int, int], dict[str, Any]]]:
        """Replay the journal: what was received and not yet answered. Blocking."""
        seen: set[int] = set()
        records: dict[tuple[int, int], dict[str, Any]] = {}
        for rec in self._read():
            try:
                op = rec.get("op")
                if op == "recv":
                    seen.add(int(rec["update_id"]))
                    rec.setdefault("notes", [])
                    records[(int(rec["chat"]), int(rec["mid"]))] = rec
                elif op == "done":
                    records.pop((int(rec["chat"]), int(rec["mid"])), None)
                elif op == "note":
                    found = records.get((int(rec["chat"]), int(rec["mid"])))
                    if found is not None:
                        found["notes"].append(str(rec["key"]))
                elif op == "seen":
                    seen.update(int(i) for i in rec.get("ids", []))
                elif op == "send":
                    found = records.get((int(rec["chat"]), int(rec["mid"])))
                    if found is not None:
                        found["reply"] = _rest(found.get("reply"), rec["reply"])
                elif op == "piece":
                    found = records.get((int(rec["chat"]), int(rec["mid"])))
                    if found is not None:
                        _add_part(found, str(rec["text"]))
                elif op == "sent":
                    found = records.get((int(rec["chat"]), int(rec["mid"])))
                    if found is not None and isinstance(found.get("reply"), dict):
                        ids = found["reply"]["ids"]
                        if int(rec["n"]) == len(ids):
                            ids.append(int(rec["id"]))
            except (KeyError, TypeError, ValueError, AttributeError):
                log.warning("skipping a damaged line of %s", self.path)
        return seen, records

    async def _write(self) -> None:
        """Rewrite the journal atomically from memory (caller holds the lock): the seen ids
        and what is unanswered, nothing else."""
        kept: list[dict[str, Any]] = [{"op": "seen", "ids": sorted(self._seen)[-SEEN_KEEP:]}]
        kept += sorted(self._open.values(), key=lambda r: int(r["update_id"]))
        data = "".join(_line(r) for r in kept).encode("utf-8")
        await asyncio.to_thread(atomic_write_bytes, self.path, data, sync_dir=True)

    async def compact_after(self, chat_id: int) -> None:
        """A redaction in `chat_id`. Answered messages already left the journal when they were
        answered; what is still in flight (the `/redact` itself) leaves when it is answered."""

    def _read(self) -> list[dict[str, Any]]:
        try:
            raw = self.path.read_bytes().decode("utf-8", "replace")
        except FileNotFoundError:
            return []
        out = []
        for line in raw.splitlines():
            try:
                rec = json.loads(line)
            except json.JSONDecodeError:   # a line cut by a crash: the rest is still good
                continue
            if isinstance(rec, dict):
                out.append(rec)
        return out

    def seen(self, update_id: int) -> bool:
        return update_id in self._seen

    async def received(self, update_id: int, chat_id: int, message_id: int,
                       update: dict[str, Any]) -> None:
        record = {"op": "recv", "update_id": update_id, "chat": chat_id, "mid": message_id,
                  "at": self.clock(), "update": clean(update), "notes": []}
        async with self._lock:
            # written first: a full disk leaves nothing half-recorded, so the same update can
            # be journaled again once there is room
            await asyncio.to_thread(_append_synced, self.path, _line(record).encode("utf-8"))
            self._open[(chat_id, message_id)] = record
            self._seen.add(update_id)

    async def done(self, chat_id: int, message_id: int) -> None:
        """The message is answered: it leaves the journal (one atomic rewrite); a second call
        for it writes nothing."""
        async with self._lock:
            if not self._loaded:
                seen, records = await asyncio.to_thread(self._read_state)
                self._seen |= seen
                for key, record in records.items():
                    self._open.setdefault(key, record)
                self._loaded = True
            if self._open.pop((chat_id, message_id), None) is None:
                return
            await self._write()

    def noted(self, chat_id: int, message_id: int, text: str) -> bool:
        """Whether this notice was already sent about this waiting message."""
        record = self._open.get((chat_id, message_id))
        return record is not None and note_key(text) in record["notes"]

    async def note(self, chat_id: int, message_id: int, text: str) -> None:
        """Journal that a notice about a waiting message is being sent (before it is: a crash
        in between loses one notice rather than repeating it at every restart)."""
        record = self._open.get((chat_id, message_id))
        if record is None:
            return
        key = note_key(text)
        record["notes"].append(key)
        line = _line({"op": "note", "chat": chat_id, "mid": message_id, "key": key})
        async with self._lock:
            await asyncio.to_thread(_append_synced, self.path, line.encode("utf-8"))


    async def sending(self, chat_id: int, message_id: int, reply: dict[str, Any]) -> int:
        """Journal the answer to this message before any of it is sent (`reply`: text,
        markdown, reply_to, buttons), so a restart sends this text rather than a new one.
        After streamed parts it is the rest of the answer: the parts Telegram confirmed stay
        (the others were not sent, and the rest holds their text).
        Returns how many streamed parts went out before it (its pieces are numbered after
        them)."""
        record = self._open.get((chat_id, message_id))
        if record is None:
            return 0
        record["reply"] = _rest(record.get("reply"), reply)
        line = _line({"op": "send", "chat": chat_id, "mid": message_id, "reply": reply})
        async with self._lock:
            await asyncio.to_thread(_append_synced, self.path, line.encode("utf-8"))
        return len(record["reply"].get("parts", []))

    async def sending_piece(self, chat_id: int, message_id: int, text: str) -> int:
        """Journal a part of a streamed answer before it goes out as one message; returns its
        piece number (its id is journaled by `delivered`)."""
        record = self._open.get((chat_id, message_id))
        if record is None:
            return -1
        piece = _add_part(record, text)
        line = _line({"op": "piece", "chat": chat_id, "mid": message_id, "text": text})
        async with self._lock:
            await asyncio.to_thread(_append_synced, self.path, line.encode("utf-8"))
        return piece

    async def delivered(self, chat_id: int, message_id: int, piece: int, sent_id: int) -> None:
        """Telegram accepted piece number `piece` (from 0) of the answer as `sent_id`."""
        record = self._open.get((chat_id, message_id))
        reply = record.get("reply") if record is not None else None
        if not isinstance(reply, dict) or piece != len(reply["ids"]):
            return
        reply["ids"].append(sent_id)
        line = _line({"op": "sent", "chat": chat_id, "mid": message_id, "n": piece,
                      "id": sent_id})
        async with self._lock:
            await asyncio.to_thread(_append_synced, self.path, line.encode("utf-8"))


def _line(record: dict[str, Any]) -> str:
    return json.dumps(clean(record), ensure_ascii=False) + "\n"


def _add_part(record: dict[str, Any], text: str) -> int:
    """A streamed part joins the answer record (made if none yet); its piece number."""
    reply = record.get("reply")
    if not isinstance(reply, dict) or "text" in reply:
        reply = record["reply"] = {"parts": [], "ids": []}
    reply["parts"].append(text)
    return len(reply["parts"]) - 1


def _rest(before: Any, reply: dict[str, Any]) -> dict[str, Any]:
    """The answer record once its rest is journaled: the confirmed streamed parts, then
    `reply`."""
    if not isinstance(before, dict) or "text" in before:
        return {**reply, "ids": []}
    ids = list(before.get("ids", []))
    return {**reply, "parts": list(before.get("parts", []))[:len(ids)], "ids": ids}


def _pending(record: dict[str, Any]) -> Pending:
    return Pending(int(record["update_id"]), int(record["chat"]), int(record["mid"]),
                   float(record.get("at", 0.0)), record["update"],
                   frozenset(record.get("notes", [])), _pending_reply(record.get("reply")))


def _pending_reply(raw: Any) -> PendingReply | None:
    if not isinstance(raw, dict):
        return None
    parts = raw.get("parts", [])
    text = raw.get("text")
    if not isinstance(parts, list) or (text is None and not parts) or (
            text is not None and not isinstance(text, str)):
        return None
    buttons = raw.get("buttons")
    try:
        rows = ([[(str(label), str(data)) for label, data in row] for row in buttons]
                if isinstance(buttons, list) else None)
    except (TypeError, ValueError):
        rows = None
    reply_to = raw.get("reply_to")
    try:
        return PendingReply(text, bool(raw.get("markdown", True)),
                            int(reply_to) if reply_to is not None else None, rows,
                            tuple(int(i) for i in raw.get("ids", [])),
                            tuple(str(p) for p in parts))
    except (TypeError, ValueError):   # a damaged record: the message is answered anew
        log.warning("skipping a damaged answer record in the inbox journal")
        return None


def _append_synced(path: Path, line: bytes) -> None:
    """Append one whole line, or nothing: a write cut by a full disk is truncated away, so the
    next line is not glued to half a record."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        size = os.fstat(fd).st_size
        try:
            written = 0
            while written < len(line):
                written += os.write(fd, line[written:])
            os.fsync(fd)
        except OSError:
            with contextlib.suppress(OSError):
                os.ftruncate(fd, size)
            raise
    finally:
        os.close(fd)

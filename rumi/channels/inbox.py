"""At-least-once answering: every received message is journaled before Telegram forgets it.

Telegram drops an update once the next getUpdates call confirms its offset, and PTB makes
that call right after queueing the batch, whatever the handlers have done. So the journal sits
in the update queue itself: `JournaledQueue.put` appends the update to `inbox.jsonl` (fsynced)
before PTB may confirm it. An answered (or deliberately ignored) message is marked done. On
start, what was received but never marked is handed back: answered again when recent, else the
person is asked whether to repeat. Update ids already seen are dropped, so a message Telegram
re-sends after a crash is never answered twice.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rumi.fileio import atomic_write_bytes

log = logging.getLogger(__name__)

SEEN_KEEP = 5_000


@dataclass(frozen=True)
class Pending:
    update_id: int
    chat_id: int
    message_id: int
    received_at: float
    update: dict[str, Any]


class Inbox:
    """The journal file; blocking file work runs in threads."""

    def __init__(self, path: Path, clock: Any = time.time) -> None:
        self.path = path
        self.clock = clock
        self._seen: set[int] = set()
        self._done: set[tuple[int, int]] = set()
        self._lock = asyncio.Lock()
        self._open: set[tuple[int, int]] = set()   # received, not yet done
        self._compact_for: set[int] = set()        # chats whose answered texts must go

    async def load(self) -> list[Pending]:
        """Read the journal, keep only what is unanswered (rewritten compactly), remember every
        update id seen so a re-sent update is dropped."""
        pending = await self._rewrite()
        self._open.update((p.chat_id, p.message_id) for p in pending)
        return pending

    async def _rewrite(self) -> list[Pending]:
        # the thread works on a copy of the seen ids: the loop may add to the set meanwhile
        seen, pending = await asyncio.to_thread(self._compact, set(self._seen))
        self._seen |= seen
        return pending

    def _compact(self, seen: set[int]) -> tuple[set[int], list[Pending]]:
        """Rewrite the journal with only the seen ids and what is unanswered. Blocking."""
        records = self._read()
        pending: dict[tuple[int, int], Pending] = {}
        for rec in records:
            if rec.get("op") == "recv":
                seen.add(int(rec["update_id"]))
                pending[(rec["chat"], rec["mid"])] = Pending(
                    int(rec["update_id"]), int(rec["chat"]), int(rec["mid"]),
                    float(rec["at"]), rec["update"])
            elif rec.get("op") == "done":
                pending.pop((rec["chat"], rec["mid"]), None)
            elif rec.get("op") == "seen":
                seen.update(int(i) for i in rec.get("ids", []))
        kept = [{"op": "seen", "ids": sorted(seen)[-SEEN_KEEP:]}]
        kept += [{"op": "recv", "update_id": p.update_id, "chat": p.chat_id, "mid": p.message_id,
                  "at": p.received_at, "update": p.update} for p in pending.values()]
        data = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in kept).encode("utf-8")
        atomic_write_bytes(self.path, data, sync_dir=True)
        return seen, sorted(pending.values(), key=lambda p: p.update_id)

    async def compact_after(self, chat_id: int) -> None:
        """The chat's words were erased at the person's request (a redaction): drop the text
        of its answered messages from the journal, now or as soon as its messages in flight
        (the `/redact` itself) are answered. Not on every answer: rewriting the seen ids each
        time would wear the SD card."""
        self._compact_for.add(chat_id)
        await self._compact_if_idle()

    async def _compact_if_idle(self) -> None:
        if not self._compact_for or self._compact_for & {chat for chat, _ in self._open}:
            return
        self._compact_for.clear()
        async with self._lock:
            await self._rewrite()

    def _read(self) -> list[dict[str, Any]]:
        try:
            raw = self.path.read_text(encoding="utf-8")
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
        self._seen.add(update_id)
        self._open.add((chat_id, message_id))
        await self._append({"op": "recv", "update_id": update_id, "chat": chat_id,
                            "mid": message_id, "at": self.clock(), "update": update})

    async def done(self, chat_id: int, message_id: int) -> None:
        """Journal the message answered; a second call for it writes nothing (one fsync)."""
        if (chat_id, message_id) in self._done:
            return
        self._done.add((chat_id, message_id))
        if len(self._done) > SEEN_KEEP:
            self._done.clear()
        await self._append({"op": "done", "chat": chat_id, "mid": message_id})
        self._open.discard((chat_id, message_id))
        await self._compact_if_idle()

    async def _append(self, record: dict[str, Any]) -> None:
        line = (json.dumps(record, ensure_ascii=False) + "\n").encode("utf-8")
        async with self._lock:
            await asyncio.to_thread(_append_synced, self.path, line)


def _append_synced(path: Path, line: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("ab") as handle:
        handle.write(line)
        handle.flush()
        os.fsync(handle.fileno())


class JournaledQueue(asyncio.Queue):  # type: ignore[type-arg]
    """PTB's update queue: a message is journaled before `put` returns, that is before PTB
    confirms its offset to Telegram; an update id already journaled is dropped."""

    def __init__(self, inbox: Inbox) -> None:
        super().__init__()
        self.inbox = inbox

    async def put(self, item: Any) -> None:
        update_id = getattr(item, "update_id", None)
        message = getattr(item, "message", None)
        if isinstance(update_id, int) and message is not None:
            if self.inbox.seen(update_id):
                log.info("telegram update %s was already received; not answering twice",
                         update_id)
                return
            try:
                await self.inbox.received(update_id, message.chat_id, message.message_id,
                                          item.to_dict())
            except OSError:
                log.exception("could not journal telegram update %s", update_id)
        await super().put(item)

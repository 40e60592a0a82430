"""PTB's update queue with the inbox journal in it: no update can stop polling.

PTB confirms a batch's offset to Telegram right after `put` has queued it, so `put` journals a
message first; and since a `put` that raises makes PTB fetch the same batch again, forever,
`put` never raises: an update that cannot be journaled is logged and still handled. An update
whose strings cannot be encoded (a lone surrogate) is rebuilt with them replaced, so what the
handlers see is what the journal holds. An update the getUpdates request could not parse
arrives as a placeholder (`rumi.channels.unparsed`): it is recorded and goes no further.

A full disk is the one failure `put` waits out instead of logging: the update is not
journaled, so it must not be confirmed either. `put` tells the person once (`on_disk_full`)
and waits for room (`DiskRoom`); polling pauses, Telegram keeps the update and everything
after it (also across a restart), and the message is answered once there is space.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from telegram import Update

from rumi.channels.disk_room import DiskRoom
from rumi.channels.inbox import Inbox
from rumi.channels.safe_text import clean
from rumi.channels.unparsed import UnparsedLog, unparsed_record
from rumi.fileio import is_disk_full

log = logging.getLogger(__name__)


class JournaledQueue(asyncio.Queue):  # type: ignore[type-arg]
    """A message is journaled before `put` returns, that is before PTB confirms its offset;
    an update id already journaled is dropped."""

    def __init__(self, inbox: Inbox, room: DiskRoom | None = None,
                 on_disk_full: Callable[[Any], Awaitable[None]] | None = None) -> None:
        super().__init__()
        self.inbox = inbox
        self.unparsed = UnparsedLog(inbox.path.parent / "unparsed.jsonl")
        self.room = room or DiskRoom(inbox.path.parent)
        self.on_disk_full = on_disk_full

    async def put(self, item: Any) -> None:
        told = False
        while True:
            try:
                item = await self._journal(item)
                break
            except Exception as exc:
                update_id = getattr(item, "update_id", "?")
                if not is_disk_full(exc):
                    log.exception("could not journal telegram update %s", update_id)
                    break
                if not told:
                    told = True
                    log.error("the disk is full: telegram update %s waits, unconfirmed, "
                              "until there is room", update_id)
                    if self.on_disk_full is not None:
                        await self.on_disk_full(item)
                await self.room.wait()
        if item is not None:
            await super().put(item)

    async def _journal(self, item: Any) -> Any:
        """`item` as the handlers should see it, or None when it was already received."""
        update_id = getattr(item, "update_id", None)
        unparsed = unparsed_record(item)
        if unparsed is not None and isinstance(update_id, int):
            await self.unparsed.add(update_id, unparsed, self.inbox.clock())
            return None
        message = getattr(item, "message", None)
        if not isinstance(update_id, int) or message is None:
            return item
        if self.inbox.seen(update_id):
            log.info("telegram update %s was already received; not answering twice", update_id)
            return None
        data = item.to_dict()
        safe = clean(data)
        if safe != data:
            log.warning("telegram update %s carried text that is not valid Unicode; "
                        "replaced with U+FFFD", update_id)
            item = Update.de_json(safe, item.get_bot())
        await self.inbox.received(update_id, message.chat_id, message.message_id, safe)
        return item

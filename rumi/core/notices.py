"""Unprompted notices to a chat through the channel's outbox, queued while no channel
serves that chat yet, so nothing found early (at start-up) is said to no one."""

from __future__ import annotations

import logging

from rumi.core.ports import Outbox

log = logging.getLogger(__name__)

QUEUED_NOTICES = 200
Buttons = list[list[tuple[str, str]]]


class Notices:
    def __init__(self) -> None:
        self._outbox: Outbox | None = None
        self._queued: list[tuple[str, str, Buttons | None]] = []

    def set_outbox(self, outbox: Outbox | None) -> None:
        self._outbox = outbox

    @property
    def connected(self) -> bool:
        return self._outbox is not None

    async def tell(self, chat_id: str, text: str, buttons: Buttons | None = None, *,
                   keep: bool = True) -> bool:
        """See `Assistant.tell`; False if not sent now (queued when `keep`)."""
        if self._outbox is None:
            if keep:
                log.info("no channel yet: queueing a notice to chat %s", chat_id)
                self._keep(chat_id, text, buttons)
            return False
        try:
            if buttons:
                taken = await self._outbox(chat_id, text, buttons=buttons)
            else:
                taken = await self._outbox(chat_id, text)
        except Exception:
            log.exception("delivering a notice to chat %s failed", chat_id)
            return False
        if taken is False:   # not a chat this channel serves (the terminal): keep it for later
            if keep:
                self._keep(chat_id, text, buttons)
            return False
        return True

    def _keep(self, chat_id: str, text: str, buttons: Buttons | None) -> None:
        self._queued = [*self._queued, (chat_id, text, buttons)][-QUEUED_NOTICES:]

    async def deliver_queued(self) -> int:
        queued, self._queued = self._queued, []
        sent = 0
        for chat_id, text, buttons in queued:
            sent += await self.tell(chat_id, text, buttons)
        return sent

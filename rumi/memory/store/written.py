"""Who hears that a store wrote a chat's memories (saved, edited, superseded, imported).

Both stores keep one `WriteListeners`, so the background translator (`recall.memory_translation`)
wakes after a write whichever database runs, and a listener's fault never fails the write."""

from __future__ import annotations

import logging
from collections.abc import Callable

log = logging.getLogger(__name__)


class WriteListeners(list[Callable[[str], None]]):
    """Callbacks given the chat id after its memories were written; they only schedule work."""

    def tell(self, chat: str) -> None:
        """Call every listener with `chat` (never raises)."""
        for listener in self:
            try:
                listener(chat)
            except Exception:   # noqa: BLE001 - a listener's fault is not the write's
                log.exception("a listener of chat %s's writes failed", chat)

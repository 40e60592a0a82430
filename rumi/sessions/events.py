"""Session lifecycle events: a tiny async pub/sub so other parts react without coupling.

Fact extraction listens to `ended`, the sandbox removes its container on `ended`, snapshots
listen to `cleared`. A subscriber that raises is logged and skipped; it never breaks the chat.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from rumi.sessions.state import SessionState

log = logging.getLogger(__name__)

EventKind = Literal["created", "message", "expired", "reset", "cleared", "ended"]
EVENT_KINDS: tuple[str, ...] = ("created", "message", "expired", "reset", "cleared", "ended")


@dataclass
class SessionEvent:
    """What happened to which chat's session.

    `session` is the state the event is about (for `ended`, the session being dropped, still
    readable); `reason` says why a session ended (`expired`, `reset`, ...); `data` carries
    event-specific extras (for `cleared`: `removed` items; for `message`: `tools`, `tokens`).
    """

    kind: EventKind
    chat_id: str
    session: SessionState | None = None
    reason: str | None = None
    data: dict[str, Any] = field(default_factory=dict)


Subscriber = Callable[[SessionEvent], Awaitable[None]]


class SessionEvents:
    def __init__(self) -> None:
        self._subscribers: dict[str, list[Subscriber]] = {kind: [] for kind in EVENT_KINDS}

    def subscribe(self, kind: str, callback: Subscriber) -> None:
        """Call `await callback(event)` for every event of `kind`, in subscription order."""
        if kind not in self._subscribers:
            raise ValueError(f"unknown session event {kind!r}; known: {', '.join(EVENT_KINDS)}")
        self._subscribers[kind].append(callback)

    def unsubscribe(self, kind: str, callback: Subscriber) -> None:
        if callback in self._subscribers.get(kind, []):
            self._subscribers[kind].remove(callback)

    async def emit(self, event: SessionEvent) -> None:
        """Await every subscriber in turn; failures are logged, never raised."""
        for callback in list(self._subscribers[event.kind]):
            try:
                await callback(event)
            except Exception:
                log.exception(
                    "subscriber %s of session event %s failed for chat %s",
                    getattr(callback, "__qualname__", callback), event.kind, event.chat_id,
                )

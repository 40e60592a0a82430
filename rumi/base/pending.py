"""A question a chat may answer later ("which one?", "sure?"): one per chat, forgotten once
it expires, so a stale answer is never taken for a new one."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class PendingQuestions(Generic[T]):
    def __init__(self, seconds: float,
                 monotonic: Callable[[], float] = time.monotonic) -> None:
        self.seconds = seconds
        self.monotonic = monotonic
        self._open: dict[str, tuple[float, T]] = {}

    def ask(self, chat_id: str, question: T) -> None:
        self._open[chat_id] = (self.monotonic() + self.seconds, question)

    def get(self, chat_id: str) -> T | None:
        """The chat's open question, or None (an expired one is dropped)."""
        entry = self._open.get(chat_id)
        if entry is None:
            return None
        if entry[0] < self.monotonic():
            self._open.pop(chat_id, None)
            return None
        return entry[1]

    def close(self, chat_id: str) -> None:
        self._open.pop(chat_id, None)

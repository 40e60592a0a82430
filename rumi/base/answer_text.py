"""The answer's text as the model writes it, for channels that show it growing.

A gpt-oss answer takes seconds to write; a person who sees it grow (a Telegram draft, the
terminal printing as it comes) waits less. The agent loop knows the text, the channel knows
how to show it, and neither imports the other: like `ToolSteps`, the watcher lives in a
context variable set around the call that runs the turn, so the text of one chat's turn
reaches the channel that started that turn and no other.

The loop streams from the model only while someone watches (`watched()`): a group chat, a
scheduled task or `[telegram] stream = false` set no watcher and get whole answers, as before.

Each `AnswerText` is one piece of the current model call's text; `restart` marks the first
piece of a new model call, whose text replaces what was shown before (a tool step's preface,
or an answer retried with more room). What a watcher showed is a preview: the answer is what
the turn returns, sent as a real message by the channel. A watcher must be quick and never
break the turn: its failures are logged and swallowed here.
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class AnswerText:
    """A piece of the answer being written in `chat_id`."""

    chat_id: str
    text: str
    restart: bool = False   # the first piece of a new model call: drop what was shown


TextWatcher = Callable[[AnswerText], Awaitable[None]]


class AnswerStream:
    """Built once in the composition root; the agent emits, channels watch their turns."""

    def __init__(self) -> None:
        self._watcher: contextvars.ContextVar[TextWatcher | None] = contextvars.ContextVar(
            f"rumi_text_watcher_{id(self):x}", default=None)

    def watch(self, watcher: TextWatcher | None) -> None:
        """Text of turns started later in the current task goes to `watcher` (None: stop)."""
        self._watcher.set(watcher)

    @contextlib.contextmanager
    def watching(self, watcher: TextWatcher) -> Iterator[None]:
        """Text of turns started inside this block goes to `watcher`."""
        token = self._watcher.set(watcher)
        try:
            yield
        finally:
            self._watcher.reset(token)

    def watched(self) -> bool:
        """Someone shows this turn's text as it is written: worth streaming."""
        return self._watcher.get() is not None

    async def emit(self, piece: AnswerText) -> None:
        watcher = self._watcher.get()
        if watcher is None:
            return
        try:
            await watcher(piece)
        except Exception:
            log.exception("showing the answer's text in chat %s failed", piece.chat_id)

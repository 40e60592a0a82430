"""A one-line "thinking…" indicator for the terminal while a turn runs.

Without it a slow answer looks like a hang. It lives on its own line, redrawn in place with a
carriage return, and is erased before anything else is printed (a tool step, a notice, the
answer), then drawn again below it; so the conversation never shows spinner debris. It is
only ever enabled on a real terminal: in a pipe or a file the control codes would be noise.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import TextIO

FRAMES = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
TICK_SECONDS = 0.15
ERASE_LINE = "\r\x1b[K"


class Thinking:
    def __init__(self, out: TextIO, label: str, *, enabled: bool) -> None:
        self.out = out
        self.label = label
        self.enabled = enabled
        self._task: asyncio.Task[None] | None = None
        self._shown = False
        self._frame = 0
        self._since = 0.0

    @property
    def active(self) -> bool:
        return self._task is not None

    def start(self) -> None:
        if not self.enabled or self._task is not None:
            return
        self._since = time.monotonic()
        self._draw()
        self._task = asyncio.create_task(self._spin(), name="rumi-thinking")

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self.erase()

    def erase(self) -> None:
        """Remove the indicator's line so the next text starts at column 0."""
        if self._shown:
            self.out.write(ERASE_LINE)
            self.out.flush()
            self._shown = False

    def redraw(self) -> None:
        if self._task is not None:
            self._draw()

    def _draw(self) -> None:
        elapsed = int(time.monotonic() - self._since)
        seconds = f" {elapsed} s" if elapsed >= 2 else ""
        self.out.write(f"{ERASE_LINE}{FRAMES[self._frame % len(FRAMES)]} {self.label}{seconds}")
        self.out.flush()
        self._shown = True

    async def _spin(self) -> None:
        while True:
            await asyncio.sleep(TICK_SECONDS)
            self._frame += 1
            self._draw()

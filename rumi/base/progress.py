"""The one event the agent loop emits per tool step, for channels that show progress.

A person waiting on a long turn should see that Rumi is working and on what ("🔧 `ls -la`").
The loop does not know about channels, so it calls `ToolSteps.emit` and whoever runs the turn
decides what to show: the terminal prints a line, Telegram edits one status message. The
watcher is held in a context variable set around the call that runs the turn (`watching`),
so a step reaches the channel that started *that* turn and no other chat's, and the core
needs no new parameter: the turn's task inherits the context it was created in.

A watcher must be quick (it runs inside the turn) and never break it: its failures are
logged and swallowed here.
"""

from __future__ import annotations

import contextlib
import contextvars
import json
import logging
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass

from rumi import messages as msg

log = logging.getLogger(__name__)

LABEL_MAX_CHARS = 60
# The argument that best says what a tool is doing, tried in this order.
_SHOWN_ARGUMENTS = ("command", "path", "query", "key", "name")


@dataclass(frozen=True)
class ToolStep:
    """One tool call about to run in the current turn."""

    chat_id: str
    tool: str
    arguments: str = "{}"

    @property
    def label(self) -> str:
        """A short line for people: the command for `bash`, else the tool and its target."""
        try:
            parsed = json.loads(self.arguments or "{}")
        except (json.JSONDecodeError, TypeError):
            parsed = {}
        shown = ""
        if isinstance(parsed, dict):
            for key in _SHOWN_ARGUMENTS:
                value = parsed.get(key)
                if isinstance(value, str) and value.strip():
                    shown = value
                    break
        if self.tool == "bash" and shown:
            return clip(shown)
        return clip(f"{self.tool} {shown}".strip())

    @property
    def line(self) -> str:
        """The step as channels show it: "🔧 `ls -la`" (a backtick inside would end the code)."""
        return msg.PROGRESS_TOOL_LINE.format(label=self.label.replace("`", "'"))


StepWatcher = Callable[[ToolStep], Awaitable[None]]


class ToolSteps:
    """Built once in the composition root; the agent emits, channels watch their turns.

    Each instance has its own context variable: a channel shows the steps of the agent it
    was given, and one built without it (`ToolSteps()` by default) shows nothing."""

    def __init__(self) -> None:
        self._watcher: contextvars.ContextVar[StepWatcher | None] = contextvars.ContextVar(
            f"rumi_step_watcher_{id(self):x}", default=None)

    def watch(self, watcher: StepWatcher) -> None:
        """Steps of turns started later in the current task go to `watcher` (for a task that
        runs one turn and ends, like a Telegram update's)."""
        self._watcher.set(watcher)

    @contextlib.contextmanager
    def watching(self, watcher: StepWatcher) -> Iterator[None]:
        """Steps of turns started inside this block go to `watcher`."""
        token = self._watcher.set(watcher)
        try:
            yield
        finally:
            self._watcher.reset(token)

    async def emit(self, step: ToolStep) -> None:
        watcher = self._watcher.get()
        if watcher is None:
            return
        try:
            await watcher(step)
        except Exception:
            log.exception("showing a tool step in chat %s failed", step.chat_id)


def clip(text: str, width: int = LABEL_MAX_CHARS) -> str:
    """First line, whitespace folded, at most `width` characters."""
    lines = text.strip().splitlines() or [""]
    flat = " ".join(lines[0].split())
    if len(lines) > 1 or len(flat) > width:
        flat = flat[: width - 1].rstrip() + "…"
    return flat

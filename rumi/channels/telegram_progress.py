"""Progress of a long turn in Telegram: one status message, edited as tools run.

"typing…" says Rumi is busy but not on what; a turn that runs ten commands can take a minute.
So once a turn has run a tool and has been going for `after` seconds, one status message is
sent ("⏳ Working…" and "🔧 `ls -la`"), later steps edit it, and once the answer is out it is
finalised ("✔️ Done (3 steps):" over the same lines), a record of what ran. A quick turn (a
`remember` and an answer) leaves no message at all: progress is for long turns.

Telegram allows about one message per second per chat and punishes more with 429s, so every
send and edit of a chat goes through one `ChatPacer` (at most one call per `min_interval`
seconds per chat); a 429's `retry_after` is waited out (capped) and the edit tried again,
"message is not modified" counts as done, and any other failure ends the display for that
turn (logged) without touching the answer: progress is a courtesy, never a reason to fail.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import warnings
from typing import Any

from telegram.constants import ParseMode
from telegram.error import BadRequest, RetryAfter, TelegramError

from rumi import messages as msg
from rumi.base.progress import ToolStep
from rumi.channels.formatting import markdown_to_html

log = logging.getLogger(__name__)

MIN_EDIT_INTERVAL = 1.5   # seconds between two calls for the same chat
MAX_RETRY_WAIT = 30.0
MAX_LINES = 15            # older steps fold into "… and N more steps"
SHOW_AFTER = 3.0          # a turn shorter than this needs no status message


class ChatPacer:
    """At most one progress call per chat every `min_interval` seconds (shared by turns)."""

    def __init__(self, min_interval: float = MIN_EDIT_INTERVAL) -> None:
        self.min_interval = min_interval
        self._next: dict[int, float] = {}

    async def wait(self, chat_id: int) -> None:
        delay = self.due(chat_id)
        if delay > 0:
            await asyncio.sleep(delay)
        self._next[chat_id] = time.monotonic() + self.min_interval

    def due(self, chat_id: int) -> float:
        """Seconds until a call for this chat may go (0: now)."""
        return max(0.0, self._next.get(chat_id, 0.0) - time.monotonic())

    def hold(self, chat_id: int, seconds: float) -> None:
        """Telegram asked for a pause (429): nothing for this chat before it ends."""
        self._next[chat_id] = max(self._next.get(chat_id, 0.0), time.monotonic() + seconds)


class ProgressMessage:
    """The status message of one turn in one chat."""

    def __init__(self, bot: Any, chat_id: int, pacer: ChatPacer, *,
                 reply_to: int | None = None, after: float = SHOW_AFTER) -> None:
        self.bot = bot
        self.chat_id = chat_id
        self.pacer = pacer
        self.reply_to = reply_to
        self.after = after
        self._started = time.monotonic()
        self._calling = False
        self.lines: list[str] = []
        self.message_id: int | None = None
        self._shown = ""
        self._changed = asyncio.Event()
        self._worker: asyncio.Task[None] | None = None
        self._broken = False
        self._done = False

    async def step(self, step: ToolStep) -> None:
        """Called by the agent's tool-step event: record it; the worker shows it when allowed."""
        self.lines.append(step.line)
        self._changed.set()
        if self._worker is None and not self._broken and not self._done:
            self._worker = asyncio.create_task(self._show_while_running(),
                                               name=f"rumi-progress-{self.chat_id}")

    async def finish(self, *, stopped: bool = False) -> None:
        """The answer is out: stop updating and leave the message as a record of the steps.

        A send or edit under way is let finish (cancelling it could leave a "Working…"
        message whose id we never learnt); one not yet started is dropped."""
        self._done = True
        self._changed.set()
        worker, self._worker = self._worker, None
        if worker is not None:
            finished: set[asyncio.Task[None]] = set()
            if self._calling:
                finished, _ = await asyncio.wait({worker}, timeout=MAX_RETRY_WAIT + 5)
            if not finished:
                worker.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await worker
        if self.message_id is None or self._broken:
            return
        header = msg.PROGRESS_STOPPED if stopped else msg.PROGRESS_DONE
        await self._put(self._text(header.format(steps=msg.progress_steps(len(self.lines)))))

    async def _show_while_running(self) -> None:
        delay = self._started + self.after - time.monotonic()
        if delay > 0:
            await asyncio.sleep(delay)
        while not (self._done or self._broken):
            self._changed.clear()
            self._calling = True
            try:
                await self._put(self._text(msg.PROGRESS_WORKING))
            finally:
                self._calling = False
            await self._changed.wait()

    def _text(self, header: str) -> str:
        lines = self.lines
        if len(lines) > MAX_LINES:
            hidden = len(lines) - MAX_LINES + 1
            lines = [msg.PROGRESS_MORE.format(steps=msg.progress_steps(hidden)),
                     *lines[-(MAX_LINES - 1):]]
        return "\n".join([header, *lines])

    async def _put(self, text: str) -> None:
        """Send the status message, or edit it to `text`; paced, 429s waited out once each."""
        for _ in range(3):
            if text == self._shown or self._broken:
                return
            await self.pacer.wait(self.chat_id)
            if self.message_id is None and self._done:
                return   # the answer is already out: a status message now would come after it
            try:
                await self._call(text)
                self._shown = text
                return
            except RetryAfter as exc:
                wait = min(_seconds(exc), MAX_RETRY_WAIT)
                log.info("telegram flood control on progress in chat %s: %.0fs", self.chat_id,
                         wait)
                self.pacer.hold(self.chat_id, wait)
            except BadRequest as exc:
                if "not modified" in str(exc).lower():
                    self._shown = text
                    return
                self._give_up(exc)
                return
            except TelegramError as exc:
                self._give_up(exc)
                return
        self._give_up(RuntimeError("still flood-limited"))

    async def _call(self, text: str) -> None:
        html = markdown_to_html(text)
        if self.message_id is None:
            sent = await self.bot.send_message(self.chat_id, html, parse_mode=ParseMode.HTML,
                                               reply_to_message_id=self.reply_to,
                                               disable_notification=True)
            self.message_id = int(sent.message_id)
        else:
            await self.bot.edit_message_text(html, chat_id=self.chat_id,
                                             message_id=self.message_id,
                                             parse_mode=ParseMode.HTML)

    def _give_up(self, exc: BaseException) -> None:
        log.warning("progress message in chat %s stopped: %s", self.chat_id, exc)
        self._broken = True


def _seconds(exc: RetryAfter) -> float:
    with warnings.catch_warnings():  # int today, timedelta in PTB's next major
        warnings.simplefilter("ignore", DeprecationWarning)
        wait = exc.retry_after
    return wait.total_seconds() if hasattr(wait, "total_seconds") else float(wait)

"""A private chat's answer growing in a Telegram draft while the model writes it.

Bot API `sendMessageDraft` (9.5; text optional since 10.0) shows a preview in a private chat
that the person sees grow; it vanishes about 30 s after its last update or as soon as a real
message arrives, and only `sendMessage` makes the answer stay. So:

- the agent's text (`rumi.base.answer_text`) and tool steps only change what the draft should
  show; one worker task per turn sends it, at most once per `interval` per chat (Telegram asks
  bots for about one message a second per chat and answers more with 429s; an animated draft
  every second reads as smooth), and refreshes it every `refresh` seconds when nothing changed
  so it never expires under a long tool step;
- the tool steps of the turn are shown inside the draft, under the text, instead of in a
  separate status message: a real message mid-turn would make the draft vanish;
- past 4,096 characters the first part is sent as a real message and the rest goes on in a new
  draft; `rest(reply)` is the answer without those parts, so nothing appears twice; each part
  is journaled (`journal`) before it goes out, as the non-streamed answer is, so a crash
  never leaves a part sent that the restart does not know about;
- a new model call (`restart`) replaces the text, and its steps go with it;
- the draft carries `can_stop`/`keep_on_stop` (Bot API 10.3): the person's stop button comes
  back as a `stopped_message_generation` update, which the channel treats as `/stop`.

Drafts are a courtesy: a draft that fails is given up for the turn (logged), never the answer.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import time
import warnings
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

from telegram.constants import ParseMode
from telegram.error import BadRequest, RetryAfter, TelegramError

from rumi.base.answer_text import AnswerText
from rumi.base.progress import ToolStep
from rumi.base.replies import Reply
from rumi.channels.formatting import TELEGRAM_LIMIT, markdown_to_html
from rumi.channels.telegram_send import Sent
from rumi.channels.telegram_send import send as send_reply

log = logging.getLogger(__name__)

DRAFT_INTERVAL = 1.0   # seconds between two draft updates of one chat
DRAFT_REFRESH = 20.0   # an unchanged draft is sent again before Telegram's ~30 s expiry
MAX_RETRY_WAIT = 30.0
MAX_STEP_LINES = 5
STOP_KWARGS = {"can_stop": True, "keep_on_stop": True}
STOPPED_GENERATION = "stopped_message_generation"   # Bot API 10.3; PTB 22.8 lacks it


class DraftAnswer:
    """One turn's draft in one private chat."""

    def __init__(self, bot: Any, chat_id: int, ids: Iterator[int], *,
                 interval: float = DRAFT_INTERVAL, refresh: float = DRAFT_REFRESH,
                 on_draft: Callable[[int], None] | None = None,
                 journal: Callable[[str], Awaitable[Sent | None]] | None = None) -> None:
        self.bot = bot
        self.chat_id = chat_id
        self.ids = ids
        self.interval = interval
        self.refresh = refresh
        self.on_draft = on_draft   # told each draft id used (the stop button names it)
        self.journal = journal   # journals a part before it is sent; records its id after
        self.draft_id = next(ids)
        self.written = ""   # the current model call's text
        self.committed = 0   # how much of `written` went out as real messages
        self.sent_prefix = ""   # `written` up to `committed` when the last part went out
        self.sent_ids: list[int] = []
        self.steps: list[str] = []
        self.calls = 0
        self.used_ids: set[int] = set()
        self._shown = ""
        self._last = 0.0
        self._plain = False
        self._broken = False
        self._changed = asyncio.Event()
        self._finishing = asyncio.Event()
        self._worker: asyncio.Task[None] | None = None

    # -- what the turn tells us (quick: no I/O here) -------------------------------------------

    async def text(self, piece: AnswerText) -> None:
        if piece.restart:
            self.written, self.committed, self.steps = piece.text, 0, []
        else:
            self.written += piece.text
        self._wake()

    async def step(self, step: ToolStep) -> None:
        self.steps.append(step.line)
        self._wake()

    def _wake(self) -> None:
        self._changed.set()
        if self._worker is None and not self._broken:
            self._worker = asyncio.create_task(self._run(), name=f"rumi-draft-{self.chat_id}")

    # -- the end of the turn ----------------------------------------------------------------

    async def finish(self) -> None:
        """Stop drafting (a real message follows). A part being sent is let finish, so it is
        known to be out and not sent again."""
        self._finishing.set()
        self._changed.set()
        worker, self._worker = self._worker, None
        if worker is not None:
            await worker

    def rest(self, reply: Reply) -> Reply:
        """`reply` without the parts already sent as real messages."""
        sent = self.sent_prefix.strip()
        if not sent:
            return reply
        at = reply.text.find(sent)
        if at < 0:
            log.warning("chat %s: the answer changed after part of it was sent; sending it "
                        "whole", self.chat_id)
            return reply
        text = (reply.text[:at] + reply.text[at + len(sent):]).strip()
        return Reply(text, is_error=reply.is_error, markdown=reply.markdown,
                     buttons=reply.buttons, document=reply.document, item_id=reply.item_id,
                     stopped=reply.stopped)

    # -- the worker ---------------------------------------------------------------------------

    async def _run(self) -> None:
        while not (self._finishing.is_set() or self._broken):
            refresh = False
            try:
                await asyncio.wait_for(self._changed.wait(), self.refresh)
            except TimeoutError:
                refresh = True
            if self._finishing.is_set():
                return
            self._changed.clear()
            await self._pace()
            if self._finishing.is_set():
                return
            try:
                await self._commit_overflow()
                text = self._display()
                if text and (text != self._shown or refresh):
                    await self._draft(text)
            except RetryAfter as exc:
                wait = min(_seconds(exc), MAX_RETRY_WAIT)
                log.info("telegram flood control on the draft in chat %s: %.0fs",
                         self.chat_id, wait)
                self._last = time.monotonic() + wait - self.interval
                self._changed.set()
            except TelegramError as exc:
                log.warning("draft in chat %s stopped: %s", self.chat_id, exc)
                self._broken = True

    async def _pace(self) -> None:
        delay = self._last + self.interval - time.monotonic()
        if delay > 0:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._finishing.wait(), delay)

    def _display(self) -> str:
        text = self.written[self.committed:].strip()
        if self.steps:
            lines = self.steps[-MAX_STEP_LINES:]
            text = "\n\n".join(part for part in (text, "\n".join(lines)) if part)
        return text[-TELEGRAM_LIMIT:]

    async def _draft(self, text: str) -> None:
        self._last = time.monotonic()
        self.calls += 1
        self.used_ids.add(self.draft_id)
        if self.on_draft is not None:
            self.on_draft(self.draft_id)
        if not self._plain:
            try:
                await self.bot.send_message_draft(self.chat_id, self.draft_id,
                                                  markdown_to_html(text),
                                                  parse_mode=ParseMode.HTML,
                                                  api_kwargs=STOP_KWARGS)
                self._shown = text
                return
            except BadRequest as exc:
                if "parse" not in str(exc).lower():
                    raise
                self._plain = True   # half-written Markdown: plain text for this draft
        await self.bot.send_message_draft(self.chat_id, self.draft_id, text,
                                          api_kwargs=STOP_KWARGS)
        self._shown = text

    async def _commit_overflow(self) -> None:
        """Past Telegram's limit, the first part goes out as a real message and the rest
        goes on in a new draft."""
        while len(self.written) - self.committed > TELEGRAM_LIMIT:
            part_end = _cut(self.written, self.committed, TELEGRAM_LIMIT - 200)
            part = self.written[self.committed:part_end].strip()
            on_sent = await self.journal(part) if self.journal is not None else None
            self.sent_ids += await send_reply(self.bot, self.chat_id, Reply(part),
                                              on_sent=on_sent)
            self.calls += 1
            self.committed = part_end
            self.sent_prefix = self.written[:part_end]
            self.draft_id = next(self.ids)
            self._shown = ""


class LiveDrafts:
    """The channel's drafts of turns under way: one id sequence (non-zero, never reused)
    and who each shown draft answers, so a stop button names a turn or nothing."""

    def __init__(self, interval: float = DRAFT_INTERVAL) -> None:
        self.interval = interval   # tests shorten it
        self._ids = itertools.count(1)
        self._people: dict[tuple[int, int], int] = {}   # (chat, draft) -> person

    def start(self, bot: Any, chat_id: int, user_id: int, *,
              journal: Callable[[str], Awaitable[Sent | None]] | None = None) -> DraftAnswer:
        def used(draft_id: int) -> None:
            self._people[(chat_id, draft_id)] = user_id

        return DraftAnswer(bot, chat_id, self._ids, interval=self.interval, on_draft=used,
                           journal=journal)

    def forget(self, draft: DraftAnswer) -> None:
        for draft_id in draft.used_ids:
            self._people.pop((draft.chat_id, draft_id), None)

    def stopped(self, event: object) -> tuple[int, int] | None:
        """(chat, person) of a `stopped_message_generation` naming a live draft, else None."""
        if not isinstance(event, dict):
            return None
        try:
            chat_id, draft_id = int(event["chat"]["id"]), int(event["draft_id"])
        except (KeyError, TypeError, ValueError):
            return None
        user_id = self._people.get((chat_id, draft_id))
        return None if user_id is None else (chat_id, user_id)


def _cut(text: str, start: int, limit: int) -> int:
    """Where a part of at most `limit` characters from `start` ends: a paragraph, else a
    line, else a space, else the limit itself."""
    window = text[start:start + limit]
    for mark in ("\n\n", "\n", " "):
        at = window.rfind(mark)
        if at > limit // 2:
            return start + at + len(mark)
    return start + limit


def _seconds(exc: RetryAfter) -> float:
    with warnings.catch_warnings():  # int today, timedelta in PTB's next major
        warnings.simplefilter("ignore", DeprecationWarning)
        wait = exc.retry_after
    return wait.total_seconds() if hasattr(wait, "total_seconds") else float(wait)

"""Sending to Telegram: a `Reply` split ≤ 4096 as HTML with a plain-text fallback, flood
control waited out once, inline keyboards, the "typing…" indicator, the one-line failure."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import warnings
from collections.abc import Awaitable, Callable
from typing import Any

from telegram import InlineKeyboardButton, InlineKeyboardMarkup
from telegram.constants import ChatAction, ParseMode
from telegram.error import BadRequest, RetryAfter, TelegramError

from rumi import messages as msg
from rumi.base.replies import Reply
from rumi.channels.formatting import markdown_to_html, split_message

log = logging.getLogger("rumi.channels.telegram")   # the channel's log lines keep their name

TYPING_EVERY = 4.5
MAX_FLOOD_WAIT = 30.0


Sent = Callable[[int, int], Awaitable[None]]   # (piece number from 0, Telegram's message id)


async def send(bot: Any, chat_id: int, reply: Reply, *, reply_to: int | None = None,
               skip: int = 0, on_sent: Sent | None = None) -> list[int]:
    """Send a `Reply`: text split ≤ 4096 (HTML, plain-text fallback), then any document.

    `reply.buttons` become an inline keyboard on the last text chunk. `skip` pieces already
    went out (an answer finished after a restart: the split is the same for the same text);
    `on_sent` hears each piece's message id as soon as Telegram returns it."""
    ids: list[int] = []
    chunks = split_message(reply.text)
    for n, chunk in enumerate(chunks, start=1):
        if n <= skip:
            reply_to = None
            continue
        markup = keyboard(reply.buttons) if n == len(chunks) else None
        ids.append(await _send_chunk(bot, chat_id, chunk, reply.markdown, reply_to, markup))
        reply_to = None
        if on_sent is not None:
            await on_sent(n - 1, ids[-1])
    if reply.document is not None:
        sent = await bot.send_document(
            chat_id, document=reply.document.data, filename=reply.document.filename,
            caption=reply.document.caption)
        ids.append(sent.message_id)
    return ids


async def _send_chunk(bot: Any, chat_id: int, chunk: str, markdown: bool,
                      reply_to: int | None, markup: InlineKeyboardMarkup | None = None) -> int:
    try:
        return await _send_formatted(bot, chat_id, chunk, markdown, reply_to, markup)
    except RetryAfter as exc:
        with warnings.catch_warnings():  # int today, timedelta in PTB's next major
            warnings.simplefilter("ignore", DeprecationWarning)
            wait = exc.retry_after
        seconds = wait.total_seconds() if hasattr(wait, "total_seconds") else float(wait)
        log.warning("telegram flood control: waiting %.0fs before resending", seconds)
        await asyncio.sleep(min(seconds, MAX_FLOOD_WAIT))
        return await _send_formatted(bot, chat_id, chunk, markdown, reply_to, markup)


async def _send_formatted(bot: Any, chat_id: int, chunk: str, markdown: bool,
                          reply_to: int | None,
                          markup: InlineKeyboardMarkup | None = None) -> int:
    if markdown:
        try:
            sent = await bot.send_message(chat_id, markdown_to_html(chunk),
                                          parse_mode=ParseMode.HTML,
                                          reply_to_message_id=reply_to,
                                          reply_markup=markup)
            return int(sent.message_id)
        except BadRequest as exc:
            if "parse" not in str(exc).lower():
                raise
            log.warning("telegram rejected formatting (%s); resending as plain text", exc)
    sent = await bot.send_message(chat_id, chunk, reply_to_message_id=reply_to,
                                  reply_markup=markup)
    return int(sent.message_id)


def keyboard(rows: list[list[tuple[str, str]]] | None) -> InlineKeyboardMarkup | None:
    """Inline keyboard for `Reply.buttons`; a button's data is the command it sends."""
    if not rows:
        return None
    return InlineKeyboardMarkup([[InlineKeyboardButton(label, callback_data=command)
                                  for label, command in row] for row in rows])


async def report_failure(bot: Any, chat_id: int, what: str) -> None:
    """Details to the log only; the person gets one short line, never a traceback."""
    log.exception("telegram %s in chat %s failed", what, chat_id)
    with contextlib.suppress(Exception):
        await bot.send_message(chat_id, msg.INTERNAL_ERROR)


async def keep_typing(bot: Any, chat_id: int) -> None:
    """Keep "typing…" visible while the core works (Telegram shows it for ~5 s)."""
    while True:
        try:
            await bot.send_chat_action(chat_id, ChatAction.TYPING)
        except TelegramError as exc:
            log.debug("typing indicator failed: %s", exc)
        await asyncio.sleep(TYPING_EVERY)

"""Setup step: check the bot token (getMe) and pair the owner with a one-time code.

Pairing replaces "find your numeric id with @userinfobot and edit allowed_users": setup prints
a code, the first person who sends it to the bot in a private chat becomes the owner. The
updates read here are confirmed to Telegram (a last getUpdates with the next offset) so the
bot, once running, does not answer the code message as if it were a question.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import dataclass
from typing import Any

from rumi import messages as msg
from rumi.base.checks import mask
from rumi.channels.pairing import new_code

POLL_SECONDS = 5


class TokenRejected(Exception):
    pass


class TelegramUnreachable(Exception):
    pass


@dataclass(frozen=True)
class BotIdentity:
    id: int
    username: str


@dataclass(frozen=True)
class Owner:
    user_id: int
    name: str


def _bot(token: str, base_url: str, base_file_url: str) -> Any:
    from telegram import Bot
    from telegram.request import HTTPXRequest

    return Bot(token, base_url=base_url, base_file_url=base_file_url,
               request=HTTPXRequest(connect_timeout=10, read_timeout=15),
               get_updates_request=HTTPXRequest(connect_timeout=10,
                                                read_timeout=POLL_SECONDS + 15))


async def check_token(token: str, base_url: str, base_file_url: str) -> BotIdentity:
    from telegram.error import InvalidToken, NetworkError, TelegramError

    bot = _bot(token, base_url, base_file_url)
    try:
        await bot.initialize()
        me = bot.bot
        await bot.shutdown()
    except InvalidToken as exc:
        raise TokenRejected(f"Telegram rejected token {mask(token)} (copy it again from "
                            "@BotFather: /mybots → API Token)") from exc
    except (NetworkError, TelegramError) as exc:
        raise TelegramUnreachable(f"cannot reach Telegram at {base_url}: {exc}") from exc
    return BotIdentity(me.id, me.username)


async def wait_for_owner(token: str, base_url: str, base_file_url: str, code: str, *,
                         wait_seconds: float, language: str) -> Owner | None:
    """Poll until someone sends `code` in a private chat; None after `wait_seconds`.
    `language` "auto": the welcome speaks the sender's Telegram language."""
    from telegram.error import TelegramError

    bot = _bot(token, base_url, base_file_url)
    deadline = time.monotonic() + wait_seconds
    offset: int | None = None
    async with bot:
        while time.monotonic() < deadline:
            wait = max(0, min(POLL_SECONDS, int(deadline - time.monotonic())))
            try:
                updates = await bot.get_updates(offset=offset, timeout=wait,
                                                allowed_updates=["message"])
            except TelegramError:
                await asyncio.sleep(1)
                continue
            for update in updates:
                offset = update.update_id + 1
                message, user = update.message, update.effective_user
                if (message is None or user is None or user.is_bot
                        or message.chat.type != "private"):
                    continue
                if code in (message.text or "").upper().replace(" ", ""):
                    await bot.get_updates(offset=offset, timeout=0)  # confirm: seen by setup
                    spoken = user.language_code if language == "auto" else language
                    with msg.use_language(spoken):
                        welcome = msg.PAIRING_OWNER_WELCOME
                    with contextlib.suppress(TelegramError):
                        await bot.send_message(message.chat_id, welcome)
                    return Owner(user.id, user.full_name)
    return None


def owner_code() -> str:
    return new_code(6)

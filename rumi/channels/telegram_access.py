"""Who the Telegram channel answers: `telegram.allowed_users` or people approved by pairing;
strangers are refused once (or given a pairing code), and in groups only messages that
mention or reply to the bot are for it."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

from telegram import Message, User
from telegram.error import TelegramError

from rumi import messages as msg
from rumi.channels.pairing import PairingError, PairingStore
from rumi.core.assistant import Assistant

log = logging.getLogger("rumi.channels.telegram")   # the channel's log lines keep their name


class TelegramAccess:
    def __init__(self, allowed_users: list[int], pairing: PairingStore | None,
                 assistant: Assistant) -> None:
        self.allowed = set(allowed_users)
        self.pairing = pairing   # strangers get a code `rumi pairing approve` accepts
        self.assistant = assistant
        self._refused: set[int] = set()

    async def is_allowed(self, user_id: int) -> bool:
        """In telegram.allowed_users, or approved with `rumi pairing approve` (read from the
        pairing file only for people not yet known, so approval needs no restart)."""
        if user_id in self.allowed:
            return True
        if self.pairing is not None and await asyncio.to_thread(self.pairing.is_approved,
                                                                user_id):
            self.allowed.add(user_id)
            return True
        return False

    async def refuse(self, message: Message, user: User) -> None:
        # a stranger is no chat yet: their app's language if Rumi speaks it, whatever
        # agent.language says for the people it serves (nothing of theirs is stored)
        spoken = msg.normalize_language(user.language_code)
        msg.set_language(spoken or await self.assistant.language_for(
            str(message.chat_id), user.language_code, remember=False))
        if self.pairing is not None:
            await self._ask_for_pairing(message, user)
            return
        if user.id in self._refused:
            return
        self._refused.add(user.id)
        log.info("refused telegram user %s (not in telegram.allowed_users)", user.id)
        with contextlib.suppress(TelegramError):
            await message.get_bot().send_message(
                message.chat_id, msg.NOT_AUTHORIZED.format(user_id=user.id))

    async def _ask_for_pairing(self, message: Message, user: User) -> None:
        """A stranger gets a code to pass on, at most once an hour; nothing else they send
        is read."""
        assert self.pairing is not None
        try:
            request = await asyncio.to_thread(self.pairing.request, user.id, user.full_name,
                                              user.username or "")
        except (PairingError, OSError) as exc:
            log.warning("pairing request of telegram user %s not stored: %s", user.id, exc)
            return
        if request is None:
            return
        log.info("telegram user %s asked to use the bot: pairing code %s", user.id, request.code)
        with contextlib.suppress(TelegramError):
            await message.get_bot().send_message(
                message.chat_id, msg.PAIRING_ASK.format(code=request.code))


def addressed(message: Message, text: str, bot: Any) -> tuple[bool, str]:
    """In groups, only messages that mention the bot or reply to it are for us; the text
    comes back without the mention (and `/cmd@bot` as `/cmd`)."""
    username = (bot.username or "").lower()
    mention = f"@{username}"
    reply = message.reply_to_message
    replied = reply is not None and reply.from_user is not None and reply.from_user.id == bot.id
    first, _, rest = text.partition(" ")
    if first.startswith("/") and "@" in first:
        name, _, target = first.partition("@")
        if target.lower() != username:
            return False, text
        return True, f"{name} {rest}".strip()
    if username and mention in text.lower():
        start = text.lower().index(mention)
        return True, (text[:start] + text[start + len(mention):]).strip()
    return replied, text

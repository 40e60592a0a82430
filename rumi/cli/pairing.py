"""`rumi pairing list|approve|deny CODE`: let in (or keep out) people who wrote to the bot.

A stranger's message gets a code (rumi/channels/pairing.py); approving it lets that person in
at once (the running bot reads the pairing file) and adds their id to telegram.allowed_users in
the config file, so the permission is visible where people look for it.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time

from rumi import messages as msg
from rumi.channels.pairing import PairingError, PairingStore, Request
from rumi.cli import add_action, add_group
from rumi.cli.configfile import add_allowed_user, read_document, write_private
from rumi.config import ConfigError, Settings
from rumi.secret_mask import SecretMask


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    sub = add_group(subparsers, "pairing", "approve or deny people who asked to use the bot",
                    "People not in telegram.allowed_users who write to the bot get a code; "
                    "approve it here to let them in (no restart needed).")
    add_action(sub, "list", list_requests, "pending requests")
    for name, handler, text in (("approve", approve, "let this person use the bot"),
                                ("deny", deny, "refuse this person (they hear nothing more)")):
        add_action(sub, name, handler, text).add_argument(
            "code", help="the code the person was given")


def list_requests(args: argparse.Namespace, settings: Settings) -> int:
    state = PairingStore(settings.data_dir).load()
    if not state.pending:
        print("no pending requests")
        return 0
    print("CODE      USER ID       NAME (USERNAME)                 ASKED")
    for request in state.pending:
        who = request.name + (f" (@{request.username})" if request.username else "")
        asked = time.strftime("%Y-%m-%d %H:%M", time.localtime(request.requested_at))
        print(f"{request.code:<9} {request.user_id:<13} {who[:31]:<31} {asked}")
    print("approve with `rumi pairing approve CODE`, refuse with `rumi pairing deny CODE`")
    return 0


async def _decide(settings: Settings, code: str, approve: bool) -> Request | None:
    """Apply the owner's decision and say it; None (after one line on stderr) when the code
    is unknown."""
    store = PairingStore(settings.data_dir)
    try:
        request = await asyncio.to_thread(store.approve if approve else store.deny, code)
    except PairingError as exc:
        print(f"rumi: {exc}", file=sys.stderr)
        return None
    verb, after = (("approved", "the running bot accepts them now") if approve
                   else ("denied", "the bot will not answer them"))
    print(f"{verb} {request.name or request.user_id} (Telegram id {request.user_id}); {after}")
    return request


async def approve(args: argparse.Namespace, settings: Settings) -> int:
    request = await _decide(settings, args.code, approve=True)
    if request is None:
        return 1
    if settings.source is not None:
        try:
            doc = await asyncio.to_thread(read_document, settings.source)
            if add_allowed_user(doc, request.user_id):
                await asyncio.to_thread(write_private, settings.source, doc)
                print(f"added {request.user_id} to telegram.allowed_users in {settings.source}")
        except (ConfigError, OSError) as exc:
            print(f"rumi: could not add them to {settings.source} ({exc}); the approval in "
                  "the data dir still lets them in", file=sys.stderr)
    await _tell(settings, request.user_id, msg.PAIRING_APPROVED)
    return 0


async def deny(args: argparse.Namespace, settings: Settings) -> int:
    request = await _decide(settings, args.code, approve=False)
    return 1 if request is None else 0


async def _tell(settings: Settings, chat_id: int, text: str) -> None:
    """Best effort: the person learns they were let in; a failure only prints a note."""
    if not settings.telegram.token:
        return
    from telegram import Bot
    from telegram.error import TelegramError

    bot = Bot(settings.telegram.token, base_url=settings.telegram.base_url,
              base_file_url=settings.telegram.base_file_url)
    try:
        async with bot:
            await bot.send_message(chat_id, text)
    except TelegramError as exc:
        print(SecretMask(settings.secrets())(f"(could not tell them on Telegram: {exc})"),
              file=sys.stderr)

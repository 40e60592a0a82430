"""`rumi run` (Telegram bot, long polling) and `rumi chat` (terminal REPL) on the same core."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import signal
import sys

from rumi import messages as msg
from rumi.app import build_app
from rumi.channels.terminal import TERMINAL_CHAT_ID, TerminalChannel
from rumi.chat_language import locale_language
from rumi.cli import EXIT_CONFIG, add_config_argument
from rumi.cli.datadir_lock import holding_data_dir
from rumi.cli.logs import scrub_logs, setup_logging
from rumi.cli.store import store_start_problem
from rumi.config import ConfigError, Settings
from rumi.memory.archive.safety import ArchiveLimits
from rumi.secret_mask import SecretMask

log = logging.getLogger(__name__)


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    run = subparsers.add_parser("run", help="start the Telegram bot (long polling)")
    add_config_argument(run)
    run.add_argument("--verbose", "-v", action="store_true",
                     help="print every log line here, not only the warnings to act on "
                          "(all go to <data_dir>/logs/rumi.log)")
    run.set_defaults(handler=run_bot, ends_process=True)
    chat = subparsers.add_parser("chat", help="chat with Rumi in this terminal")
    add_config_argument(chat)
    chat.add_argument("--verbose", "-v", action="store_true",
                      help="also print log lines here (they always go to <data_dir>/logs/rumi.log)")
    chat.set_defaults(handler=run_chat, ends_process=True)


def _stop_on_signals(stop: asyncio.Event) -> list[signal.Signals]:
    loop = asyncio.get_running_loop()
    installed = []
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(sig, stop.set)
            installed.append(sig)
    return installed


@holding_data_dir
async def run_bot(args: argparse.Namespace, settings: Settings) -> int:
    """Run until SIGINT/SIGTERM, then shut down cleanly."""
    from telegram.error import InvalidToken, TelegramError

    from rumi.channels.inbox import Inbox
    from rumi.channels.pairing import PairingStore
    from rumi.channels.telegram import TelegramChannel

    settings.require("llm.api_key", "telegram.token")
    if problem := await store_start_problem(settings):
        print(f"rumi: {problem}", file=sys.stderr)
        return EXIT_CONFIG
    verbose = bool(getattr(args, "verbose", False))
    path = setup_logging(settings.log_level, settings.data_dir, console=verbose, warnings=True,
                         secrets=settings.secrets())
    await asyncio.to_thread(scrub_logs, settings.data_dir, settings.secrets())
    app = await build_app(settings)
    channel = TelegramChannel(settings.telegram, app.assistant,
                              Inbox(settings.data_dir / "inbox" / "telegram.jsonl"),
                              pairing=PairingStore(settings.data_dir), steps=app.steps,
                              answer_text=app.answer_text,
                              stop_grace=settings.telegram.stop_grace_seconds)
    app.parts["telegram"] = channel
    stop = asyncio.Event()
    installed = _stop_on_signals(stop)
    try:
        await app.start()
        try:
            await channel.start()
        except InvalidToken as exc:
            raise ConfigError(settings.located(
                "`telegram.token` was rejected by Telegram (check it with @BotFather or run "
                "`rumi setup`)")) from exc
        except TelegramError as exc:
            print(SecretMask(settings.secrets())(
                f"rumi: cannot reach Telegram at {settings.telegram.base_url}: {exc}"),
                file=sys.stderr)
            return 1
        print(f"rumi: bot running with data in {settings.data_dir}, log in {path} "
              "(Ctrl-C to stop)", flush=True)
        await stop.wait()
    finally:
        await channel.stop()
        await app.stop()
        for sig in installed:
            asyncio.get_running_loop().remove_signal_handler(sig)
    return 0


@holding_data_dir
async def run_chat(args: argparse.Namespace, settings: Settings) -> int:
    """A terminal conversation on chat id "terminal"; Ctrl-C or EOF end it cleanly."""
    settings.require("llm.api_key")
    if problem := await store_start_problem(settings):
        print(f"rumi: {problem}", file=sys.stderr)
        return EXIT_CONFIG
    verbose = bool(getattr(args, "verbose", False))
    path = setup_logging(settings.log_level, settings.data_dir, console=verbose,
                         secrets=settings.secrets())
    await asyncio.to_thread(scrub_logs, settings.data_dir, settings.secrets())
    app = await build_app(settings)
    if not verbose and sys.stdin.isatty():   # in the language the chat will speak
        language = await app.assistant.language_for(TERMINAL_CHAT_ID, locale_language(),
                                                    remember=False)
        print(msg.text("TERMINAL_LOG_FILE", language).format(path=path), file=sys.stderr)
    channel = TerminalChannel(app.assistant, exports_dir=settings.data_dir / "exports",
                              max_import_bytes=ArchiveLimits().max_archive_bytes,
                              steps=app.steps, answer_text=app.answer_text)
    stop = asyncio.Event()
    installed = _stop_on_signals(stop)
    await app.start()
    repl = asyncio.create_task(channel.run())
    stopper = asyncio.create_task(stop.wait())
    try:
        await asyncio.wait({repl, stopper}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in (repl, stopper):
            task.cancel()
        await asyncio.gather(repl, stopper, return_exceptions=True)
        await app.stop()
        for sig in installed:
            asyncio.get_running_loop().remove_signal_handler(sig)
    if repl.done() and not repl.cancelled() and repl.exception() is not None:
        raise repl.exception()  # type: ignore[misc]
    return 0

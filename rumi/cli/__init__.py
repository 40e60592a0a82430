"""The `rumi` command: one parser, sub-commands contributed by small modules.

Each module in COMMAND_MODULES has `register(subparsers)`, which adds its parsers and sets
`handler=<callable(args, settings) -> int | Awaitable[int]>` as a default. Config errors end
as one line on stderr and exit code 2.

The long-running commands (`rumi run`, `rumi chat`; `ends_process=True`) end the process as
soon as Rumi has stopped: the interpreter's teardown of the dozens of libraries they import
took 1–1.5 s on a Pi-class machine after "rumi stopped" was already printed, with nothing
left to save. Only when `main()` is the command itself (argv from the command line); called
with an argv list (tests, scripts) it returns the code like any function.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib
import inspect
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

from rumi import __version__
from rumi.caches import data_dir_caches
from rumi.cli.logs import mask_handlers
from rumi.config import DEFAULT_CONFIG_PATH, ConfigError, Settings
from rumi.config_load import load_settings
from rumi.secret_mask import SecretMask, mask_secrets

COMMAND_MODULES = (
    "rumi.cli.bot",
    "rumi.cli.doctor",
    "rumi.cli.sandbox",
    "rumi.cli.memory",
    "rumi.cli.store",
    "rumi.cli.models",
    "rumi.cli.archive",
    "rumi.cli.backup",
    "rumi.cli.setup",
    "rumi.cli.pairing",
)

EXIT_CONFIG = 2


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="rumi", description="Rumi: a self-hosted assistant with a sandbox and a memory."
    )
    parser.add_argument("--version", action="version", version=f"rumi {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name == name:
                continue
            raise
        module.register(sub)
    return parser


def add_config_argument(parser: argparse.ArgumentParser) -> None:
    """Every command that reads settings takes `--config` (default ~/.rumi/config.toml)."""
    parser.add_argument(
        "--config",
        "-c",
        type=Path,
        default=None,
        help=f"config file (default: {DEFAULT_CONFIG_PATH} if it exists)",
    )


def add_group(subparsers: argparse._SubParsersAction, name: str,  # type: ignore[type-arg]
              text: str, description: str | None) -> argparse._SubParsersAction:  # type: ignore[type-arg]
    """`rumi NAME ACTION …`: a command made of actions (memory, models, pairing, sandbox)."""
    parser = subparsers.add_parser(name, help=text, description=description)
    return parser.add_subparsers(dest=f"{name}_command", metavar="ACTION", required=True)


def add_action(sub: argparse._SubParsersAction, name: str, handler: Any,  # type: ignore[type-arg]
               text: str) -> argparse.ArgumentParser:
    """One `rumi GROUP ACTION` command: its help, `--config`, and the function that runs it."""
    action = sub.add_parser(name, help=text, description=text)
    add_config_argument(action)
    action.set_defaults(handler=handler)
    return action


def resolve_settings(args: argparse.Namespace) -> Settings:
    path: Path | None = getattr(args, "config", None)
    if path is None and DEFAULT_CONFIG_PATH.expanduser().exists():
        path = DEFAULT_CONFIG_PATH
    return load_settings(path)


def configure_logging(level: str, secrets: Sequence[str | None] = ()) -> None:
    fresh = not logging.getLogger().handlers
    logging.basicConfig(
        level=getattr(logging, level, logging.INFO),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    if fresh:   # the handler made here (a host's own, such as a test runner's, left alone)
        mask_handlers(logging.getLogger(), SecretMask(secrets))
    for noisy in ("httpx", "httpcore", "apscheduler", "docker", "urllib3"):
        logging.getLogger(noisy).setLevel(logging.WARNING)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    handler = getattr(args, "handler", None)
    if handler is None:
        parser.print_help()
        return 0
    try:
        # `rumi setup` reads and repairs the file itself: a broken one must not stop it
        settings = resolve_settings(args) if getattr(args, "reads_config", True) else Settings()
        if getattr(args, "log_level", None):
            settings.log_level = args.log_level
        configure_logging(settings.log_level, settings.secrets())
        caches = (data_dir_caches(settings.data_dir) if getattr(args, "reads_config", True)
                  else contextlib.nullcontext())
        with caches:   # models and tokenizer cached under data_dir, not /tmp
            result = handler(args, settings)
            if inspect.isawaitable(result):
                result = asyncio.run(result)
    except ConfigError as exc:
        print(f"rumi: config error: {mask_secrets(str(exc))}", file=sys.stderr)
        return EXIT_CONFIG
    except KeyboardInterrupt:
        return 130
    if argv is None and getattr(args, "ends_process", False):
        end_process(int(result or 0))
    return int(result or 0)


def end_process(code: int) -> NoReturn:
    """Exit now that everything is saved: the log file flushed and closed, stdout and stderr
    flushed, then `os._exit` (no module teardown; no thread is left that writes anything)."""
    from rumi.cli.logs import flush_logs

    flush_logs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(code)


if __name__ == "__main__":
    sys.exit(main())

"""The `rumi` command: one parser, sub-commands contributed by small modules.

Each module in COMMAND_MODULES has `register(subparsers)`, which adds its parsers and sets
`handler=<callable(args, settings) -> int | Awaitable[int]>` as a default. Config errors end
as one line on stderr and exit code 2.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import inspect
import logging
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rumi import __version__
from rumi.config import DEFAULT_CONFIG_PATH, ConfigError, Settings
from rumi.config_load import load_settings

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


def configure_logging(level: str) -> None:
    logging.basicConfig(
        level=getattr(logging, level, logging.INFO),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
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
        configure_logging(settings.log_level)
        result = handler(args, settings)
        if inspect.isawaitable(result):
            result = asyncio.run(result)
    except ConfigError as exc:
        print(f"rumi: config error: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    except KeyboardInterrupt:
        return 130
    return int(result or 0)


if __name__ == "__main__":
    sys.exit(main())

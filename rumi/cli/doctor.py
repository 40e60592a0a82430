"""`rumi doctor [--quiet] [--json] [--check NAME] [--config FILE]`.

Prints one line per check (OK / WARN / FAIL) with the fix under anything not OK. Exits 1 when
any check FAILs, so `rumi doctor --quiet` works as the Docker healthcheck: silent when healthy.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import textwrap
from collections import Counter
from typing import TextIO

from rumi.base.checks import CheckResult, Status
from rumi.cli import add_config_argument
from rumi.config import Settings
from rumi.doctor.runner import CHECKS, run_checks

EXIT_FAIL = 1
EXIT_USAGE = 2
# the built-in features' checks, named for --help without importing the app
FEATURE_CHECKS = ("workspace limit", "sqlite", "memory database", "store")


def features() -> list[object]:
    """The app's feature list, built without starting the app: each may add checks."""
    from rumi.app import builtin_features

    return list(builtin_features())


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "doctor", help="check config, services and this host; print fixes",
        description="Check config, Groq, Telegram, Docker, the Pi host, the model and the data "
                    "dir. Exit code 1 if anything FAILs.")
    add_config_argument(parser)
    parser.add_argument("--quiet", "-q", action="store_true",
                        help="print only failures (for healthchecks)")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    parser.add_argument("--check", action="append", metavar="NAME",
                        help=f"run only this check (repeatable): {', '.join(CHECKS)}, and the "
                             f"features': {', '.join(FEATURE_CHECKS)}")
    parser.set_defaults(handler=doctor)


async def doctor(args: argparse.Namespace, settings: Settings) -> int:
    try:
        results = await run_checks(settings, only=args.check, features=features())
    except ValueError as exc:  # an unknown --check NAME
        print(f"rumi doctor: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if args.json:
        json.dump([r.to_dict() for r in results], sys.stdout, ensure_ascii=False, indent=2)
        sys.stdout.write("\n")
    else:
        render(results, sys.stdout, quiet=args.quiet)
    return EXIT_FAIL if any(r.status is Status.FAIL for r in results) else 0


def render(results: list[CheckResult], out: TextIO, *, quiet: bool = False) -> None:
    """A table people can read in a terminal; quiet mode prints failures only."""
    width = min(shutil.get_terminal_size((100, 20)).columns, 120)
    name_w = max(len(r.name) for r in results) if results else 10
    indent = " " * (6 + name_w + 2)
    shown = [r for r in results if r.status is Status.FAIL] if quiet else results
    for result in shown:
        head = f"{result.status.value:<5} {result.name:<{name_w}}  "
        out.write(textwrap.fill(result.detail, width, initial_indent=head,
                                subsequent_indent=indent) + "\n")
        if result.status is not Status.OK and result.fix:
            out.write(textwrap.fill(result.fix, width, initial_indent=indent + "fix: ",
                                    subsequent_indent=indent + "     ") + "\n")
    if not quiet:
        counts = Counter(r.status for r in results)
        out.write(f"\n{len(results)} checks: {counts[Status.OK]} OK, {counts[Status.WARN]} WARN, "
                  f"{counts[Status.FAIL]} FAIL\n")

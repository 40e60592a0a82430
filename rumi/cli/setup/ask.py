"""Questions `rumi setup` asks, or does not ask when it runs non-interactively.

One object decides, so each step reads the same way in both modes: `value(...)` returns the
flag or environment value when given, asks the person otherwise, and in `--non-interactive`
mode fails with one line naming the flag instead of waiting for input that never comes.
"""

from __future__ import annotations

import asyncio
import getpass
import sys
from dataclasses import dataclass

from rumi.base.checks import mask


class SetupAborted(Exception):
    """Setup cannot go on; the message says what to pass or fix (exit code 2)."""


@dataclass
class Asker:
    interactive: bool

    async def value(self, question: str, given: str | None, *, flag: str, secret: bool = False,
                    default: str | None = None, required: bool = True) -> str:
        if given:
            return given
        if not self.interactive:
            if default is not None or not required:
                return default or ""
            raise SetupAborted(f"{question.rstrip(': ')} is needed: pass {flag}")
        if default and secret:
            shown = f" [Enter keeps {mask(default)}]"
        else:
            shown = f" [{default}]" if default else ""
        reader = getpass.getpass if secret else input
        answer = (await asyncio.to_thread(reader, f"{question}{shown}: ")).strip()
        return answer or default or ""

    async def confirm(self, question: str, *, default: bool) -> bool:
        if not self.interactive:
            return default
        hint = "Y/n" if default else "y/N"
        answer = (await asyncio.to_thread(input, f"{question} [{hint}] ")).strip().lower()
        if not answer:
            return default
        return answer in ("y", "yes", "s", "si", "sí")


def say(text: str = "") -> None:
    print(text, flush=True)


def step(title: str) -> None:
    print(f"\n== {title}", flush=True)


def warn(text: str) -> None:
    print(f"   ! {text}", file=sys.stdout, flush=True)

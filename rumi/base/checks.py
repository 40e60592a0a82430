"""What a doctor check is: the value it returns (`CheckResult`), how secrets are shown in it,
and `DoctorCheck`, the named check a feature contributes through `rumi/base/feature.py`.

In the ground layer so a feature (memory, sandbox, a plugin) can declare its checks without
importing `rumi.doctor`, which sits above every feature and only runs them.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from enum import StrEnum

from rumi.config import Settings


class Status(StrEnum):
    OK = "OK"
    WARN = "WARN"
    FAIL = "FAIL"


@dataclass(frozen=True)
class CheckResult:
    """One line of `rumi doctor`: what was checked, what was found, and how to fix it.

    `ok=False` is a failure Rumi cannot run well with; `ok=True, warning=True` is something an
    operator should know about (an SD card, no swap) but that does not stop the bot.
    """

    name: str
    ok: bool
    detail: str
    fix: str = ""
    warning: bool = False

    @property
    def status(self) -> Status:
        if not self.ok:
            return Status.FAIL
        return Status.WARN if self.warning else Status.OK

    def to_dict(self) -> dict[str, str]:
        return {"name": self.name, "status": self.status.value, "detail": self.detail,
                "fix": self.fix}


def passed(name: str, detail: str) -> CheckResult:
    return CheckResult(name, True, detail)


def warned(name: str, detail: str, fix: str) -> CheckResult:
    return CheckResult(name, True, detail, fix, warning=True)


def failed(name: str, detail: str, fix: str) -> CheckResult:
    return CheckResult(name, False, detail, fix)


def mask(secret: str) -> str:
    """Enough of a secret to tell two keys apart, never enough to use one."""
    if not secret:
        return "(empty)"
    if len(secret) <= 8:
        return "…" * 3
    return f"…{secret[-4:]}"


@dataclass(frozen=True)
class DoctorCheck:
    """One line of `rumi doctor` a feature contributes: `run` reads the settings (it may
    block or reach Docker and the disk, never start the app) and says what it found. The
    doctor runs it with a time limit and turns a crash into a FAIL line."""

    name: str
    run: Callable[[Settings], Awaitable[CheckResult]]


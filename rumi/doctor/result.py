"""The value every doctor check returns, and how secrets are shown in it."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


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

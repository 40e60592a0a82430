"""Pairing: a stranger who writes to the bot gets a one-time code, and the person who runs Rumi
lets them in with `rumi pairing approve CODE` instead of looking up numeric Telegram ids.

The requests and the approvals live in one small JSON file in the data dir, replaced
atomically, so the CLI (another process) and the running bot share it without a database; the
bot re-reads it only when an unknown person writes, so approving someone needs no restart.
"""

from __future__ import annotations

import json
import logging
import os
import secrets
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from rumi.fileio import atomic_write_text

log = logging.getLogger(__name__)

CODE_ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"  # no 0/O, 1/I: read aloud or typed on a phone
CODE_LENGTH = 8
NOTICE_EVERY_SECONDS = 3600.0   # one "ask for approval" reply per person per hour at most
MAX_PENDING = 50                # a flood of strangers cannot grow the file without bound


def new_code(length: int = CODE_LENGTH) -> str:
    return "".join(secrets.choice(CODE_ALPHABET) for _ in range(length))


def pairing_path(data_dir: Path) -> Path:
    return Path(data_dir).expanduser() / "pairing.json"


class PairingError(Exception):
    """A pairing command that cannot be done, phrased for the operator."""


@dataclass
class Request:
    code: str
    user_id: int
    name: str
    username: str
    requested_at: float
    notified_at: float = 0.0


@dataclass
class PairingState:
    pending: list[Request] = field(default_factory=list)
    approved: list[int] = field(default_factory=list)
    denied: list[int] = field(default_factory=list)


class PairingStore:
    """Reads and writes `data_dir/pairing.json` (blocking: async callers use to_thread)."""

    def __init__(self, data_dir: Path, *, clock: Any = time.time) -> None:
        self.path = pairing_path(data_dir)
        self._clock = clock
        self._cache: tuple[float, PairingState] | None = None

    def load(self, *, strict: bool = False) -> PairingState:
        """The file's state; a missing file is an empty state. An unreadable one reads as
        empty for the bot's checks (logged), but `strict` (every write) refuses it, so a
        bad edit never has its approvals overwritten."""
        try:
            mtime = self.path.stat().st_mtime
        except FileNotFoundError:
            return PairingState()
        if self._cache is not None and self._cache[0] == mtime:
            return self._cache[1]
        try:
            raw = json.loads(self.path.read_text(encoding="utf-8"))
            state = PairingState(
                pending=[Request(**r) for r in raw.get("pending", [])],
                approved=[int(u) for u in raw.get("approved", [])],
                denied=[int(u) for u in raw.get("denied", [])])
        except (OSError, ValueError, TypeError) as exc:
            if strict:
                raise PairingError(f"cannot read {self.path} ({exc}); fix or move it "
                                   "aside, nothing was changed") from exc
            log.warning("cannot read %s (%s): treating it as empty", self.path, exc)
            return PairingState()
        self._cache = (mtime, state)
        return state

    def _save(self, state: PairingState) -> None:
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        atomic_write_text(self.path, json.dumps(
            {"pending": [asdict(r) for r in state.pending], "approved": state.approved,
             "denied": state.denied}, ensure_ascii=False, indent=2) + "\n")
        os.chmod(self.path, 0o600)
        self._cache = None

    def is_approved(self, user_id: int) -> bool:
        return user_id in self.load().approved

    def request(self, user_id: int, name: str = "", username: str = "") -> Request | None:
        """The code this person should quote, or None when they should hear nothing now
        (denied, told within the last hour, or too many strangers waiting)."""
        state = self.load(strict=True)
        if user_id in state.denied or user_id in state.approved:
            return None
        now = self._clock()
        existing = next((r for r in state.pending if r.user_id == user_id), None)
        if existing is not None:
            if now - existing.notified_at < NOTICE_EVERY_SECONDS:
                return None
            existing.notified_at = now
            self._save(state)
            return existing
        if len(state.pending) >= MAX_PENDING:
            return None
        taken = {r.code for r in state.pending}
        code = new_code()
        while code in taken:
            code = new_code()
        made = Request(code, user_id, name[:64], username[:64], now, now)
        state.pending.append(made)
        self._save(state)
        return made

    def _take(self, code: str) -> tuple[PairingState, Request]:
        state = self.load(strict=True)
        wanted = code.strip().upper()
        found = next((r for r in state.pending if r.code == wanted), None)
        if found is None:
            raise PairingError(f"no pending request with code {wanted}; `rumi pairing list` "
                               "shows them")
        state.pending.remove(found)
        return state, found

    def approve(self, code: str) -> Request:
        state, found = self._take(code)
        if found.user_id not in state.approved:
            state.approved.append(found.user_id)
        if found.user_id in state.denied:
            state.denied.remove(found.user_id)
        self._save(state)
        return found

    def deny(self, code: str) -> Request:
        state, found = self._take(code)
        if found.user_id not in state.denied:
            state.denied.append(found.user_id)
        self._save(state)
        return found

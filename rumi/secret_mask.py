"""Secrets masked in any text Rumi writes: log lines, records kept on disk, error lines.

Two layers, because neither is enough alone: the secrets this Rumi is configured with (the
bot token, the Groq key, the store's password) are replaced wherever they appear, whatever
their shape (a test token, a key from another provider); and anything *shaped* like a
Telegram bot token (`123456:AA…`, also inside `/bot<token>/` URLs) or a Groq key (`gsk_…`)
is replaced too, so a secret that is not configured here (an old token in an error body, a
key pasted into a message) is not written either.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

MASK = "***"
# Telegram: "<bot id>:<35 characters>"; Groq: "gsk_" and letters/digits
_SHAPES = (re.compile(r"(?<![A-Za-z0-9])\d{3,}:[A-Za-z0-9_-]{30,}"),
           re.compile(r"gsk_[A-Za-z0-9]{8,}"))
_MIN_SECRET = 6   # shorter values are not secrets worth masking everywhere (and would mangle)


class SecretMask:
    """Replaces configured secrets and secret-shaped strings with `***`."""

    def __init__(self, secrets: Iterable[str | None] = ()) -> None:
        self.secrets: tuple[str, ...] = ()
        self._known: re.Pattern[str] | None = None
        self.add(secrets)

    def add(self, secrets: Iterable[str | None]) -> None:
        found = set()
        for secret in secrets:
            if not secret:
                continue
            found.add(secret)
            bot_id, colon, rest = secret.partition(":")
            if colon and bot_id.isdigit():
                found.add(rest)   # a bot token's secret half, also met alone
        found = {s for s in found if len(s) >= _MIN_SECRET}
        # longest first, so a secret containing another is masked whole
        self.secrets = tuple(sorted(set(self.secrets) | found, key=len, reverse=True))
        # any case: some libraries lower-case what they quote (PTB's error texts)
        self._known = (re.compile("|".join(map(re.escape, self.secrets)), re.IGNORECASE)
                       if self.secrets else None)

    def __call__(self, text: str) -> str:
        if self._known is not None:
            text = self._known.sub(MASK, text)
        for shape in _SHAPES:
            text = shape.sub(MASK, text)
        return text


def mask_secrets(text: str) -> str:
    """`text` with anything shaped like a bot token or a Groq key masked."""
    return SecretMask()(text)

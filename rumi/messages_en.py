"""Every user-facing sentence Rumi says on its own, in English.

Same names as `rumi.messages_es`; a name missing here falls back to the Spanish sentence.
"""

from __future__ import annotations


def format_wait(seconds: float) -> str:
    """A wait the way a person says it: "about 45 s", "about 3 min", "about 2 h 10 min"."""
    seconds = max(1, round(seconds))
    if seconds < 90:
        return f"about {seconds} s"
    minutes = round(seconds / 60)
    if minutes < 120:
        return f"about {minutes} min"
    hours, rest = divmod(minutes, 60)
    return f"about {hours} h {rest} min" if rest else f"about {hours} h"


# -- rumi setup and pairing (issue 20) -----------------------------------------------------------
PAIRING_ASK = (
    "🔐 This assistant is private. If you want to use it, ask the person who runs Rumi to "
    "approve code {code} (with `rumi pairing approve {code}`)."
)
PAIRING_OWNER_WELCOME = (
    "✅ Done: you now own this Rumi. Write me anything; /help shows what I can do."
)
PAIRING_APPROVED = "✅ You can talk to me now. Hello! /help shows what I can do."

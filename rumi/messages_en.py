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

# --- time the way people say it (issue 17, item 4) ---
RECALL_ASKED_DAYS_LOG = "Log of the days the person asks about:"
SEARCH_PERIOD = "🗓️ {periods} (in your timezone)"

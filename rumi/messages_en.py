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


# -- progress while a turn runs (terminal indicator, Telegram status message) ----------------

TERMINAL_THINKING = "thinking…"
TERMINAL_LOG_FILE = "(log in {path}; --verbose shows it here)"
PROGRESS_TOOL_LINE = "🔧 `{label}`"
PROGRESS_WORKING = "⏳ Working…"
PROGRESS_DONE = "✔️ Done ({steps}):"
PROGRESS_STOPPED = "⏹️ Stopped ({steps}):"
PROGRESS_MORE = "… and {steps} more"


def progress_steps(count: int) -> str:
    return "1 step" if count == 1 else f"{count} steps"

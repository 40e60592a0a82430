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

# --- groups: whose memory, who may forget it, /memory off|on (issue 15, item 5) ---
FORGET_NOT_YOURS = (
    "⛔ {ids}: that memory is not yours. In a group each person can only forget their own "
    "memories; a group admin can forget any. Nothing was erased."
)
FORGET_OTHERS_LEFT = (
    " (I left {count} memories of other group members alone: only an admin can forget them.)"
)
MEMORY_SWITCH_USAGE = "Usage: /memory (status), /memory off (switch it off) or /memory on."
MEMORY_SWITCH_ADMIN_ONLY = "⛔ In a group only an admin can switch long-term memory on or off."
MEMORY_OFF_DONE = (
    "🔕 Long-term memory is off in this chat: I will learn nothing from the conversation, "
    "write no memories, daily log or snapshots, and bring no saved memories into the "
    "conversation. The conversation still works; what is already saved stays, and /forget "
    "still works. /memory on switches it back on."
)
MEMORY_ON_DONE = (
    "🔔 Long-term memory is on again. What was said while it was off is not learned."
)
MEMORY_ALREADY_OFF = "🔕 Long-term memory was already off in this chat."
MEMORY_ALREADY_ON = "🔔 Long-term memory was already on in this chat."
MEMORY_STATE_ON = "🔔 Long-term memory: on (/memory off switches it off)"
MEMORY_STATE_OFF = "🔕 Long-term memory: off in this chat (/memory on switches it on)"
REMEMBER_MEMORY_OFF = (
    "🔕 Long-term memory is off in this chat, so I saved nothing. /memory on switches it back on."
)
MEMORY_OWNER = "{name}'s"

# issue 14: the conversation search rebuilt from the tapes after a lost database
# (rumi/memory/healing.py)
DB_REBUILT_TAPE = (
    " Your conversation ({count} messages) is whole and /search finds it again."
)
DB_REBUILT_TAPE_ONLY = (
    "🩹 Rumi's database was lost or damaged; your conversation ({count} messages) is whole "
    "and /search finds it again."
)

# -- rumi setup and pairing (issue 20) -----------------------------------------------------------
PAIRING_ASK = (
    "🔐 This assistant is private. If you want to use it, ask the person who runs Rumi to "
    "approve code {code} (with `rumi pairing approve {code}`)."
)
PAIRING_OWNER_WELCOME = (
    "✅ Done: you now own this Rumi. Write me anything; /help shows what I can do."
)
PAIRING_APPROVED = "✅ You can talk to me now. Hello! /help shows what I can do."
# --- time the way people say it (issue 17, item 4) ---
RECALL_ASKED_DAYS_LOG = "Log of the days the person asks about:"
SEARCH_PERIOD = "🗓️ {periods} (in your timezone)"

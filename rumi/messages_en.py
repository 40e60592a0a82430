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

# Redaction: /redact and the question after /forget (rumi/memory/redact_command.py)
FORGOT_ONE = "memory {ids}"
FORGOT_MANY = "{count} memories ({ids})"
FORGOT_HISTORY = " and its history ({count} earlier versions)"
FORGOT_HISTORY_ONE = " and its history (1 earlier version)"
FORGOT_REPLY = (
    "🗑️ Forgotten: {what}. Erased from the database, the search indexes and MEMORY.md; I will "
    "not learn it again by myself. What was said in other words is still in the history: "
    "/redact <text> erases it."
)
REDACTED_TOMBSTONE = "[erased at the user's request]"
REDACT_COMMAND_DESCRIPTION = "Erase a text from the conversation: /redact <text>"
REDACT_USAGE = (
    "Tell me which text to erase: /redact <text>. I remove it from the history, the active "
    "conversation, the daily logs, the snapshots and the memory; every message keeps its "
    "number and time."
)
REDACT_TOO_SHORT = (
    "That text is too short to erase safely (at least {min} characters): it would match "
    "ordinary words. Nothing was erased."
)
REDACT_TOMBSTONE_TEXT = (
    "I can't erase that text: it is part of the erasure mark. Nothing was erased."
)
REDACT_NOTHING = "I didn't find that text in the conversation or the memory; nothing was erased."
REDACT_NOTHING_LEFT = "nothing (it was already gone)"
REDACT_CONFIRM = (
    "That text is in {where}. Erase it? The messages will read «{tombstone}» (they keep their "
    "number and time) and this cannot be undone. Answer /redact yes or /redact no (5 minutes)."
)
REDACT_OFFER = (
    "Shall I also erase the {count} mentions in the history? The messages will read "
    "«{tombstone}». Answer /redact yes or /redact no (5 minutes)."
)
REDACT_OFFER_ONE = (
    "Shall I also erase the mention in the history? The message will read «{tombstone}». "
    "Answer /redact yes or /redact no (5 minutes)."
)
REDACT_YES_BUTTON = "🗑️ Yes, erase"
REDACT_NO_BUTTON = "No"
REDACT_EXPIRED = "No erasure is waiting for an answer (or it expired); ask with /redact <text>."
REDACT_CANCELLED = "All right, I erase nothing from the conversation."
REDACT_DONE = (
    "✂️ Erased: {what}. Every message keeps its number and time; the text is no longer in this "
    "chat's files or indexes and I will not learn it again."
)
REDACT_MENTIONS_ONE = "1 mention in the history"
REDACT_MENTIONS = "{count} mentions in the history"
REDACT_WHERE = " ({parts})"
REDACT_AND = " and "
REDACT_PART_MESSAGES = "messages: {count}"
REDACT_PART_CONTEXT = "active conversation: {count}"
REDACT_PART_DAILY = "daily-log lines: {count}"
REDACT_PART_SNAPSHOTS = "snapshot lines: {count}"
REDACT_PART_NAMES = "snapshot names: {count}"
REDACT_PART_PENDING = "pending extractions: {count}"
REDACT_PART_SECTIONS = "lines of your profile: {count}"
REDACTIONS_COUNT = "Erased at your request: {count} ({messages} messages)"

# groups × redaction: a group's history is everyone's
REDACT_GROUP_ADMIN_ONLY = (
    "⛔ In a group the conversation belongs to everyone: only an admin can erase text from it. "
    "To forget a memory of yours use /forget. Nothing was erased."
)

"""How memories read in replies: `#id key: content (owner's)`, and the small phrases around."""

from __future__ import annotations

from rumi import messages as msg
from rumi.base.chats import Speaker
from rumi.base.tools import ToolContext
from rumi.memory.store.models import Memory


def memory_line(memory: Memory) -> str:
    key = f"{memory.key}: " if memory.key else ""
    owner = ""
    if memory.owner_id is not None:
        name = str(memory.metadata.get("owner_name") or memory.owner_id)
        owner = f" ({msg.MEMORY_OWNER.format(name=name)})"
    return f"#{memory.id} {key}{memory.content}{owner}"

def ids_text(memories: list[Memory]) -> str:
    return ", ".join(f"#{m.id}" for m in memories)

def others_left(others: list[Memory]) -> str:
    """Said when a group member's /forget matched other members' memories too."""
    return msg.FORGET_OTHERS_LEFT.format(count=len(others)) if others else ""

def last_speaker(ctx: ToolContext) -> Speaker | None:
    """Who wrote the message the agent is answering (None in a private chat)."""
    session = ctx.session
    for item in reversed(getattr(session, "items", None) or []):
        if item.role == "user":
            return item.speaker
    return None

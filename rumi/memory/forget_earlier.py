"""`/forget <text>` also reaches the earlier versions of memories, as `/redact` does.

A memory replaced by a newer one (`/remember loro: …` twice) stays as superseded history, and a
MEMORY.md edit keeps the texts it replaced (`metadata["edited_from"]`). `/forget` searched only
the current texts, so it said "nothing matches" while `/redact` still found the text in
"memoria #1": the person believed it gone. Here the same rows `/redact` scans are searched with
the same matching; the earlier versions that hold the text are erased (rows with their own
history, or the pre-edit texts of a current memory), and the current versions, which do not
say it, are kept.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from rumi.memory.redaction.text import Needles
from rumi.memory.store.codec import content_hash
from rumi.memory.store.models import Memory, MemoryStatus

SCAN_LIMIT = 100_000   # as many rows as a /redact scans


@dataclass
class EarlierHits:
    """What holds the text only in the past: whole earlier rows, and current memories whose
    pre-edit texts hold it."""

    rows: list[Memory] = field(default_factory=list)
    edited: list[Memory] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.rows or self.edited)


def _matcher(query: str) -> Any:
    try:
        return Needles([query]).found
    except ValueError:   # shorter than a redaction accepts: a plain, case-blind search
        folded = " ".join(query.split()).casefold()
        return lambda text: bool(folded) and folded in " ".join(text.split()).casefold()


def _edits(memory: Memory) -> list[Any]:
    found = (memory.metadata or {}).get("edited_from", [])
    return found if isinstance(found, list) else []


async def find_earlier(store: Any, chat_id: str, query: str) -> EarlierHits:
    """Earlier versions holding `query` (text, key or pre-edit text, as `/redact` matches)."""
    found = _matcher(query)
    hits = EarlierHits()
    for m in await store.list(chat_id, status=None, limit=SCAN_LIMIT):
        if m.status != MemoryStatus.ACTIVE:
            if found(m.content) or (m.key and found(m.key)) or found(
                    json.dumps(m.metadata or {}, ensure_ascii=False)):
                hits.rows.append(m)
        elif any(isinstance(t, str) and found(t) for t in _edits(m)):
            hits.edited.append(m)
    return hits


async def erase_earlier(store: Any, chat_id: str, query: str, hits: EarlierHits) -> int:
    """Erase them; returns how many earlier versions went (rows, their history, edits)."""
    found = _matcher(query)
    gone = 0
    if hits.rows:
        gone += len(hits.rows) + await store.erase(chat_id, [m.id for m in hits.rows])
    for m in hits.edited:
        dropped = [t for t in _edits(m) if isinstance(t, str) and found(t)]
        gone += len(dropped)
        await store.update(chat_id, m.id, metadata={
            **(m.metadata or {}), "edited_from": [t for t in _edits(m) if t not in dropped]})
        # as a forget of a whole row does: the dropped text is not learned again by itself
        await store.mark_forgotten(chat_id, [content_hash(t, m.key) for t in dropped])
    return gone


def named(hits: EarlierHits) -> str:
    """The ids the reply names: the current memory each earlier version led to, else its own."""
    ids = [m.superseded_by or m.id for m in hits.rows] + [m.id for m in hits.edited]
    return ", ".join(f"#{i}" for i in dict.fromkeys(ids))

"""Which messages are left to learn from: a session remembers the ids already learned.

Kept in the session's metadata (`metadata["memory"]["learned"]`), so the same messages are
never extracted twice, whichever learning point (compaction, session end, /clear) runs first.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rumi.memory.redaction.text import is_tombstone
from rumi.sessions.state import ContextItem, SessionState

META_KEY = "memory"


def learnable(items: Sequence[ContextItem], session: SessionState | None) -> list[ContextItem]:
    """User/assistant messages not learned yet (summaries only repeat what was learned;
    a message the person had redacted is a tombstone with nothing to learn)."""
    done = set(_meta(session).get("learned", [])) if session is not None else set()
    return [i for i in items
            if i.role in ("user", "assistant") and i.kind == "message"
            and (i.content or "").strip() and i.id not in done and not is_tombstone(i.content)]


def _meta(session: SessionState) -> dict[str, Any]:
    return session.metadata.setdefault(META_KEY, {})


def mark_learned(session: SessionState, items: Sequence[ContextItem]) -> None:
    """Remember learned ids, trimmed to ids still in the session (bounded size)."""
    meta = _meta(session)
    alive = {i.id for i in session.items}
    learned = set(meta.get("learned", [])) | {i.id for i in items}
    meta["learned"] = sorted(i for i in learned if i in alive)

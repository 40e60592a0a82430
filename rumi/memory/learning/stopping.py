"""What a stop does with learning: it never waits for the model. The messages idle sessions
have not learned from go to the pending file (`pending`), the lifecycle's at-least-once
queue, and the next start extracts them in the background."""

from __future__ import annotations

import logging
from typing import Any, Protocol

from rumi.memory.learning.extraction import split_windows
from rumi.memory.learning.learned import learnable, mark_learned
from rumi.memory.learning.pending import PendingExtractions
from rumi.sessions.state import SessionState

log = logging.getLogger(__name__)


class Learner(Protocol):
    deferred: PendingExtractions

    async def enabled(self, chat_id: str) -> bool: ...


async def defer_session(learner: Learner, chat_id: str, session: SessionState, *,
                        reason: str) -> int:
    """Record the session's unlearned messages as pending extractions (one record per
    transcript window) and mark them learned; returns how many windows were kept."""
    todo = learnable(session.items, session)
    if not todo:
        return 0
    if not await learner.enabled(chat_id):
        mark_learned(session, todo)   # `/memory off`: never learned, as in `learn`
        return 0
    windows = split_windows(todo)
    for window in windows:
        await learner.deferred.record(chat_id, window, reason, "left for the next start",
                                      quiet=True)
        mark_learned(session, window)
    return len(windows)


async def defer_loaded(learner: Learner, sessions: Any) -> int:
    """`defer_session` for every loaded idle session (a busy one was cancelled: its own
    learning point keeps what it cut). Returns the windows kept."""
    kept = 0
    for chat_id in list(sessions.loaded()):
        session = await sessions.acquire(chat_id)
        if session is None:
            continue
        try:
            kept += await defer_session(learner, chat_id, session, reason="shutdown")
        except Exception:
            log.exception("keeping what chat %s has not learned failed at shutdown", chat_id)
        finally:
            await sessions.release(chat_id)
    return kept

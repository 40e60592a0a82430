"""Memory lifecycle: when Rumi learns, what it does with it, and the jobs that keep it tidy.

Learning points: the context engine's `before_compaction` hook (strict: if saving fails the
compaction is cancelled), session end (`ended` events: /reset, TTL expiry), /clear, daily
rollover and shutdown. Each runs the same extraction; facts/preferences/decisions go through
consolidation into the store, events are appended to today's daily log, MEMORY.md is rewritten.
Items already learned are remembered per session (`metadata["memory"]["learned"]`), so the same
messages are never extracted twice. A failed extraction is recorded in
`memory/pending_extraction.jsonl` with its transcript and retried by a job.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any

from rumi.fileio import atomic_write_bytes
from rumi.memory.files.journal import Journal, utc_now
from rumi.memory.files.markdown_sync import MarkdownSync
from rumi.memory.learning.consolidation import Consolidator, Outcome
from rumi.memory.learning.extraction import (
    Extraction,
    ExtractionFailed,
    Extractor,
    split_windows,
    transcript_speakers,
)
from rumi.memory.learning.learned import learnable, mark_learned
from rumi.memory.learning.pending import PendingExtractions, read_text
from rumi.memory.learning.stopping import defer_loaded
from rumi.memory.store.switch import MemorySwitch
from rumi.paths import ChatPaths, chats_root
from rumi.sessions.state import ContextItem, SessionState

log = logging.getLogger(__name__)

CONSOLIDATION_NAME = "consolidation.json"


class MemoryFlushError(Exception):
    """Saving what compaction would drop failed; the compaction must not happen."""


@dataclass
class LearnResult:
    outcomes: list[Outcome] = field(default_factory=list)
    events: int = 0
    pending: bool = False
    error: str | None = None

    @property
    def saved(self) -> int:
        return sum(1 for o in self.outcomes if o.action in ("ADD", "UPDATE", "SUPERSEDE"))


class MemoryLifecycle:
    """Owns extraction → consolidation → store/daily log/MEMORY.md, and the periodic jobs."""

    def __init__(
        self,
        data_dir: Path,
        *,
        store: Any,
        extractor: Extractor,
        consolidator: Consolidator,
        journal: Journal,
        sync: MarkdownSync | None = None,
        context: Any = None,
        sessions: Any = None,
        optimize_threshold: float = 50.0,
        clock: Callable[[], datetime] = utc_now,
        switch: MemorySwitch | None = None,
    ) -> None:
        self.data_dir = Path(data_dir)
        self.store = store
        self.extractor = extractor
        self.consolidator = consolidator
        self.journal = journal
        self.sync = sync
        self.context = context
        self.sessions = sessions
        self.optimize_threshold = optimize_threshold
        self.clock = clock
        self.switch = switch
        self.dirty: set[str] = set()
        self._dirty_loaded = False
        self._last_day: date = journal.today(clock())
        self.deferred = PendingExtractions(self.data_dir, clock)

    # --- learning ------------------------------------------------------------------------

    async def learn(
        self, chat_id: str, items: Sequence[ContextItem], *, reason: str,
        session: SessionState | None = None, strict: bool = False, day: date | None = None,
    ) -> LearnResult:
        """Extract from `items` and save. `strict`: raise MemoryFlushError instead of deferring.

        A long range is split into transcript-sized windows (one JSON call each) so its head
        is never cut off. Each window is marked learned only once it saved; a failed window
        gets its own pending record. In strict mode (compaction) the first failure stops the
        flush and raises, so nothing unsaved is compacted; windows saved before it stay
        learned and are not extracted twice.
        """
        todo = learnable(items, session)
        result = LearnResult()
        if not todo:
            return result
        if not await self.enabled(chat_id):
            # `/memory off`: never learned, not even after `/memory on`
            if session is not None:
                mark_learned(session, todo)
            return result
        for window in split_windows(todo):
            try:
                error = await self._learn_window(chat_id, window, reason, result, day=day)
            except asyncio.CancelledError:
                await self._left_at_stop(chat_id, window, reason, session, strict)
                raise
            if error is None:
                if session is not None:
                    mark_learned(session, window)
                continue
            await self.deferred.record(chat_id, window, reason, error)
            result.pending, result.error = True, error
            if strict:
                raise MemoryFlushError(error)
            if session is not None:
                mark_learned(session, window)  # the pending file owns this range now
        log.info("learned in chat %s (%s): %d memories, %d events from %d messages",
                 chat_id, reason, result.saved, result.events, len(todo))
        return result

    async def _left_at_stop(self, chat_id: str, window: Sequence[ContextItem], reason: str,
                            session: SessionState | None, strict: bool) -> None:
        """A stop cut this window's extraction: it goes to the pending file (finished at the
        next start) rather than being lost. A compaction's window stays in the context
        instead: the compaction was cancelled with it, so it is learned later as usual."""
        if strict:
            return
        await self.deferred.record(chat_id, window, reason, "stopped before it finished",
                                   quiet=True)
        if session is not None:
            mark_learned(session, window)

    async def enabled(self, chat_id: str) -> bool:
        """Whether this chat keeps long-term memory (`/memory off` says no)."""
        return self.switch is None or await self.switch.enabled(chat_id)

    async def _learn_window(self, chat_id: str, window: Sequence[ContextItem], reason: str,
                            result: LearnResult, *, day: date | None) -> str | None:
        """Extract and save one window; returns the failure reason, or None when saved."""
        try:
            extraction = await self.extractor.extract(window)
        except ExtractionFailed as exc:
            return f"extraction failed: {exc}"
        try:
            await self._save(chat_id, extraction, result, day=day)
        except Exception as exc:
            log.exception("saving learned memories failed in chat %s (%s)", chat_id, reason)
            return f"saving memories failed: {exc}"
        return None

    async def _save(self, chat_id: str, extraction: Extraction, result: LearnResult, *,
                    day: date | None = None) -> None:
        outcomes = await self.consolidator.integrate_many(chat_id, extraction.memories)
        result.outcomes.extend(outcomes)
        if extraction.events:
            await self.journal.append_events(chat_id, extraction.events, day=day)
            result.events += len(extraction.events)
        if any(o.action in ("ADD", "UPDATE", "SUPERSEDE") for o in outcomes):
            await self.mark_dirty(chat_id)
            await self.write_markdown(chat_id)

    async def write_markdown(self, chat_id: str) -> None:
        if self.sync is None:
            return
        try:
            await self.sync.write(chat_id)
        except Exception:
            log.exception("rewriting MEMORY.md of chat %s failed", chat_id)

    async def before_compaction(self, session: SessionState, items: list[ContextItem]) -> None:
        """Context-engine hook: learn what is about to be compacted, or cancel compaction."""
        await self.learn(session.chat_id, items, reason="compaction", session=session,
                         strict=True)

    async def on_session_ended(self, event: Any) -> None:
        """SessionManager `ended` subscriber (/reset, TTL expiry, shutdown ends)."""
        session = getattr(event, "session", None)
        if session is None:
            return
        await self.learn(event.chat_id, session.items, reason=event.reason or "ended",
                         session=session)

    async def clear(self, session: SessionState
                    ) -> tuple[Path | None, LearnResult, list[ContextItem]]:
        """/clear: snapshot the last messages, learn from the context, then empty it.

        Learning comes before clearing so the active history is only dropped once its
        content was saved (or its transcript kept in the pending file for a retry).
        """
        snapshot = None
        if await self.enabled(session.chat_id):
            snapshot = await self.journal.write_snapshot(session.chat_id, session.items)
        result = await self.learn(session.chat_id, session.items, reason="clear",
                                  session=session)
        if self.context is not None:
            removed = await self.context.clear(session)
        else:
            removed = list(session.items)
            session.items.clear()
        mark_learned(session, [])   # keeps only ids still in the context (e.g. pinned ones)
        return snapshot, result, removed

    # --- pending extractions ---------------------------------------------------------------

    async def pending(self, chat_id: str) -> list[dict[str, Any]]:
        return await self.deferred.read(chat_id)

    @property
    def pending_lock(self) -> asyncio.Lock:
        """Held while deferred extractions are retried, which also append to daily logs: a
        redaction holds it while it rewrites those files, so no appended line is lost."""
        return self.deferred.lock

    async def rewrite_pending(
        self, chat_id: str,
        change: Callable[[list[dict[str, Any]]], list[dict[str, Any]]],
    ) -> None:
        """Replace the chat's deferred extractions with `change(records)`, atomically (a
        redaction removes words from transcripts). The caller holds `pending_lock`."""
        await self.deferred.rewrite(chat_id, change)

    async def retry_pending(self) -> int:
        """Job: re-run deferred extractions; a range leaves the file only once saved."""
        done = 0
        for chat_id in await self.deferred.chats():
            if not await self.enabled(chat_id):
                continue   # kept until the chat's memory is on again (or it forgets them)
            async with self.deferred.lock:
                done += await self.deferred.retry_chat(chat_id, self._retry_one)
        return done

    async def _retry_one(self, chat_id: str, record: dict[str, Any]) -> None:
        speakers = transcript_speakers(record["transcript"])
        payload = await self.extractor.extract_text(record["transcript"], group=bool(speakers))
        extraction = Extraction(
            memories=[self.extractor.to_memory(m, speakers)
                      for m in payload.memories
                      if not m.transient],
            events=[e for e in payload.events if e.strip()])
        await self._save(chat_id, extraction, LearnResult())

    # --- jobs ------------------------------------------------------------------------------

    async def flush_pressure(self) -> int:
        """Job: learn from sessions whose pressure crossed the threshold, before compaction."""
        if self.sessions is None or self.context is None:
            return 0
        flushed = 0
        for chat_id in list(self.sessions.loaded()):
            session = await self.sessions.acquire(chat_id)
            if session is None:
                continue  # busy: the engine's own hook covers compaction during a turn
            try:
                await self.context.open(session)
                if self.context.pressure(session) < self.optimize_threshold:
                    continue
                result = await self.learn(chat_id, session.items, reason="pressure",
                                          session=session)
                flushed += 0 if result.pending else 1
            finally:
                await self.sessions.release(chat_id)
        return flushed

    def _consolidation_path(self, chat_id: str) -> Path:
        return ChatPaths(self.data_dir, chat_id).memory_dir / CONSOLIDATION_NAME

    async def _consolidation_state(self, chat_id: str) -> dict[str, Any]:
        text = await asyncio.to_thread(read_text, self._consolidation_path(chat_id))
        try:
            state = json.loads(text) if text else {}
        except json.JSONDecodeError:
            return {}
        return state if isinstance(state, dict) else {}

    async def _save_consolidation_state(self, chat_id: str, state: dict[str, Any]) -> None:
        data = json.dumps(state).encode("utf-8")
        await asyncio.to_thread(atomic_write_bytes, self._consolidation_path(chat_id), data)

    async def mark_dirty(self, chat_id: str) -> None:
        """Note that a chat learned something, on disk too: a restart must not make the
        consolidation job forget which chats to revisit."""
        if chat_id in self.dirty:
            return
        self.dirty.add(chat_id)
        state = await self._consolidation_state(chat_id)
        if not state.get("dirty"):
            await self._save_consolidation_state(chat_id, {**state, "dirty": True})

    async def consolidate(self) -> int:
        """Job: deduplicate chats that learned something since the last run.

        The last run's time is kept per chat in `memory/consolidation.json`, so after a
        restart only memories changed since then are compared (not every pair again).
        """
        if not self._dirty_loaded:
            self._dirty_loaded = True
            root = chats_root(self.data_dir)
            names = await asyncio.to_thread(
                lambda: sorted(p.parent.parent.name
                               for p in root.glob(f"*/memory/{CONSOLIDATION_NAME}")))
            for chat_id in names:
                if (await self._consolidation_state(chat_id)).get("dirty"):
                    self.dirty.add(chat_id)
        removed = 0
        started = self.clock()
        for chat_id in sorted(self.dirty):
            if not await self.enabled(chat_id):
                continue   # stays dirty: no MEMORY.md rewrite while memory is off
            self.dirty.discard(chat_id)
            state = await self._consolidation_state(chat_id)
            since = _parse_time(state.get("consolidated_at"))
            count = await self.consolidator.deduplicate_chat(chat_id, since)
            await self._save_consolidation_state(chat_id, {
                "consolidated_at": (started - timedelta(minutes=1)).isoformat(),
                "dirty": chat_id in self.dirty})
            if count:
                removed += count
                await self.write_markdown(chat_id)
        return removed

    async def purge(self) -> int:
        """Job: expire memories past their TTL (the store rebuilds vector indexes)."""
        expired = await self.store.purge_expired(self.clock())
        if expired:
            for chat_id in await self.store.chats():
                if await asyncio.to_thread(ChatPaths(self.data_dir, chat_id).memory_md.exists):
                    await self.write_markdown(chat_id)
        return expired

    async def daily_rollover(self) -> bool:
        """Job: when the local day changes, close yesterday: learn idle sessions into its log."""
        today = self.journal.today(self.clock())
        if today == self._last_day:
            return False
        previous, self._last_day = self._last_day, today
        if self.sessions is None:
            return True
        for chat_id in list(self.sessions.loaded()):
            session = await self.sessions.acquire(chat_id)
            if session is None:
                continue
            try:
                await self.learn(chat_id, session.items, reason="rollover", session=session,
                                 day=previous)
            finally:
                await self.sessions.release(chat_id)
        return True

    async def shutdown(self) -> None:
        """At a stop, what idle sessions have not learned goes to the pending file, without
        asking the model: a stop is immediate, and the next start extracts it."""
        if self.sessions is not None:
            await defer_loaded(self, self.sessions)

def _parse_time(value: Any) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value)
    except ValueError:
        return None

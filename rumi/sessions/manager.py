"""One session per chat: a lock so a chat handles one message at a time, JSON on disk, TTL.

Busy policy: a message arriving while its chat is busy is *queued*, not dropped. The caller
(`Assistant`) tells the person "⏳ …" and then waits its turn on the chat's FIFO lock, so every
message is answered in order. Only when more than `sessions.max_queued_messages` are already
waiting is the person asked to resend later (nothing is stored for that message).

On disk a session is `session.json`, a snapshot written atomically (temp file + fsync +
rename), plus `session.journal.jsonl`, one fsynced line per save with only what changed (see
`rumi.sessions.persist`: rewriting the whole file per message wore SD cards). All file work
runs off the event loop. A corrupt snapshot is moved aside as `session.json.corrupt-<timestamp>`
with a warning and a fresh session starts; the immutable tape (`.smma/session_log.jsonl`) still
holds the full history.
"""

from __future__ import annotations

import asyncio
import logging
import os
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

from rumi.base.chats import validate_chat_id
from rumi.config import SessionSettings
from rumi.paths import ChatPaths
from rumi.sessions import persist
from rumi.sessions.events import SessionEvent, SessionEvents
from rumi.sessions.state import SessionState, utc_now

log = logging.getLogger(__name__)


class QueueFull(Exception):
    """Too many messages are already waiting for this chat."""


@dataclass
class _Chat:
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    waiting: int = 0
    task: asyncio.Task[object] | None = None
    session: SessionState | None = None
    releases: int = 0
    image: persist.Image | None = None  # what the files hold, for the next save's diff
    save_lock: asyncio.Lock = field(default_factory=asyncio.Lock)


class SessionManager:
    """Owns every chat's `SessionState`: loading, locking, saving, expiring, ending."""

    def __init__(self, data_dir: Path, settings: SessionSettings) -> None:
        self.data_dir = Path(data_dir).expanduser()
        self.settings = settings
        self.events = SessionEvents()
        self._chats: dict[str, _Chat] = {}
        self._load_lock = asyncio.Lock()
        self._writes: set[asyncio.Task[None]] = set()  # a shielded write may outlive its caller

    # -- access ------------------------------------------------------------------------------

    def paths(self, chat_id: str) -> ChatPaths:
        return ChatPaths(self.data_dir, chat_id)

    def is_busy(self, chat_id: str) -> bool:
        chat = self._chats.get(chat_id)
        return chat is not None and chat.lock.locked()

    def queued(self, chat_id: str) -> int:
        chat = self._chats.get(chat_id)
        return chat.waiting if chat else 0

    def loaded(self) -> list[str]:
        return [cid for cid, chat in self._chats.items() if chat.session is not None]

    def is_loaded(self, chat_id: str) -> bool:
        chat = self._chats.get(chat_id)
        return chat is not None and chat.session is not None

    async def get(self, chat_id: str) -> SessionState:
        """The chat's session, loaded lazily from disk or created (firing `created`).

        Does not take the chat lock: use it for read-only views such as /status.
        """
        chat = self._chat(chat_id)
        if chat.session is not None:
            return chat.session
        async with self._load_lock:
            if chat.session is None:
                chat.session = await self._load_or_create(chat_id)
        return chat.session

    async def acquire(self, chat_id: str, *, wait: bool = False) -> SessionState | None:
        """Lock the chat and return its session.

        With `wait=False`, returns None at once when the chat is busy (the caller says "⏳").
        With `wait=True`, queues behind the running message (FIFO) or raises `QueueFull`.
        """
        chat = self._chat(chat_id)
        if chat.lock.locked():
            if not wait:
                return None
            if chat.waiting >= self.settings.max_queued_messages:
                raise QueueFull(chat_id)
            chat.waiting += 1
            try:
                await chat.lock.acquire()
            finally:
                chat.waiting -= 1
        else:
            await chat.lock.acquire()
        try:
            return await self.get(chat_id)
        except BaseException:
            chat.lock.release()
            raise

    async def release(self, chat_id: str, *, save: bool = True) -> None:
        """Save the session and unlock the chat. Safe to call once per successful acquire."""
        chat = self._chats.get(chat_id)
        if chat is None or not chat.lock.locked():
            log.warning("release of chat %s that is not locked ignored", chat_id)
            return
        chat.task = None
        try:
            if save and chat.session is not None:
                chat.session.touch()
                await self.save(chat.session)
        except Exception:
            log.exception("saving session of chat %s failed", chat_id)
        finally:
            chat.releases += 1
            chat.lock.release()

    def set_task(self, chat_id: str, task: asyncio.Task[object] | None) -> None:
        """Register the task doing the chat's work now, so /stop can cancel it."""
        self._chat(chat_id).task = task

    def stop(self, chat_id: str) -> bool:
        """Cancel the chat's running task (the task's own `finally` releases the lock once)."""
        chat = self._chats.get(chat_id)
        if chat is None or chat.task is None or chat.task.done():
            return False
        chat.task.cancel()
        return True

    async def save(self, session: SessionState) -> None:
        """Persist the session durably: a journal line with what changed, or a new snapshot.

        The state is captured here, on the event loop (nothing mutates it mid-copy); the
        writing and fsync happen in a worker thread, one save per chat at a time. Cancelling
        the caller cannot stop that thread, so the write and the image update run as one
        shielded task: otherwise the image would describe files that are gone, and the next
        save's line would be diffed against them (or tagged with a replaced snapshot's token).
        """
        chat = self._chat(session.chat_id)
        path = self.paths(session.chat_id).session_json
        write = asyncio.create_task(self._write(chat, path, persist.capture(session)))
        self._writes.add(write)
        write.add_done_callback(self._writes.discard)
        try:
            await asyncio.shield(write)
        except asyncio.CancelledError:
            write.add_done_callback(_log_orphaned_failure)  # nobody is left to see it fail
            raise

    async def rewrite(self, session: SessionState) -> None:
        """Save as a fresh snapshot and delete the journal: after a redaction no journal line
        may keep the old text. The caller holds the chat lock."""
        chat = self._chat(session.chat_id)
        async with chat.save_lock:
            chat.image = None
        await self.save(session)

    async def _write(self, chat: _Chat, path: Path, captured: persist.Captured) -> None:
        async with chat.save_lock:
            chat.image = await asyncio.to_thread(persist.save, path, chat.image, *captured)

    # -- lifecycle ---------------------------------------------------------------------------

    async def end(self, chat_id: str, reason: str) -> bool:
        """End the chat's session: fire `<reason>` (if a known kind) then `ended`, drop it.

        The next message starts a fresh session. The caller must hold the chat lock or the
        chat must be idle. Returns False when there was no session to end.
        """
        chat = self._chat(chat_id)
        session = chat.session
        path = self.paths(chat_id).session_json
        if session is None and not await asyncio.to_thread(path.exists):
            return False
        if session is None:
            session = await self.get(chat_id)
        if reason in ("expired", "reset"):
            await self.events.emit(SessionEvent(reason, chat_id, session, reason=reason))  # type: ignore[arg-type]
        await self.events.emit(SessionEvent("ended", chat_id, session, reason=reason))
        chat.session = None
        await self._remove_files(chat, path)
        log.info("session of chat %s ended (%s)", chat_id, reason)
        return True

    async def emit(self, event: SessionEvent) -> None:
        await self.events.emit(event)

    def is_expired(self, session: SessionState, now: datetime | None = None) -> bool:
        now = now or utc_now()
        try:
            last = datetime.fromisoformat(session.last_active.replace("Z", "+00:00"))
        except ValueError:
            return True
        if last.tzinfo is None:
            last = last.replace(tzinfo=UTC)
        return now - last > timedelta(minutes=self.settings.ttl_minutes)

    async def expire_idle(self, now: datetime | None = None) -> list[str]:
        """End every loaded, idle session whose TTL passed (the scheduler's cleanup job)."""
        ended = []
        for chat_id in list(self._chats):
            chat = self._chats[chat_id]
            if chat.session is None or chat.lock.locked() or chat.waiting:
                continue
            if not self.is_expired(chat.session, now):
                continue
            session = await self.acquire(chat_id)
            if session is None:
                continue
            try:
                if self.is_expired(session, now) and await self.end(chat_id, "expired"):
                    ended.append(chat_id)
            finally:
                await self.release(chat_id, save=False)
        for chat_id in ended:
            chat = self._chats.get(chat_id)
            if chat is not None and chat.session is None and not chat.lock.locked():
                del self._chats[chat_id]
        return ended

    async def cancel_all(self) -> None:
        """Cancel every running chat task (shutdown); their `finally` blocks save and release."""
        tasks = [c.task for c in self._chats.values() if c.task is not None and not c.task.done()]
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)

    async def save_all(self) -> None:
        """Save every idle session, then wait for writes whose callers were cancelled (so a
        shutdown does not cut them off)."""
        for chat in list(self._chats.values()):
            if chat.session is not None and not chat.lock.locked():
                await self.save(chat.session)
        await asyncio.gather(*list(self._writes), return_exceptions=True)

    # -- internals ---------------------------------------------------------------------------

    def _chat(self, chat_id: str) -> _Chat:
        chat = self._chats.get(chat_id)
        if chat is None:
            validate_chat_id(chat_id)
            chat = self._chats[chat_id] = _Chat()
        return chat

    async def _remove_files(self, chat: _Chat, path: Path) -> None:
        async with chat.save_lock:  # not while a save of the same chat is being written
            chat.image = None
            await asyncio.to_thread(persist.remove, path)

    async def _load_or_create(self, chat_id: str) -> SessionState:
        path = self.paths(chat_id).session_json
        loaded = await asyncio.to_thread(_read_session, path, chat_id)
        session = loaded[0] if loaded else None
        if session is not None and self.is_expired(session):
            log.info("stored session of chat %s expired while Rumi was away", chat_id)
            chat = self._chat(chat_id)
            chat.session = session
            await self.events.emit(SessionEvent("expired", chat_id, session, reason="expired"))
            await self.events.emit(SessionEvent("ended", chat_id, session, reason="expired"))
            chat.session = None
            await self._remove_files(chat, path)
            session = None
        elif loaded is not None:
            self._chat(chat_id).image = loaded[1]
        if session is None:
            session = SessionState(chat_id=chat_id)
            await self.save(session)
            await self.events.emit(SessionEvent("created", chat_id, session))
        return session


def _read_session(path: Path, chat_id: str
                  ) -> tuple[SessionState, persist.Image | None] | None:
    """The stored session and the image its next save diffs against; None: start fresh."""
    try:
        loaded = persist.read_session(path, chat_id)
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
        aside = path.with_name(f"{path.name}.corrupt-{stamp}")
        os.replace(path, aside)
        journal = persist.journal_path(path)
        if journal.exists():
            os.replace(journal, journal.with_name(f"{journal.name}.corrupt-{stamp}"))
        log.warning("session file of chat %s is corrupt (%s); moved aside to %s, starting fresh",
                    chat_id, type(exc).__name__, aside.name)
        return None
    if loaded is None:
        return None
    return loaded.session, persist.image_after_load(loaded)


def _log_orphaned_failure(write: asyncio.Task[None]) -> None:
    if not write.cancelled() and write.exception() is not None:
        log.error("saving a session failed after its caller was cancelled",
                  exc_info=write.exception())

"""Several Rumis, one store: each hears what the others changed (LISTEN/NOTIFY, not a poll).

Every write to a chat's memories sends `NOTIFY rumi_memory` with the chat and the writing
Rumi's name, delivered when its transaction commits. `ChangeListener` keeps one connection
listening and calls back for changes made by *other* Rumis, so the memory wiring re-renders
that chat's MEMORY.md: a `/forget` on one bot takes the line out of the other's file within
a second or two. A dropped connection (PostgreSQL restarting) is reopened with a backoff;
changes made while it was down are caught by the next write or start-up sync.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import psycopg

log = logging.getLogger(__name__)

CHANNEL = "rumi_memory"
_BACKOFF = (0.5, 1.0, 2.0, 5.0)


async def announce(conn: Any, store_name: str, chat: str) -> None:
    """Tell the other Rumis that `chat`'s memories changed (sent when `conn`'s transaction
    commits; at once in autocommit)."""
    await conn.execute("SELECT pg_notify(%s, %s)",
                       (CHANNEL, json.dumps({"chat": chat, "by": store_name})))


class ChangeListener:
    """A task owned by the store: LISTEN on its own connection, call back per change."""

    def __init__(self, url: str, name: str, where: str,
                 on_change: Callable[[str], Awaitable[None]]) -> None:
        self._url = url
        self.name = name
        self.where = where
        self.on_change = on_change
        self._task: asyncio.Task[None] | None = None
        self.ready = asyncio.Event()   # set while listening (tests wait for it)

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name="rumi-store-listen")

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def _run(self) -> None:
        failures = 0
        while True:
            try:
                async with await psycopg.AsyncConnection.connect(self._url,
                                                                 autocommit=True) as conn:
                    await conn.execute(f"LISTEN {CHANNEL}")
                    self.ready.set()
                    failures = 0
                    async for note in conn.notifies():
                        await self._deliver(note.payload)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - the server went away: listen again
                self.ready.clear()
                delay = _BACKOFF[min(failures, len(_BACKOFF) - 1)]
                failures += 1
                log.warning("store changes from %s: listening stopped (%s); again in %.1f s",
                            self.where, type(exc).__name__, delay)
                await asyncio.sleep(delay)

    async def _deliver(self, payload: str) -> None:
        try:
            change = json.loads(payload)
            chat, by = str(change["chat"]), change.get("by")
        except (ValueError, KeyError, TypeError):
            log.warning("store changes: unreadable notification ignored")
            return
        if by == self.name:
            return
        try:
            await self.on_change(chat)
        except Exception:
            log.exception("applying a change of chat %s made by %s failed", chat, by)

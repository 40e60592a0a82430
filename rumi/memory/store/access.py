"""Access stats written behind recall: the answer does not wait for the write.

Every recall that returns memories counts the access (`access_count`, `last_accessed_at`)
and, when it comes on another day of use (`days.py`), the day (`access_days`, which CTO
scoring's frequency term reads, and `access_day_at`). Written inside `recall()`, that was a write
statement and its commit on SQLite's one connection before the answer came back: the
costliest statement of a recall at 100k memories after BM25 (docs/benchmarks.md "Recall
latency"). `AccessLog` keeps the touches in memory and writes them a moment later, in the
background, one statement per 500 memories; the store's readers of rows (`apply`) add what is
not written yet, so every read sees every touch at once, written or not.

Whether a use counts as a day depends on the last day counted, which only the row knows:
each memory's uses are kept in order and written one use per statement (a batch takes as many
statements as its most-used memory has distinct moments, almost always one), and `apply`
replays them with the same rule, so a read sees the score the write will leave.

What a crash can cost: only the touches not yet written — counts of accesses, never a
memory (the write is an UPDATE of counters of rows that exist; a row forgotten meanwhile
is simply not there to update). Closing the store writes them all (`flush`). A write that
fails (e.g. the database busy beyond its timeout) keeps them for the next one.

Why no explicit transaction: each statement commits by itself, under the store's write lock
(so it never joins another task's open transaction). A read on the same connection then
either ran before the statement (it reads the old counts and adds the pending ones) or after
it (it reads the new counts, and the pending ones were dropped as the statement returned):
aiosqlite runs statements in order and wakes their callers in that order.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Awaitable, Callable, Iterable
from datetime import datetime
from typing import Any

from rumi.memory.store import days
from rumi.memory.store.codec import ts
from rumi.memory.store.models import Memory

log = logging.getLogger(__name__)

CHUNK = 500
RETRY_SECONDS = 1.0


@dataclasses.dataclass
class _Use:
    when: datetime
    count: int   # accesses at that moment


@dataclasses.dataclass
class _Touch:
    chat: str
    uses: list[_Use]   # in the order they came

    def add(self, uses: list[_Use]) -> None:
        for use in uses:
            if self.uses and self.uses[-1].when == use.when:
                self.uses[-1].count += use.count
            else:
                self.uses.append(use)


Runner = Callable[[str, tuple[Any, ...]], Awaitable[object]]


class AccessLog:
    """Touches of memories not yet written, and the writer that writes them.

    `run(sql, params)` executes one statement (which commits on its own) under the store's
    write lock."""

    def __init__(self, run: Runner) -> None:
        self._run = run
        self._pending: dict[int, _Touch] = {}
        self._writing: dict[int, _Touch] = {}
        self._task: asyncio.Task[None] | None = None
        self._retry: asyncio.Task[None] | None = None
        self._flushing = asyncio.Lock()

    @property
    def pending(self) -> int:
        """Memories with touches not yet written."""
        return len(self._pending) + len(self._writing)

    def touch(self, chat: str, ids: Iterable[int], when: datetime) -> None:
        """Count one access of each of `ids` (once per id, as one UPDATE counted it) at
        `when`, to be written soon in the background."""
        for memory_id in dict.fromkeys(ids):
            known = self._pending.get(memory_id)
            if known is None:
                self._pending[memory_id] = _Touch(chat, [_Use(when, 1)])
            else:
                known.add([_Use(when, 1)])
        if self._pending and self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._write_soon())

    async def _write_soon(self) -> None:
        try:
            await self.flush()
        except Exception:  # noqa: BLE001 - kept for the next try; close() writes them too
            log.warning("access stats not written yet; will retry", exc_info=True)
        finally:
            self._task = None
        if self._pending and self._retry is None:   # a failed write: try again in a while
            self._retry = asyncio.get_running_loop().create_task(self._later())

    async def _later(self) -> None:
        await asyncio.sleep(RETRY_SECONDS)
        self._retry = None
        if self._pending and self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._write_soon())

    async def flush(self) -> None:
        """Write every touch made so far; raises (keeping them) when the write fails."""
        async with self._flushing:
            while self._pending:
                batch = dict(list(self._pending.items())[:CHUNK])
                for memory_id in batch:
                    del self._pending[memory_id]
                self._writing = batch
                try:
                    while batch:   # one use of each memory per statement, in order
                        await self._write(batch)
                        for memory_id in list(batch):   # written: no longer added by `apply`
                            uses = batch[memory_id].uses
                            del uses[0]
                            if not uses:
                                del batch[memory_id]
                except Exception:
                    for memory_id, touch in batch.items():   # back, before newer ones
                        newer = self._pending.get(memory_id)
                        if newer is not None:
                            touch.add(newer.uses)
                        self._pending[memory_id] = touch
                    raise
                finally:
                    self._writing = {}

    async def _write(self, batch: dict[int, _Touch]) -> None:
        """The first use of each memory of `batch`: a day when the last day counted is at
        least `days.DAY_GAP` before it (stamps compared as stored: `codec.ts` sorts as time)."""
        values = ",".join("(?, ?, ?, ?, ?)" for _ in batch)
        params: list[Any] = []
        for memory_id, touch in batch.items():
            use = touch.uses[0]
            params += [memory_id, touch.chat, use.count, ts(use.when), ts(days.since(use.when))]
        new_day = "(access_day_at IS NULL OR access_day_at <= t.column5)"
        await self._run(
            "UPDATE memories SET access_count = access_count + t.column3, "  # noqa: S608
            f"last_accessed_at = t.column4, access_days = access_days + {new_day}, "
            f"access_day_at = CASE WHEN {new_day} THEN t.column4 ELSE access_day_at END "
            f"FROM (VALUES {values}) AS t "
            "WHERE memories.id = t.column1 AND memories.chat_id = t.column2",
            tuple(params))

    async def close(self) -> None:
        """Write what is left, after the background write under way (never cancelled: a
        statement already handed to SQLite may have run, and writing it again would count
        twice)."""
        retry, self._retry = self._retry, None
        if retry is not None:
            retry.cancel()   # only a sleep before the next try
        task = self._task
        if task is not None:
            await asyncio.wait([task])
        await self.flush()

    def touched(self, memory_id: int) -> bool:
        """Whether `apply` may change this memory (it has touches not written yet)."""
        return memory_id in self._pending or memory_id in self._writing

    def apply(self, memory: Memory) -> Memory:
        """`memory` as read, plus its touches not yet written."""
        if not self._pending and not self._writing:
            return memory
        touches = [t for t in (self._writing.get(memory.id), self._pending.get(memory.id))
                   if t is not None and t.chat == memory.chat_id]
        if not touches:
            return memory
        count, day_count, day_at = memory.access_count, memory.access_days, memory.access_day_at
        for touch in touches:
            for use in touch.uses:
                count += use.count
                day_count, day_at = days.after_use(day_count, day_at, use.when)
        return dataclasses.replace(
            memory, access_count=count, last_accessed_at=touches[-1].uses[-1].when,
            access_days=day_count, access_day_at=day_at)

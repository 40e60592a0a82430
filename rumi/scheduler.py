"""All periodic work in one place: APScheduler 3 `AsyncIOScheduler`, owned by the app.

Parts add named interval jobs (session TTL cleanup, memory purge, consolidation…). A job never
overlaps itself (`max_instances=1`, `coalesce=True`), and a failing run is logged and simply
retried at the next tick, so one bad job cannot stop the others or the bot.

Parts may also add one-shot jobs at a moment (`add_at`, reminders): the part keeps the truth in
its own storage and re-adds them at start, so a one-shot job is never persisted here. One that
is already due runs as soon as the scheduler starts, however late (no misfire grace).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from apscheduler.schedulers.asyncio import AsyncIOScheduler

log = logging.getLogger(__name__)

JobFunc = Callable[[], Awaitable[Any]]


@dataclass
class JobStats:
    runs: int = 0
    failures: int = 0
    last_error: str | None = None


class Scheduler:
    """Named async interval jobs; `start()`/`shutdown()` are called by `App`."""

    def __init__(self, timezone: str = "UTC") -> None:
        self._timezone = timezone
        self._scheduler: AsyncIOScheduler | None = None
        self._jobs: dict[str, tuple[JobFunc, float]] = {}
        self._one_shots: dict[str, tuple[JobFunc, datetime]] = {}
        self._locks: dict[str, asyncio.Lock] = {}
        self.stats: dict[str, JobStats] = {}

    @property
    def running(self) -> bool:
        return self._scheduler is not None and self._scheduler.running

    def jobs(self) -> list[str]:
        return sorted(self._jobs)

    def add_interval_job(
        self,
        name: str,
        func: JobFunc,
        *,
        minutes: float | None = None,
        seconds: float | None = None,
    ) -> None:
        """Register `func` to run every `minutes`/`seconds`; may be called before or after start."""
        if name in self._jobs:
            raise ValueError(f"job {name!r} added twice")
        interval = (minutes or 0) * 60 + (seconds or 0)
        if interval <= 0:
            raise ValueError(f"job {name!r} needs a positive interval")
        self._jobs[name] = (func, interval)
        self._locks[name] = asyncio.Lock()
        self.stats[name] = JobStats()
        if self._scheduler is not None:
            self._schedule(name, interval)

    def add_at(self, name: str, func: JobFunc, when: datetime) -> None:
        """Run `func` once at `when` (timezone-aware); replaces a one-shot job of that name.

        A failure is logged, never retried here: the part that added it decides."""
        if when.tzinfo is None:
            raise ValueError(f"job {name!r} needs a timezone-aware time")
        if name in self._jobs:
            raise ValueError(f"job {name!r} is an interval job")
        self._one_shots[name] = (func, when)
        if self._scheduler is not None:
            self._schedule_at(name, func, when)

    def remove_at(self, name: str) -> bool:
        """Forget a one-shot job that has not run yet; False if there was none."""
        if self._one_shots.pop(name, None) is None:
            return False
        if self._scheduler is not None and self._scheduler.get_job(name) is not None:
            self._scheduler.remove_job(name)
        return True

    def pending_at(self) -> list[str]:
        return sorted(self._one_shots)

    async def run_now(self, name: str) -> bool:
        """Run a job immediately (tests, admin commands); returns False if it failed."""
        return await self._run(name, wait=True)

    def start(self) -> None:
        """Start ticking; needs a running event loop."""
        if self._scheduler is not None:
            return
        self._scheduler = AsyncIOScheduler(timezone=self._timezone)
        for name, (_, interval) in self._jobs.items():
            self._schedule(name, interval)
        for name, (func, when) in self._one_shots.items():
            self._schedule_at(name, func, when)
        self._scheduler.start()
        log.info("scheduler started with %d jobs", len(self._jobs))

    async def shutdown(self) -> None:
        """Stop ticking; runs in progress are cancelled (APScheduler cancels their tasks) and
        awaited only for their cleanup."""
        if self._scheduler is None:
            return
        self._scheduler.shutdown(wait=False)
        self._scheduler = None
        for lock in self._locks.values():
            async with lock:
                pass
        log.info("scheduler stopped")

    def _schedule(self, name: str, interval: float) -> None:
        assert self._scheduler is not None
        self._scheduler.add_job(
            self._run,
            "interval",
            seconds=interval,
            args=[name],
            id=name,
            name=name,
            max_instances=1,
            coalesce=True,
            misfire_grace_time=max(1, int(interval)),
            replace_existing=True,
        )

    def _schedule_at(self, name: str, func: JobFunc, when: datetime) -> None:
        assert self._scheduler is not None
        self._scheduler.add_job(self._run_once, "date", run_date=when, args=[name, func],
                                id=name, name=name, misfire_grace_time=None,
                                replace_existing=True)

    async def _run_once(self, name: str, func: JobFunc) -> None:
        if self._one_shots.get(name, (None,))[0] is func:
            del self._one_shots[name]
        try:
            await func()
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("one-shot job %s failed", name)

    async def _run(self, name: str, wait: bool = False) -> bool:
        func, _ = self._jobs[name]
        stats = self.stats[name]
        lock = self._locks[name]
        if lock.locked() and not wait:
            log.debug("job %s still running; skipping this tick", name)
            return True
        async with lock:
            stats.runs += 1
            try:
                await func()
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                stats.failures += 1
                stats.last_error = f"{type(exc).__name__}: {exc}"
                log.exception("scheduled job %s failed; will retry next tick", name)
                return False
        return True

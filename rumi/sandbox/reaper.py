"""Removing this data dir's leftover containers: an earlier run's orphans, this run's at a stop.

Its own job, apart from the per-chat lifecycle in `rumi/sandbox/manager.py`: the owner lock
that tells a running Rumi's containers from a killed one's (`rumi/sandbox/ownerlock.py`), the
cleanup at start that must finish before any chat gets a container, and the stop's removal
within a time budget. Both removals list the same way and remove side by side
(`containers.Removal`); one runs at a time. Every Docker call runs in a thread; engine errors
propagate to the manager, which turns them into `SandboxUnavailable` or a log line.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from pathlib import Path

import docker
from rumi.sandbox import containers, ownerlock
from rumi.sandbox.errors import ENGINE_ERRORS, short
from rumi.sandbox.workspaces import Workspaces

log = logging.getLogger(__name__)

STEP_SECONDS = 0.5   # an unbounded removal is awaited in steps, so a cancel is never held


class Reaper:
    """Sweeps the containers of `instance` that no chat of this run (`live()`) uses."""

    def __init__(self, data_dir: Path, instance: str, run_id: str, workspaces: Workspaces,
                 live: Callable[[], frozenset[str]]) -> None:
        self.data_dir = data_dir
        self.instance = instance
        self.run_id = run_id
        self.workspaces = workspaces
        self.live = live
        self.pending = False   # an orphan cleanup is due before the next container
        self.in_background = False
        self._sweeper: asyncio.Task[None] | None = None
        self._lock = asyncio.Lock()
        self._owner_lock: int | None = None

    async def start(self, *, in_background: bool) -> None:
        """Take the data dir's owner lock; the orphan cleanup is due from now on."""
        self.pending = True
        self.in_background = in_background
        if self._owner_lock is None:
            self._owner_lock = await asyncio.to_thread(ownerlock.take, self.data_dir)

    async def owned_elsewhere(self) -> bool:
        """Another live Rumi holds this data dir's owner lock (this manager does not): its
        containers are in use, never orphans, whatever their run label says."""
        if self._owner_lock is not None:
            return False
        return await asyncio.to_thread(ownerlock.held_elsewhere, self.data_dir)

    async def engine_up(self, client: docker.DockerClient) -> None:
        """The engine answers: the pending cleanup runs now, or in a task when the start
        asked not to wait for it (`ensure` still waits for it before any container)."""
        if not self.pending:
            return
        if not self.in_background:
            await self.remove_orphans(client, only_if_pending=True)
        elif self._sweeper is None or self._sweeper.done():
            self._sweeper = asyncio.create_task(self._sweep_quietly(client),
                                                name="rumi-sandbox-orphans")

    async def _sweep_quietly(self, client: docker.DockerClient) -> None:
        try:
            await self.remove_orphans(client, only_if_pending=True)
        except ENGINE_ERRORS as exc:  # still pending: the next status check or command retries
            log.warning("could not remove orphaned sandboxes: %s", short(exc))

    async def remove_orphans(self, client: docker.DockerClient, *,
                             only_if_pending: bool) -> list[str]:
        """Containers an earlier run of this Rumi left, but this run's and the live ones;
        the live set is read here, on the event loop, not in the worker thread while chats
        change it. At start, also the stale loop devices of this Rumi's images."""
        async with self._lock:
            if only_if_pending and not self.pending:
                return []
            if await self.owned_elsewhere():
                log.info("another running Rumi owns this data dir's sandboxes: none of its "
                         "containers is an orphan, none removed")
                self.pending = False
                return []
            _, removed = await self._remove(client, self.live(), keep_run=self.run_id)
            if only_if_pending:  # the start's cleanup: no chat of this run has a device yet
                detached = await asyncio.to_thread(self.workspaces.detach_stale, client)
                if detached:
                    log.info("detached %d loop device(s) of this Rumi's workspace images: %s",
                             len(detached), ", ".join(detached))
            self.pending = False  # only now: `ensure` waits for the whole cleanup
        if removed:
            log.info("removed %d orphaned sandbox container(s) left by an earlier run",
                     len(removed))
        return removed

    async def remove_own(self, client: docker.DockerClient, budget: float,
                         owned_elsewhere: bool) -> tuple[int, list[str]]:
        """At a stop: every container of this Rumi (only this run's while another Rumi owns
        the data dir), waited for `budget` seconds at most. (found, removed names)."""
        async with self._lock:
            return await self._remove(client, frozenset(), keep_run=None, budget=budget,
                                      only_run=self.run_id if owned_elsewhere else None)

    async def _remove(self, client: docker.DockerClient, live: frozenset[str], *,
                      keep_run: str | None, only_run: str | None = None,
                      budget: float | None = None) -> tuple[int, list[str]]:
        """List the leftovers and remove them side by side: until done (`budget` None) or
        for `budget` seconds (0: none started). (found, removed names)."""
        targets = await asyncio.to_thread(containers.leftovers, client, self.instance,
                                          self.workspaces.is_ours, live, keep_run, only_run)
        if not targets or (budget is not None and budget <= 0):
            return len(targets), []
        removal = containers.Removal(targets)
        if budget is None:
            while not await asyncio.to_thread(removal.wait, STEP_SECONDS):
                pass
        else:
            await asyncio.to_thread(removal.wait, budget)
        return len(targets), removal.done()

    async def cancel(self) -> None:
        """Cancel a background cleanup: what it did not remove, the next start does."""
        if self._sweeper is not None and not self._sweeper.done():
            self._sweeper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._sweeper

    def release(self) -> None:
        """Release the owner lock: this Rumi no longer uses its containers."""
        ownerlock.release(self._owner_lock)
        self._owner_lock = None

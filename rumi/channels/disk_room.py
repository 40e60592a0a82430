"""Waiting for room on a full disk, so a message is answered once there is space again.

A full data dir (no bytes or no inodes left) is not an error to report and forget: the message
waits — unconfirmed to Telegram when even its journal line cannot be written, in the journal
when the turn would not fit (checked before each turn, so a turn is never half saved) or
failed for lack of room — and is answered as soon as a probe write succeeds, without a
restart. The probe runs every `every` seconds in a thread.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

from rumi.fileio import has_room, is_disk_full

log = logging.getLogger(__name__)

ROOM_CHECK_SECONDS = 2.0


class DiskRoom:
    """Waits until `directory`'s filesystem takes a new file again."""

    def __init__(self, directory: Path, every: float = ROOM_CHECK_SECONDS) -> None:
        self.directory = directory
        self.every = every
        self._probing: asyncio.Future[bool] | None = None

    async def has_room(self) -> bool:
        """False only for a full disk: any other trouble with the probe (a directory that
        cannot be made for another reason) must not hold a message back.

        Callers that ask while a probe runs share it and wake in the order they asked: each
        probe's thread would otherwise finish in any order and let a later message of a chat
        overtake an earlier one on its way to the chat's queue."""
        if self._probing is None:
            self._probing = asyncio.ensure_future(self._probe_in_thread())
            self._probing.add_done_callback(self._probed)
        return await asyncio.shield(self._probing)

    def _probed(self, _: asyncio.Future[bool]) -> None:
        self._probing = None

    async def _probe_in_thread(self) -> bool:
        try:
            return await asyncio.to_thread(self._probe)
        except OSError as exc:
            log.debug("room probe in %s failed: %s", self.directory, exc)
            return True

    def _probe(self) -> bool:
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            if is_disk_full(exc):
                return False
            raise
        return has_room(self.directory)

    async def wait(self) -> None:
        waited = 0.0
        while not await self.has_room():
            await asyncio.sleep(self.every)
            waited += self.every
        if waited:
            log.warning("the disk has room again after about %.0fs; answering what waited",
                        waited)

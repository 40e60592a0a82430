"""Waiting for room on a full disk, so a message is answered once there is space again.

A full data dir (no bytes or no inodes left) is not an error to report and forget: the message
waits — unconfirmed to Telegram when even its journal line cannot be written, in the journal
when the turn would not fit (checked before each turn, so a turn is never half saved) or
failed for lack of room — and is answered as soon as a probe write succeeds, without a
restart. The probe runs every `every` seconds in a thread.

The check before each turn asks `os.statvfs` first and writes the probe only when the free
bytes or inodes are within a margin of running out (or statvfs cannot tell): on a roomy disk
a turn costs no write. Waiting after a write failed always writes the probe, since a quota
(EDQUOT) does not show in statvfs.
"""

from __future__ import annotations

import asyncio
import logging
import os
from pathlib import Path

from rumi.fileio import PROBE_BYTES, has_room, is_disk_full

log = logging.getLogger(__name__)

ROOM_CHECK_SECONDS = 2.0
MARGIN_BYTES = 64 * PROBE_BYTES   # 4 MiB free: far from full, no probe write needed
MARGIN_INODES = 64


class DiskRoom:
    """Waits until `directory`'s filesystem takes a new file again."""

    def __init__(self, directory: Path, every: float = ROOM_CHECK_SECONDS, *,
                 margin_bytes: int = MARGIN_BYTES, margin_inodes: int = MARGIN_INODES) -> None:
        self.directory = directory
        self.every = every
        self.margin_bytes = margin_bytes
        self.margin_inodes = margin_inodes
        self._probing: dict[bool, asyncio.Future[bool]] = {}

    async def has_room(self, *, write: bool = False) -> bool:
        """False only for a full disk: any other trouble with the probe (a directory that
        cannot be made for another reason) must not hold a message back. `write`: always
        write the probe (after a write failed for lack of room).

        Callers that ask while a check of the same kind runs share it and wake in the order
        they asked: each check's thread would otherwise finish in any order and let a later
        message of a chat overtake an earlier one on its way to the chat's queue."""
        probing = self._probing.get(write)
        if probing is None:
            probing = asyncio.ensure_future(self._check_in_thread(write))
            probing.add_done_callback(self._checked)
            self._probing[write] = probing
        return await asyncio.shield(probing)

    def _checked(self, done: asyncio.Future[bool]) -> None:
        for kind, probing in list(self._probing.items()):
            if probing is done:
                del self._probing[kind]

    async def _check_in_thread(self, write: bool) -> bool:
        try:
            return await asyncio.to_thread(self.check, write)
        except OSError as exc:
            log.debug("room probe in %s failed: %s", self.directory, exc)
            return True

    def check(self, write: bool = False) -> bool:
        """The check itself (blocking): statvfs, then the probe write when near full."""
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            if is_disk_full(exc):
                return False
            raise
        if not write and self.far_from_full():
            return True
        return has_room(self.directory)

    def far_from_full(self) -> bool:
        """Whether statvfs shows more than the margins free (blocking); False when it cannot
        tell. Inodes count only where the filesystem has a fixed number (btrfs reports 0)."""
        try:
            stats = os.statvfs(self.directory)
        except (OSError, AttributeError):   # AttributeError: no statvfs on this platform
            return False
        if stats.f_bavail * stats.f_frsize < self.margin_bytes:
            return False
        return stats.f_files == 0 or stats.f_favail >= self.margin_inodes

    async def wait(self) -> None:
        waited = 0.0
        while not await self.has_room(write=True):
            await asyncio.sleep(self.every)
            waited += self.every
        if waited:
            log.warning("the disk has room again after about %.0fs; answering what waited",
                        waited)

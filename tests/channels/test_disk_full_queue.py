"""An update whose journal line does not fit on a full disk waits in `JournaledQueue.put`
(so PTB does not confirm it to Telegram), its sender is told once, and it is journaled whole
and handed on once there is room. A real full tmpfs, not a patched `open`."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

from telegram import Update

from rumi.channels.disk_room import DiskRoom
from rumi.channels.inbox import Inbox
from rumi.channels.update_queue import JournaledQueue
from rumi.fileio import has_room
from tests.e2e.test_disk_full import empty, fill_bytes, fill_inodes, small_disk


def update(update_id: int, text: str) -> Update:
    return Update.de_json({"update_id": update_id, "message": {
        "message_id": update_id, "date": 0, "text": text,
        "chat": {"id": 7, "type": "private"},
        "from": {"id": 7, "is_bot": False, "first_name": "Ana"}}}, None)


async def test_an_update_waits_for_room_and_is_journaled_whole(tmp_path) -> None:  # noqa: ANN001
    with small_disk(tmp_path / "disk", size="1m", inodes=64) as disk:
        inbox = Inbox(disk / "inbox" / "telegram.jsonl")
        told: list[int] = []

        async def tell(item: Update) -> None:
            told.append(item.update_id)

        queue = JournaledQueue(inbox, DiskRoom(inbox.path.parent, every=0.05), tell)
        await queue.put(update(1, "antes"))
        filler = await asyncio.to_thread(fill_bytes, disk)
        assert not has_room(disk)
        waiting = asyncio.create_task(queue.put(update(2, "x" * 8_000)))
        for _ in range(100):
            await asyncio.sleep(0.05)
            if told:
                break
        await asyncio.sleep(0.3)
        assert told == [2] and not waiting.done()     # told once, still waiting
        assert queue.qsize() == 1                     # only the first was handed on
        filler.unlink()
        await asyncio.wait_for(waiting, 10)
        assert queue.qsize() == 2 and told == [2]
        lines = inbox.path.read_text(encoding="utf-8").splitlines()
        assert [json.loads(line)["update_id"] for line in lines] == [1, 2]   # no cut line


async def test_the_probe_never_holds_a_message_back_for_anything_but_a_full_disk(
        tmp_path) -> None:  # noqa: ANN001
    assert await DiskRoom(tmp_path / "not" / "yet").has_room()   # made on the way
    blocker = tmp_path / "file"
    blocker.write_text("x")
    assert await DiskRoom(blocker / "inbox").has_room()   # not a directory: not "full"


async def _checked(room: DiskRoom, write: bool = False) -> tuple[bool, bool]:
    """(has room, a probe file was written): a file made and removed in the directory moves
    its mtime, set to 0 beforehand."""
    os.utime(room.directory, ns=(0, 0))
    found = await room.has_room(write=write)
    return found, room.directory.stat().st_mtime_ns != 0


async def test_a_roomy_disk_is_checked_without_writing_the_probe(tmp_path: Path) -> None:
    room = DiskRoom(tmp_path)
    assert room.far_from_full(), "the test's own temporary directory must have room"
    assert await _checked(room) == (True, False)              # statvfs only
    assert await _checked(room, write=True) == (True, True)   # waiting: always written
    near = DiskRoom(tmp_path, margin_bytes=os.statvfs(tmp_path).f_blocks * 2 ** 20)
    assert await _checked(near) == (True, True)               # within the margin: written


async def test_near_full_and_full_disks_are_probed_by_the_check_before_a_turn(
        tmp_path: Path) -> None:
    with small_disk(tmp_path / "disk", size="8m", inodes=256) as disk:
        room = DiskRoom(disk, margin_bytes=4 * 2 ** 20, margin_inodes=64)
        assert await _checked(room) == (True, False)
        stats = os.statvfs(disk)
        big = disk / "big.bin"
        big.write_bytes(b"\0" * (stats.f_bavail * stats.f_frsize - 2 ** 20))   # 1 MiB left
        assert await _checked(room) == (True, True)               # near: the probe decides
        filler = await asyncio.to_thread(fill_bytes, disk)
        assert await _checked(room) == (False, True)              # no bytes left
        filler.unlink()
        big.unlink()
        many = await asyncio.to_thread(fill_inodes, disk)
        assert (await room.has_room(), await room.has_room(write=True)) == (False, False)
        await asyncio.to_thread(empty, many)
        assert await _checked(room) == (True, False)              # roomy again


async def test_callers_of_one_kind_of_check_wake_in_the_order_they_asked(
        tmp_path: Path) -> None:
    """The order messages of a chat reach its queue after a restart rests on this: they share
    one check and wake in turn, whatever order the threads would finish in."""
    room = DiskRoom(tmp_path)
    for write in (False, True):   # a thread per caller reordered 200 of them in 19 of 20
        woke: list[int] = []      # runs here (9/10 statvfs, 10/10 written probes)

        async def ask(n: int, write: bool = write, woke: list[int] = woke) -> None:
            assert await room.has_room(write=write)
            woke.append(n)

        await asyncio.gather(*(ask(n) for n in range(200)))
        assert woke == list(range(200))

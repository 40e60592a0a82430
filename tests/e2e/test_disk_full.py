"""A full disk is said, and nothing is dropped (issue 32, item 5).

`rumi run` with its data dir on a real small tmpfs, against the fake servers. The disk is
filled for real — its bytes with a file, its inodes with empty files — never by patching
`open`. People are told, in their language, that the server's disk is full (never "it was
logged", which it was not); each message is answered once space is back, without a restart,
and also after one."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import os
import subprocess
from pathlib import Path

import pytest

from rumi import messages_en, messages_es
from tests.conftest import require
from tests.e2e.conftest import ALICE
from tests.e2e.test_bad_updates import answers, echo_tag, run_bot, write_config
from tests.memory.files.test_markdown_sync import eventually

pytestmark = pytest.mark.e2e

OTHER = 5001


@contextlib.contextmanager
def small_disk(path: Path, size: str = "48m", inodes: int = 4000):  # noqa: ANN201
    path.mkdir(parents=True, exist_ok=True)
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size},nr_inodes={inodes}",
                              "tmpfs", str(path)], capture_output=True, check=False)
    require(mounted.returncode == 0, "needs root and mount to make a small tmpfs")
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)


def fill_bytes(folder: Path) -> Path:
    """Write one file until the filesystem has no byte left."""
    filler = folder / "filler.bin"
    with filler.open("wb", buffering=0) as handle:
        for chunk in (1 << 20, 1 << 12, 1):
            with contextlib.suppress(OSError):
                while True:
                    handle.write(b"\0" * chunk)
    return filler


def fill_inodes(folder: Path) -> Path:
    """Make empty files until the filesystem has no inode left."""
    many = folder / "many"
    many.mkdir()
    number = 0
    while True:
        try:
            (many / str(number)).touch()
        except OSError as exc:
            assert exc.errno == errno.ENOSPC
            return many
        number += 1


def empty(many: Path) -> None:
    for name in os.listdir(many):
        os.unlink(many / name)
    many.rmdir()


def config_for(tmp_path, fake_groq, fake_telegram) -> Path:  # noqa: ANN001
    config = write_config(tmp_path, fake_groq, fake_telegram)
    config.write_text(config.read_text(encoding="utf-8") + '[agent]\nlanguage = "auto"\n',
                      encoding="utf-8")
    return config


def notices(fake_telegram, chat: int, text: str) -> int:  # noqa: ANN001
    return sum(1 for t in fake_telegram.texts(chat) if t == text)


async def stop(proc) -> None:  # noqa: ANN001
    if proc.returncode is None:
        proc.kill()
        await proc.wait()


async def test_a_full_disk_is_said_and_every_message_answered_once_there_is_room(
        tmp_path, fake_groq, fake_telegram) -> None:  # noqa: ANN001
    fake_groq.responder = echo_tag
    with small_disk(tmp_path / "data") as data:
        config = config_for(tmp_path, fake_groq, fake_telegram)
        proc = await run_bot(config)
        try:
            await fake_telegram.wait_for_call("getUpdates", timeout=60)
            fake_telegram.push_text(ALICE, ALICE, "tag-antes", language_code="es")
            await eventually(lambda: answers(fake_telegram)["tag-antes"] == 1, timeout=60)

            # no byte left: not even the journal line fits; told in English, then answered
            filler = await asyncio.to_thread(fill_bytes, data)
            fake_telegram.push_text(ALICE, ALICE, "tag-bytes", language_code="en")
            await eventually(lambda: notices(fake_telegram, ALICE, messages_en.DISK_FULL) == 1,
                             timeout=60)
            await asyncio.sleep(3)
            assert answers(fake_telegram)["tag-bytes"] == 0
            filler.unlink()
            await eventually(lambda: answers(fake_telegram)["tag-bytes"] == 1, timeout=60)

            # no inode left: the journal line fits, the turn cannot write; told in Spanish
            many = await asyncio.to_thread(fill_inodes, data)
            fake_telegram.push_text(ALICE, OTHER, "tag-inodos", language_code="es")
            await eventually(lambda: notices(fake_telegram, OTHER, messages_es.DISK_FULL) == 1,
                             timeout=60)
            await asyncio.sleep(3)
            assert answers(fake_telegram)["tag-inodos"] == 0
            await asyncio.to_thread(empty, many)
            await eventually(lambda: answers(fake_telegram)["tag-inodos"] == 1, timeout=60)

            # full again, and Rumi killed meanwhile: answered by the next start
            filler = await asyncio.to_thread(fill_bytes, data)
            fake_telegram.push_text(ALICE, ALICE, "tag-reinicio", language_code="es")
            await eventually(lambda: notices(fake_telegram, ALICE, messages_es.DISK_FULL) == 1,
                             timeout=60)
            proc.kill()
            await proc.wait()
            filler.unlink()
            proc = await run_bot(config)
            await eventually(lambda: answers(fake_telegram)["tag-reinicio"] == 1, timeout=90)
            await asyncio.sleep(2)
        finally:
            await stop(proc)
    assert all(count == 1 for count in answers(fake_telegram).values()), answers(fake_telegram)
    said = " ".join(fake_telegram.texts())
    for catalogue in (messages_es, messages_en):
        assert catalogue.INTERNAL_ERROR not in said   # never "it was logged"

"""`rumi backup` while the bot runs and `rumi restore` after a disaster bring every memory back;
restore never deletes what it replaces and refuses archives that are not Rumi backups."""

from __future__ import annotations

import asyncio
import io
import os
import tarfile
import time

import pytest

from rumi.cli import main
from rumi.memory.backup import make_backup, prune_backups
from rumi.memory.markdown_sync import parse
from rumi.paths import ChatPaths
from tests.e2e.conftest import ALICE, bot_settings, fake_telegram, start_bot  # noqa: F401
from tests.memory.lifecycle.test_markdown_sync import eventually

pytestmark = pytest.mark.e2e


async def test_backup_while_running_then_restore_after_losing_everything(
        start_bot, bot_settings, fake_telegram, tmp_path, capsys):  # noqa: F811
    settings = bot_settings()
    config = tmp_path / "config.toml"   # the file make_settings wrote for these settings
    bot = await start_bot(settings)
    for n in range(1, 6):
        fake_telegram.push_text(ALICE, ALICE, f"/remember Dato {n} que no debe perderse")
        await fake_telegram.wait_for_sent(n)
    md = ChatPaths(settings.data_dir, str(ALICE)).memory_md
    await eventually(lambda: len(parse(md.read_text(encoding="utf-8"))) == 5)
    out = tmp_path / "backups"
    # while the bot runs (and keeps writing): the online backup API gives a whole database
    code = await asyncio.to_thread(main, ["backup", "--config", str(config), "--out", str(out)])
    assert code == 0
    [archive] = out.glob("rumi-backup-*.tar.gz")
    with tarfile.open(archive) as tar:
        names = tar.getnames()
    assert "rumi.db" in names and f"chats/{ALICE}/memory/MEMORY.md" in names
    assert "config.toml" not in names and not any(n.startswith("vectors") for n in names)
    await bot.stop()

    # disaster: the database and the chat's files are gone
    for name in ("rumi.db", "rumi.db-wal", "rumi.db-shm"):
        (settings.data_dir / name).unlink(missing_ok=True)
    md.unlink()
    assert await asyncio.to_thread(main, ["restore", "--config", str(config), str(archive)]) == 0
    assert "before-restore" in capsys.readouterr().out
    assert list(settings.data_dir.glob("chats.before-restore-*"))   # replaced, kept

    bot = await start_bot(settings)
    store = bot.app.parts["memory_store"]
    contents = sorted(m.content for m in await store.list(str(ALICE), limit=50))
    assert contents == [f"Dato {n} que no debe perderse" for n in range(1, 6)]
    assert len(parse(md.read_text(encoding="utf-8"))) == 5


def test_restore_refuses_an_archive_that_is_not_a_backup(make_settings, tmp_path, capsys):
    settings = make_settings()
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    (settings.data_dir / "rumi.db").write_bytes(b"keep me")
    bad = tmp_path / "evil.tar.gz"
    with tarfile.open(bad, "w:gz") as tar:
        for name in ("rumi.db", "../outside.txt"):
            info = tarfile.TarInfo(name)
            info.size = 3
            tar.addfile(info, io.BytesIO(b"bad"))
    code = main(["restore", "--config", str(tmp_path / "config.toml"), str(bad)])
    assert code == 1 and "unsafe entry" in capsys.readouterr().err
    assert (settings.data_dir / "rumi.db").read_bytes() == b"keep me"
    assert not (tmp_path / "outside.txt").exists()


def test_old_backups_are_pruned_but_never_the_newest(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    out = tmp_path / "backups"
    first = make_backup(data, out, stamp="1").path
    second = make_backup(data, out, stamp="2").path
    old = time.time() - 10 * 86_400
    os.utime(first, (old, old))
    os.utime(second, (old + 60, old + 60))
    assert prune_backups(out, keep_days=7) == [first]
    assert second.exists()          # the newest stays even when it is old

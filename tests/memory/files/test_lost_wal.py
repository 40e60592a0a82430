"""The database loses its last writes (a power cut takes `rumi.db-wal` with `synchronous =
NORMAL`) while MEMORY.md still shows them: they are read back in, their ids are never given
to new memories, the file as it was is kept aside and `/memory` says so. Driven through the
real bot, the real SQLite file and the fake Telegram."""

from __future__ import annotations

import pytest

from rumi.memory.files.markdown_format import parse
from rumi.paths import ChatPaths
from tests.e2e.conftest import ALICE, bot_settings, fake_telegram, start_bot  # noqa: F401
from tests.memory.files.test_markdown_sync import eventually

pytestmark = pytest.mark.e2e


def _ids(text: str) -> dict[str, int | None]:
    return {e.content: e.memory_id for e in parse(text)}


async def test_a_lost_last_write_is_read_back_and_its_id_never_reused(
        start_bot, bot_settings, fake_telegram, caplog):  # noqa: F811
    settings = bot_settings()
    db = settings.data_dir / "rumi.db"
    md = ChatPaths(settings.data_dir, str(ALICE)).memory_md
    bot = await start_bot(settings)
    for n, fact in enumerate(["perro: se llama Toby", "gato: se llama Misha"], start=1):
        fake_telegram.push_text(ALICE, ALICE, f"/remember {fact}")
        await fake_telegram.wait_for_sent(n)
    await eventually(lambda: len(parse(md.read_text(encoding="utf-8"))) == 2)
    await bot.stop()
    before_last_write = db.read_bytes()   # what the disk held before the WAL was checkpointed

    bot = await start_bot(settings)
    fake_telegram.push_text(ALICE, ALICE, "/remember loro: se llama Pancracio")
    await fake_telegram.wait_for_sent(3)
    await eventually(lambda: "Pancracio" in md.read_text(encoding="utf-8"))
    lost_id = _ids(md.read_text(encoding="utf-8"))["se llama Pancracio"]
    await bot.stop()
    db.write_bytes(before_last_write)     # the power cut: the last commit never reached rumi.db
    for extra in ("-wal", "-shm"):
        db.with_name(db.name + extra).unlink(missing_ok=True)

    caplog.set_level("WARNING", logger="rumi.memory")
    bot = await start_bot(settings)
    store = bot.app.parts["memory_store"]
    active = await store.list(str(ALICE), limit=100)
    assert "se llama Pancracio" in [m.content for m in active]          # recallable again
    hits = await store.keyword_search(str(ALICE), "Pancracio", 5)
    assert hits, "the read-back memory is found by recall's keyword search"
    [kept] = md.parent.glob("MEMORY.md.before-restore-*")
    assert "Pancracio" in kept.read_text(encoding="utf-8")               # kept aside
    assert kept.name in caplog.text and f"#{lost_id}" in caplog.text     # named in the log
    assert "database has" not in caplog.text                             # and reconciled
    assert "Pancracio" in md.read_text(encoding="utf-8")

    fake_telegram.push_text(ALICE, ALICE, "/remember tortuga: se llama Manuelita")
    await fake_telegram.wait_for_sent(4)
    await eventually(lambda: "Manuelita" in md.read_text(encoding="utf-8"))
    ids = _ids(md.read_text(encoding="utf-8"))
    assert "se llama Pancracio" in ids                                   # not rewritten away
    assert ids["se llama Manuelita"] > lost_id                           # its id not reused
    assert ids["se llama Pancracio"] > lost_id
    assert len(set(ids.values())) == 4

    fake_telegram.push_text(ALICE, ALICE, "/memory")
    said = await fake_telegram.wait_for_sent(5)
    assert kept.name in said[-1].text and "recuperé 1" in said[-1].text


async def test_a_rebuilt_database_never_reuses_the_ids_the_file_showed(
        start_bot, bot_settings, fake_telegram):  # noqa: F811
    settings = bot_settings()
    md = ChatPaths(settings.data_dir, str(ALICE)).memory_md
    bot = await start_bot(settings)
    for n, fact in enumerate(["perro: se llama Toby", "gato: se llama Misha"], start=1):
        fake_telegram.push_text(ALICE, ALICE, f"/remember {fact}")
        await fake_telegram.wait_for_sent(n)
    await eventually(lambda: len(parse(md.read_text(encoding="utf-8"))) == 2)
    old = _ids(md.read_text(encoding="utf-8"))
    await bot.stop()
    db = settings.data_dir / "rumi.db"
    for extra in ("", "-wal", "-shm"):
        db.with_name(db.name + extra).unlink(missing_ok=True)

    bot = await start_bot(settings)
    new = _ids(md.read_text(encoding="utf-8"))
    assert set(new) == set(old)                                   # every memory back
    assert min(new.values()) > max(old.values())                  # under ids never used
    await bot.stop()


async def test_a_hand_typed_huge_id_does_not_use_up_the_id_space(kw_store, tmp_path):
    from rumi.memory.files.reconcile import highest_seen
    from rumi.memory.store.models import NewMemory
    md = ChatPaths(tmp_path, "77").memory_md
    md.parent.mkdir(parents=True)
    md.write_text("# Memoria\n\n## Hechos\n- [#9223372036854775807] un id escrito a mano\n"
                  "- [#40] otro\n", encoding="utf-8")
    high = highest_seen(tmp_path)
    assert high == 40
    await kw_store.reserve_ids(high)
    saved = (await kw_store.save("77", NewMemory("se guarda igual"))).memory
    assert saved.id == 41

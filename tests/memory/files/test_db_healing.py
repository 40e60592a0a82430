"""rumi.db deleted, emptied or damaged: the bot rebuilds it from the MEMORY.md files instead of
erasing them, moves a damaged file aside (never deletes it), tells each chat, and one chat's
unreadable file never stops the others. Driven through the real bot and the fake Telegram."""

from __future__ import annotations

import sqlite3

import pytest

from rumi.memory.checks import check_memory_db
from rumi.memory.files.markdown_format import parse
from rumi.memory.store.health import inspect_database
from rumi.paths import ChatPaths
from tests.e2e.conftest import ALICE, bot_settings, fake_telegram, start_bot  # noqa: F401
from tests.memory.files.test_markdown_sync import atomic_save, eventually

pytestmark = pytest.mark.e2e

FACTS = [f"dato {n}: valor número {n}" for n in range(8)]


def _damage(db_path, how: str) -> bytes:
    """Break rumi.db the way an SD card or a person does; returns what was in the file."""
    before = db_path.read_bytes()
    for extra in ("-wal", "-shm"):
        db_path.with_name(db_path.name + extra).unlink(missing_ok=True)
    if how == "deleted":
        db_path.unlink()
    elif how == "truncated":
        db_path.write_bytes(b"")
    elif how == "garbage header":
        db_path.write_bytes(b"\x00garbage" * 16 + before[128:])
    elif how == "half the file":
        db_path.write_bytes(before[: len(before) // 2])
    return before


async def _remember_all(fake_telegram, chat: int, start: int) -> int:  # noqa: F811
    for n, fact in enumerate(FACTS, start=start + 1):
        fake_telegram.push_text(ALICE, chat, f"/remember {fact}")
        await fake_telegram.wait_for_sent(n)
    return start + len(FACTS)


@pytest.mark.parametrize("how", ["deleted", "truncated", "garbage header", "half the file"])
async def test_a_lost_or_damaged_database_is_rebuilt_from_memory_md(
        start_bot, bot_settings, fake_telegram, how):  # noqa: F811
    settings = bot_settings()
    bot = await start_bot(settings)
    sent = await _remember_all(fake_telegram, ALICE, 0)
    md = ChatPaths(settings.data_dir, str(ALICE)).memory_md
    await eventually(lambda: len(parse(md.read_text(encoding="utf-8"))) == len(FACTS))
    await bot.stop()

    db_path = settings.data_dir / "rumi.db"
    if how == "half the file":   # enough pages that half of it is a real loss
        with sqlite3.connect(db_path) as conn:
            conn.execute("CREATE TABLE IF NOT EXISTS padding (x BLOB)")
            conn.executemany("INSERT INTO padding VALUES (?)", [(b"x" * 4000,)] * 64)
    before = _damage(db_path, how)
    if how in ("garbage header", "half the file"):
        assert inspect_database(db_path).state == "corrupt"
        assert not check_memory_db(settings.data_dir).ok     # doctor no longer says "OK"

    bot = await start_bot(settings)
    store = bot.app.parts["memory_store"]
    assert sorted(m.content for m in await store.list(str(ALICE), limit=100)) == sorted(
        f.split(": ", 1)[1] for f in FACTS)
    text = md.read_text(encoding="utf-8")
    assert len(parse(text)) == len(FACTS)                       # MEMORY.md not erased
    notice = await fake_telegram.wait_for_sent(sent + 1)
    assert "reconstruí" in notice[-1].text and "8 recuerdos" in notice[-1].text
    kept = sorted(settings.data_dir.glob("rumi.db.corrupt-*"))
    if how in ("garbage header", "half the file", "truncated"):
        assert [p.name for p in kept if not p.name.endswith(("-wal", "-shm"))]
    if how in ("garbage header", "half the file"):
        main = next(p for p in kept if not p.name.endswith(("-wal", "-shm")))
        assert main.stat().st_size > 0 and main.read_bytes() != before   # moved, not deleted
    # and the rebuilt store works on: a new memory reaches the file, the edits sync
    fake_telegram.push_text(ALICE, ALICE, "/remember Tiene un loro")
    await fake_telegram.wait_for_sent(sent + 2)
    await eventually(lambda: "Tiene un loro" in md.read_text(encoding="utf-8"))
    assert check_memory_db(settings.data_dir).ok


async def test_one_chats_unreadable_file_does_not_stop_the_others(
        start_bot, bot_settings, fake_telegram):  # noqa: F811
    settings = bot_settings()
    bot = await start_bot(settings)
    sent = await _remember_all(fake_telegram, ALICE, 0)
    other = 4242
    fake_telegram.push_text(ALICE, other, "/remember Le gusta el mar")
    sent += 1
    await fake_telegram.wait_for_sent(sent)
    md_other = ChatPaths(settings.data_dir, str(other)).memory_md
    await eventually(lambda: "Le gusta el mar" in md_other.read_text(encoding="utf-8"))
    await bot.stop()
    broken = md_other.read_text(encoding="utf-8") + "\n## Cosas raras\n- algo\n"
    atomic_save(md_other, broken)
    _damage(settings.data_dir / "rumi.db", "deleted")

    bot = await start_bot(settings)
    store = bot.app.parts["memory_store"]
    assert len(await store.list(str(ALICE), limit=100)) == len(FACTS)
    said = await fake_telegram.wait_for_sent(sent + 2)
    by_chat = {s.chat_id: s.text for s in said[sent:]}
    assert "reconstruí" in by_chat[ALICE]
    assert "no pude reconstruir" in by_chat[other] and "Cosas raras" in by_chat[other]
    [kept] = md_other.parent.glob("MEMORY.md.rejected-*")
    assert kept.read_text(encoding="utf-8") == broken           # the person's text is kept


async def test_rebuilt_memories_get_their_vectors_after_the_bot_is_up(
        start_bot, make_settings, fake_groq, fake_telegram, model_dir, caplog):  # noqa: F811
    """Embedding thousands of memories read back from MEMORY.md took minutes before the bot
    answered anyone; the rebuild now stores them without vectors and a background task embeds
    them once the bot is up (batches, so a turn's recall waits for one batch at most)."""
    from tests.e2e.conftest import TOKEN
    settings = make_settings(
        f'[telegram]\ntoken = "{TOKEN}"\nbase_url = "{fake_telegram.base_url}"\n'
        f'base_file_url = "{fake_telegram.base_file_url}"\n'
        f"allowed_users = [{ALICE}]\npoll_timeout = 1\n"
        f'[llm]\napi_key = "gsk_test"\nbase_url = "{fake_groq.base_url}"\nmax_retries = 0\n'
        "[sandbox]\nenabled = false\n"
        f'[memory]\nembedding_model = "sentence-transformers/all-MiniLM-L6-v2"\n'
        f'embedding_model_path = "{model_dir}"\n')
    bot = await start_bot(settings)
    sent = await _remember_all(fake_telegram, ALICE, 0)
    md = ChatPaths(settings.data_dir, str(ALICE)).memory_md
    await eventually(lambda: len(parse(md.read_text(encoding="utf-8"))) == len(FACTS))
    await bot.stop()
    _damage(settings.data_dir / "rumi.db", "deleted")

    caplog.set_level("INFO", logger="rumi.memory")
    bot = await start_bot(settings)
    store = bot.app.parts["memory_store"]
    assert len(await store.list(str(ALICE), limit=100)) == len(FACTS)   # answerable at once

    def vectors() -> int:
        with sqlite3.connect(settings.data_dir / "rumi.db") as conn:
            return conn.execute("SELECT count(*) FROM memory_embeddings").fetchone()[0]

    await eventually(lambda: vectors() == len(FACTS), timeout=60)
    await eventually(lambda: any(      # by the background task, not the rebuild
        f"embedded {len(FACTS)} memories rebuilt from MEMORY.md" in r.getMessage()
        for r in caplog.records), timeout=30)
    await fake_telegram.wait_for_sent(sent + 1)   # and the chat was told


def test_a_database_locked_by_another_connection_is_never_taken_for_corrupt(tmp_path) -> None:
    """0.7.0 read "database is locked" as damage and moved a running Rumi's rumi.db aside."""
    from rumi.config import ConfigError
    from rumi.memory.store.health import prepare_database

    db = tmp_path / "rumi.db"
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("CREATE TABLE schema_migrations (version INTEGER)")
    holder.execute("PRAGMA locking_mode=EXCLUSIVE")
    holder.execute("BEGIN EXCLUSIVE")
    holder.execute("INSERT INTO schema_migrations VALUES (1)")
    try:
        with pytest.raises(ConfigError, match="locked by another process"):
            prepare_database(db)
    finally:
        holder.execute("COMMIT")
        holder.close()
    assert [p.name for p in tmp_path.iterdir()] == ["rumi.db"]
    assert inspect_database(db).state == "ok"

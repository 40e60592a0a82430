"""rumi.db itself: migrations, pragmas, FTS triggers, concurrent writers."""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
from pathlib import Path

import aiosqlite

from rumi.config import MemorySettings
from rumi.memory.store import schema
from rumi.memory.store.memories import MemoryStore
from rumi.memory.store.models import MemoryType, NewMemory
from rumi.memory.vectors.embeddings import Embedder
from tests.memory.backends import sqlite_only_kw
from tests.memory.conftest import model_settings, open_store


async def test_migrations_are_recorded_once(data_dir: Path) -> None:
    db = data_dir / "rumi.db"
    st = await MemoryStore.open(db, MemorySettings(embeddings_enabled=False))
    await st.close()
    conn = sqlite3.connect(db)
    try:
        names = [r[0] for r in conn.execute("SELECT name FROM schema_migrations ORDER BY name")]
        assert names == sorted(schema.MIGRATIONS) and "001_memories" in names
        assert conn.execute("PRAGMA user_version").fetchone()[0] == len(names)
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        columns = {r[1] for r in conn.execute("PRAGMA table_info(memories)")}
        assert {"chat_id", "type", "content", "summary", "key", "source", "importance",
                "confidence", "access_count", "last_accessed_at", "created_at", "updated_at",
                "expires_at", "status", "superseded_by", "related_ids", "content_hash",
                "embedding_model", "metadata"} <= columns
        assert {r[1] for r in conn.execute("PRAGMA table_info(blocks)")} >= {
            "scope", "priority", "token_count", "status", "content"}
    finally:
        conn.close()
    # reopening applies nothing new
    conn2 = await aiosqlite.connect(db)
    try:
        assert await schema.apply_migrations(conn2) == []
    finally:
        await conn2.close()


async def test_a_new_named_migration_runs_once_and_a_failing_one_rolls_back(
    data_dir: Path,
) -> None:
    db = data_dir / "rumi.db"
    await (await MemoryStore.open(db, MemorySettings(embeddings_enabled=False))).close()
    calls: list[str] = []

    async def add_table(conn: aiosqlite.Connection) -> None:
        calls.append("ok")
        await conn.execute("CREATE TABLE zz_extra (x INTEGER)")

    async def broken(conn: aiosqlite.Connection) -> None:
        await conn.execute("CREATE TABLE zz_half (x INTEGER)")
        raise RuntimeError("boom")

    schema.MIGRATIONS["900_test_extra"] = add_table
    try:
        conn = await schema.connect(db)
        await conn.close()
        conn = await schema.connect(db)
        await conn.close()
        assert calls == ["ok"]
        schema.MIGRATIONS["901_test_broken"] = broken
        with contextlib.suppress(RuntimeError):
            await schema.connect(db)
        check = sqlite3.connect(db)
        tables = {r[0] for r in check.execute("SELECT name FROM sqlite_master")}
        done = {r[0] for r in check.execute("SELECT name FROM schema_migrations")}
        check.close()
        assert "zz_extra" in tables and "zz_half" not in tables
        assert "900_test_extra" in done and "901_test_broken" not in done
    finally:
        schema.MIGRATIONS.pop("900_test_extra", None)
        schema.MIGRATIONS.pop("901_test_broken", None)


@sqlite_only_kw
async def test_fts_follows_updates_and_status(kw_store: MemoryStore) -> None:
    mem = (await kw_store.save("1", NewMemory("El gato duerme", summary="gato"))).memory
    await kw_store.update("1", mem.id, content="El perro corre")
    assert await kw_store.keyword_search("1", "duerme", 5) == []
    assert [i for i, _ in await kw_store.keyword_search("1", "gato", 5)] == [mem.id]  # summary
    assert [i for i, _ in await kw_store.keyword_search("1", "perro", 5)] == [mem.id]
    async with kw_store.connection.execute(
        "INSERT INTO memories_fts(memories_fts, rank) VALUES ('integrity-check', 1)"
    ):
        pass
    assert await kw_store.integrity_check() == "ok"


async def test_concurrent_saves_do_not_duplicate(kw_store: MemoryStore) -> None:
    results = await asyncio.gather(*[
        kw_store.save("1", NewMemory("Vive en Quito", importance=i / 20)) for i in range(20)
    ])
    assert sum(r.created for r in results) == 1
    assert len({r.memory.id for r in results}) == 1
    assert (await kw_store.get("1", results[0].memory.id)).importance == 0.95


async def test_concurrent_mixed_work_in_two_chats(data_dir: Path, embedder: Embedder) -> None:
    st = await open_store(data_dir, model_settings(), embedder)
    try:
        async def chat_work(chat: str) -> None:
            for n in range(6):
                saved = await st.save(chat, NewMemory(f"{chat} note number {n} about topic {n}",
                                                      type=MemoryType.EPISODIC))
                await st.vector_search(chat, f"topic {n}", 3)
                await st.keyword_search(chat, "note", 3)
                if n % 2:
                    await st.forget(chat, memory_id=saved.memory.id)

        await asyncio.gather(chat_work("1"), chat_work("2"), chat_work("1"), st.purge_expired())
        for chat in ("1", "2"):
            ids = [m.id for m in await st.list(chat)]
            assert len(ids) == 3
            assert await st.vectors.verify(chat, ids)
            assert all(m.chat_id == chat for m in await st.get_many(chat, ids))
        assert await st.integrity_check() == "ok"
    finally:
        await st.close()


async def test_a_second_process_writing_is_seen(data_dir: Path, embedder: Embedder) -> None:
    """The bot keeps its index in memory; `rumi memory import` in a shell writes the same DB."""
    bot = await open_store(data_dir, model_settings(), embedder)
    shell = await open_store(data_dir, model_settings(), embedder)
    try:
        first = (await bot.save("5", NewMemory("Meeting with the dentist on Monday"))).memory
        assert (await bot.vector_search("5", "dentist appointment", 1))[0][0] == first.id
        other = (await shell.save("5", NewMemory("Flight to Tokyo leaves at noon"))).memory
        await shell.forget("5", memory_id=first.id)
        hits = await bot.vector_search("5", "airplane trip to Japan", 2)
        assert [i for i, _ in hits] == [other.id]
    finally:
        await shell.close()
        await bot.close()


@sqlite_only_kw
async def test_rows_an_older_forget_left_behind_are_erased_by_the_migration(
    kw_store: MemoryStore, data_dir: Path,
) -> None:
    """Before 013 a forget only marked rows 'deleted'; upgrading erases them, keeping a hash."""
    gone = (await kw_store.save("8", NewMemory("Contraseña vieja xk42qz"))).memory
    kept = (await kw_store.save("8", NewMemory("Le gusta el mar"))).memory
    conn = kw_store.connection
    await conn.execute("UPDATE memories SET status = 'deleted' WHERE id = ?", (gone.id,))
    await conn.execute("DROP TABLE forgotten_hashes")
    await conn.execute("DROP INDEX ix_memories_superseded_by")
    await conn.execute("DELETE FROM schema_migrations WHERE name = '013_forget_erases'")

    assert await schema.apply_migrations(conn) == ["013_forget_erases"]

    assert await kw_store.get("8", gone.id) is None
    assert [m.id for m in await kw_store.list("8", status=None)] == [kept.id]
    assert await kw_store.forgotten("8", [gone.content_hash]) == {gone.content_hash}
    assert await kw_store.keyword_search("8", "xk42qz", 5) == []
    await conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    assert b"xk42qz" not in (data_dir / "rumi.db").read_bytes()
    rows = await conn.execute_fetchall("PRAGMA secure_delete")
    assert rows[0][0] == 1

"""The days a memory was used (`access_days`, rumi/memory/store/days.py): what the score's
frequency term reads. A burst of uses is one day; uses at least 20 hours apart are days; a
pending (not yet written) use reads as the written one will; the migration, export/import and
`rumi store migrate` keep every memory and its counts. The clock is injected: no sleeps."""

from __future__ import annotations

import json
import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg
import pytest

from rumi.config import MemorySettings
from rumi.memory.recall.scoring import Scorer
from rumi.memory.store import schema
from rumi.memory.store.api import MemoryStoreAPI
from rumi.memory.store.codec import ts
from rumi.memory.store.memories import MemoryStore
from rumi.memory.store.migration import copy_store
from rumi.memory.store.models import Memory, NewMemory
from rumi.memory.store.postgres import schema as pg_schema
from rumi.memory.store.postgres.store import PgMemoryStore
from tests.memory.backends import sqlite_only_kw
from tests.memory.conftest import EMBED_DIM, open_store

MONDAY = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
KW = MemorySettings(embeddings_enabled=False)


async def use(store: MemoryStoreAPI, chat: str, memory_id: int, when: datetime) -> Memory:
    await store.mark_accessed(chat, [memory_id], when)
    got = await store.get(chat, memory_id)
    assert got is not None
    return got


async def test_five_uses_in_one_afternoon_count_one_day(kw_store: MemoryStoreAPI) -> None:
    saved = (await kw_store.save("7", NewMemory("Marta's flight lands at 18:40 in Bilbao"))).memory
    assert (saved.access_days, saved.access_day_at) == (0, None)
    for minutes in (0, 3, 9, 40, 95):
        got = await use(kw_store, "7", saved.id, MONDAY + timedelta(minutes=minutes))
    assert got.access_count == 5 and got.access_days == 1
    assert got.access_day_at == MONDAY   # the use that counted the day
    assert got.last_accessed_at == MONDAY + timedelta(minutes=95)


async def test_uses_on_three_days_count_three_and_twenty_hours_make_a_day(
        kw_store: MemoryStoreAPI) -> None:
    saved = (await kw_store.save("7", NewMemory("The boiler is serviced every October"))).memory
    other = (await kw_store.save("7", NewMemory("Paco walks the dog at seven"))).memory
    await use(kw_store, "7", saved.id, MONDAY)
    almost = await use(kw_store, "7", saved.id, MONDAY + timedelta(hours=19, minutes=59))
    assert almost.access_days == 1                       # the same evening, one day
    tuesday = MONDAY + timedelta(hours=20)               # earlier than Monday's hour
    assert (await use(kw_store, "7", saved.id, tuesday)).access_days == 2
    got = await use(kw_store, "7", saved.id, tuesday + timedelta(days=1, hours=5))
    assert (got.access_count, got.access_days) == (4, 3)
    assert got.access_day_at == tuesday + timedelta(days=1, hours=5)
    untouched = await kw_store.get("7", other.id)
    assert untouched is not None and (untouched.access_count, untouched.access_days) == (0, 0)


def written(db: Path) -> dict[int, tuple[int, int, str | None, str | None]]:
    """(access_count, access_days, access_day_at, last_accessed_at) as written in the file,
    read by another connection."""
    with sqlite3.connect(db) as conn:
        return {row[0]: tuple(row[1:]) for row in conn.execute(
            "SELECT id, access_count, access_days, access_day_at, last_accessed_at "
            "FROM memories")}


@sqlite_only_kw
async def test_a_pending_use_reads_as_the_written_one_will(kw_store: MemoryStore) -> None:
    """Uses not yet written (several moments of one memory in one batch, some of them new
    days) read exactly as they read once written: the same counts, stamps and score."""
    a = (await kw_store.save("7", NewMemory("Ines is allergic to penicillin"))).memory.id
    b = (await kw_store.save("7", NewMemory("Ines keeps her inhaler in the blue bag"))).memory.id
    await kw_store.mark_accessed("7", [a], MONDAY)                       # written: day 1
    for hours in (10, 21, 30, 45):   # 21 h: a day; 30 h: 9 h after it, no; 45 h: a day
        await kw_store.mark_accessed("7", [a, b], MONDAY + timedelta(hours=hours), wait=False)
    assert kw_store.access.pending == 2
    db = Path(kw_store.db_path)
    assert written(db)[a][:2] == (1, 1) and written(db)[b][:2] == (0, 0)
    scorer = Scorer(kw_store.settings, MONDAY + timedelta(days=3))
    before = {m.id: m for m in await kw_store.get_many("7", [a, b])}
    assert (before[a].access_count, before[a].access_days) == (5, 3)
    assert (before[b].access_count, before[b].access_days) == (4, 2)   # 10 h, then 30 h
    await kw_store.access.flush()
    assert kw_store.access.pending == 0
    after = {m.id: m for m in await kw_store.get_many("7", [a, b])}
    assert after == before
    assert {i: scorer.components(m, 0.6) for i, m in after.items()} == \
        {i: scorer.components(m, 0.6) for i, m in before.items()}
    assert written(db)[a] == (5, 3, ts(MONDAY + timedelta(hours=45)),
                              ts(MONDAY + timedelta(hours=45)))
    assert written(db)[b] == (4, 2, ts(MONDAY + timedelta(hours=30)),
                              ts(MONDAY + timedelta(hours=45)))


@sqlite_only_kw
async def test_a_failed_write_keeps_every_pending_day(kw_store: MemoryStore) -> None:
    """A batch whose write fails goes back before newer uses, in order: nothing lost, no
    day counted twice."""
    a = (await kw_store.save("7", NewMemory("The spare key is with Rosa"))).memory.id
    await kw_store.mark_accessed("7", [a], MONDAY, wait=False)
    await kw_store.mark_accessed("7", [a], MONDAY + timedelta(days=1), wait=False)
    real_run, calls = kw_store.access._run, []

    async def fail_once(sql: str, params: tuple[Any, ...]) -> object:
        calls.append(sql)
        if len(calls) == 2:   # the first use written, the second refused
            raise sqlite3.OperationalError("database is locked")
        return await real_run(sql, params)

    kw_store.access._run = fail_once
    with pytest.raises(sqlite3.OperationalError):
        await kw_store.access.flush()
    await kw_store.mark_accessed("7", [a], MONDAY + timedelta(days=2), wait=False)
    mid = await kw_store.get("7", a)
    assert mid is not None and (mid.access_count, mid.access_days) == (3, 3)
    await kw_store.access.flush()
    assert written(Path(kw_store.db_path))[a][:2] == (3, 3)


async def old_rows_sqlite(db: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """rumi.db as Rumi 0.8.0 left it (every migration before 017), with three memories."""
    before = {name: fn for name, fn in schema.MIGRATIONS.items() if name < "017_access_days"}
    with monkeypatch.context() as patch:
        patch.setattr(schema, "MIGRATIONS", before)
        conn = await schema.connect(db)
        try:
            rows = [("Lives in Valencia", 7, "2026-02-01T10:00:00.000000Z", "active"),
                    ("Never asked about", 0, None, "active"),
                    ("Lived in Lima", 2, "2025-12-24T08:30:00.000000Z", "superseded")]
            ids = {}
            for n, (text, count, last, status) in enumerate(rows):
                cur = await conn.execute(
                    "INSERT INTO memories(chat_id, type, content, access_count, "
                    "last_accessed_at, created_at, updated_at, status, content_hash) "
                    "VALUES ('7', 'fact', ?, ?, ?, ?, ?, ?, ?)",
                    (text, count, last, "2025-11-01T00:00:00.000000Z",
                     "2025-11-01T00:00:00.000000Z", status, f"h{n}"))
                ids[text] = int(cur.lastrowid or 0)
            names = [r[0] for r in await conn.execute_fetchall(
                "SELECT name FROM schema_migrations")]
            assert "017_access_days" not in names
        finally:
            await conn.close()
    return ids


async def test_the_sqlite_migration_counts_one_day_for_what_was_used_and_loses_nothing(
        data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ids = await old_rows_sqlite(data_dir / "rumi.db", monkeypatch)
    store = await open_store(data_dir, KW, None)
    try:
        got = {m.content: m for m in await store.list("7", status=None, limit=10)}
        assert sorted(got) == sorted(ids)
        assert {t: (m.id, m.access_count, m.access_days) for t, m in got.items()} == {
            "Lives in Valencia": (ids["Lives in Valencia"], 7, 1),
            "Never asked about": (ids["Never asked about"], 0, 0),
            "Lived in Lima": (ids["Lived in Lima"], 2, 1)}
        last = got["Lives in Valencia"].last_accessed_at
        assert got["Lives in Valencia"].access_day_at == last is not None
        assert got["Never asked about"].access_day_at is None
        assert last is not None
        same_day = await use(store, "7", ids["Lives in Valencia"], last + timedelta(hours=3))
        assert (same_day.access_count, same_day.access_days) == (8, 1)
        next_day = await use(store, "7", ids["Lives in Valencia"], last + timedelta(hours=20))
        assert (next_day.access_count, next_day.access_days) == (9, 2)
    finally:
        await store.close()


async def test_the_postgres_migration_counts_one_day_for_what_was_used_and_loses_nothing(
        pg_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A store made by 0.8.0 (migrations 001–008) with rows, then opened by this Rumi."""
    every = pg_schema.migrations
    with monkeypatch.context() as patch:
        patch.setattr(pg_schema, "migrations", lambda dim: every(dim)[:8])
        async with await psycopg.AsyncConnection.connect(pg_url, autocommit=True) as conn:
            state = await pg_schema.migrate(conn, EMBED_DIM)
    assert "009_access_days" not in state.applied and "008_reminders" in state.applied
    with psycopg.connect(pg_url, autocommit=True) as conn:
        for n, (text, count, last) in enumerate([("Vive en Valencia", 7, MONDAY),
                                                 ("Nunca preguntado", 0, None)]):
            conn.execute("INSERT INTO cto.memory(hash, owner_id, owner_type, type, content, "
                         "access_count_v2, last_access) VALUES (%s, '7', 'user', 'fact', %s, "
                         "%s, %s)", (f"{n:064d}", text, count, last))
    store = await PgMemoryStore.open(pg_url, "casa", KW, None, dim=EMBED_DIM)
    try:
        got = {m.content: m for m in await store.list("7", limit=10)}
        assert {t: (m.access_count, m.access_days, m.access_day_at) for t, m in got.items()} \
            == {"Vive en Valencia": (7, 1, MONDAY), "Nunca preguntado": (0, 0, None)}
        kept = got["Vive en Valencia"].id
        assert (await use(store, "7", kept, MONDAY + timedelta(hours=5))).access_days == 1
        assert (await use(store, "7", kept, MONDAY + timedelta(hours=21))).access_days == 2
        with psycopg.connect(pg_url) as conn:   # the seed's score function reads the days
            source = conn.execute("SELECT prosrc FROM pg_proc WHERE proname = "
                                  "'calculate_memory_score'").fetchone()
        assert source is not None and "access_days" in source[0]
        assert "access_count_v2" not in source[0]
    finally:
        await store.close()


async def used_on_days(store: MemoryStoreAPI, chat: str) -> dict[str, Memory]:
    often = (await store.save(chat, NewMemory("Carlos takes the 8:15 train"))).memory.id
    await store.save(chat, NewMemory("Carlos' locker is number 31"))
    for day in range(3):
        for minutes in (0, 5):
            await store.mark_accessed(chat, [often], MONDAY + timedelta(days=day,
                                                                        minutes=minutes))
    return {m.content: m for m in await store.list(chat, limit=10)}


def day_stats(memories: dict[str, Memory]) -> dict[str, tuple[Any, ...]]:
    return {t: (m.access_count, m.access_days, m.access_day_at, m.last_accessed_at)
            for t, m in memories.items()}


async def test_export_and_import_keep_the_days(kw_store: MemoryStoreAPI) -> None:
    original = await used_on_days(kw_store, "7")
    assert day_stats(original)["Carlos takes the 8:15 train"][:2] == (6, 3)
    lines = await kw_store.export_jsonl("7")
    report = await kw_store.import_report("8", lines)
    assert report.imported == 2
    copied = {m.content: m for m in await kw_store.list("8", limit=10)}
    assert day_stats(copied) == day_stats(original)


async def test_an_export_from_before_the_day_count_imports_as_the_migration_counts(
        kw_store: MemoryStoreAPI) -> None:
    last = "2026-02-01T10:00:00.000000Z"
    lines = [json.dumps({"content": "Old export, used often", "access_count": 9,
                         "last_accessed_at": last}),
             json.dumps({"content": "Old export, never used", "access_count": 0}),
             json.dumps({"content": "More days than uses", "access_count": 2,
                         "access_days": 5, "access_day_at": last, "last_accessed_at": last}),
             json.dumps({"content": "A bad day count", "access_count": 3, "access_days": "x",
                         "last_accessed_at": last})]
    assert (await kw_store.import_report("7", lines)).imported == 4
    got = {m.content: (m.access_count, m.access_days, ts(m.access_day_at))
           for m in await kw_store.list("7", limit=10)}
    assert got == {"Old export, used often": (9, 1, last), "Old export, never used": (0, 0, None),
                   "More days than uses": (2, 2, last), "A bad day count": (3, 1, last)}


async def test_store_migrate_keeps_the_days_both_ways(data_dir: Path, memory_pg_url: str) -> None:
    sqlite = await open_store(data_dir, KW, None)
    pg = await PgMemoryStore.open(memory_pg_url, "casa", KW, None, dim=EMBED_DIM)
    back_dir = data_dir / "back"
    back_dir.mkdir()
    back = await open_store(back_dir, KW, None)
    try:
        original = day_stats(await used_on_days(sqlite, "7"))
        there = await copy_store(sqlite, pg, "sqlite", "postgres", model=None)
        assert there.ok
        assert day_stats({m.content: m for m in await pg.list("7", limit=10)}) == original
        again = await copy_store(pg, back, "postgres", "sqlite", model=None)
        assert again.ok
        assert day_stats({m.content: m for m in await back.list("7", limit=10)}) == original
    finally:
        await back.close()
        await pg.close()
        await sqlite.close()

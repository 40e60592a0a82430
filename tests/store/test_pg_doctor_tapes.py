"""`rumi doctor` on a PostgreSQL store checks this Rumi's tape index against its tapes, as on
SQLite (issue 31): only its own rows, only reading, also beside a running Rumi; and the store
check says whether a Rumi under this name is running."""

from __future__ import annotations

from pathlib import Path

import psycopg

from rumi.base.checks import Status
from rumi.config import MemorySettings
from rumi.memory.checks import check_pg_tapes, check_store
from rumi.memory.store.postgres.name_lock import StoreNameLock
from rumi.memory.store.postgres.store import PgMemoryStore
from rumi.memory.store.tape_index import TapeIndex
from tests.store.test_pg_tape_index import write_tape
from tests.store.test_store_doctor import settings_for

KW = MemorySettings(embeddings_enabled=False)
LUNA = [(1, "Mi gata se llama Luna", "2026-06-01"), (2, "Luna come pienso", "2026-06-02")]


async def index(url: str, name: str, data_dir: Path) -> None:
    store = await PgMemoryStore.open(url, name, KW, None, dim=384)
    try:
        await TapeIndex(data_dir, store.tape_db).sync_all()
    finally:
        await store.close()


def row_counts(url: str) -> tuple[int, int]:
    with psycopg.connect(url, autocommit=True) as conn:
        return conn.execute("SELECT (SELECT count(*) FROM rumi.tape_sources), "
                            "(SELECT count(*) FROM rumi.tape_messages)").fetchone()


async def test_the_doctor_holds_the_tape_index_against_the_tapes(tmp_path, pg_url) -> None:
    settings = settings_for(tmp_path, pg_url)
    result = await check_pg_tapes(settings)
    assert result.status is Status.OK and "tape index not created yet" in result.detail

    write_tape(settings.data_dir, "42", LUNA)
    await index(pg_url, "casa", settings.data_dir)
    # another Rumi's rows of the same chat are not casa's: they never count against its tapes
    other = tmp_path / "trabajo"
    write_tape(other, "42", [*LUNA, (3, "tercera", "2026-06-03")])
    await index(pg_url, "trabajo", other)
    before = row_counts(pg_url)
    result = await check_pg_tapes(settings)
    assert result.status is Status.OK, result
    assert 'tape index of "casa"; tapes indexed' in result.detail
    assert pg_url.split(":")[2].split("@")[0] not in result.detail

    write_tape(settings.data_dir, "42", [*LUNA, (3, "Luna duerme", "2026-06-03")])
    result = await check_pg_tapes(settings)
    assert result.status is Status.OK
    assert "chat 42 tape session_log: 1 of 3 messages not indexed yet" in result.detail

    write_tape(settings.data_dir, "42", [(1, "Otra cinta distinta", "2026-07-01")])
    result = await check_pg_tapes(settings)
    assert result.status is Status.WARN, result
    assert "chat 42 tape session_log: replaced since it was indexed" in result.detail
    assert "indexes a replaced or removed tape again" in result.fix
    assert row_counts(pg_url) == before   # the doctor only read


async def test_the_doctor_runs_beside_a_running_rumi_and_says_so(tmp_path, pg_url) -> None:
    settings = settings_for(tmp_path, pg_url)
    write_tape(settings.data_dir, "42", LUNA)
    await index(pg_url, "casa", settings.data_dir)
    result = await check_store(settings)
    assert '"casa" (not running)' in result.detail, result
    held = await StoreNameLock.acquire(pg_url, "casa")
    try:
        result = await check_store(settings)
        assert '"casa" (running now)' in result.detail, result
        assert (await check_pg_tapes(settings)).status is Status.OK
        (tmp_path / "t").mkdir()
        assert '"trabajo" (not running)' in (
            await check_store(settings_for(tmp_path / "t", pg_url, "trabajo"))).detail
    finally:
        await held.release()

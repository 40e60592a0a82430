"""`rumi doctor`'s look at this Rumi's tape index on a PostgreSQL store: the rows against the
tape files (`TapeIndex.check`), as the doctor does with `rumi.db` on SQLite.

The doctor only reads and may run beside a running bot: one short-lived connection, no
migration, nothing written; a schema not created yet is simply "nothing indexed".
"""

from __future__ import annotations

from pathlib import Path

from psycopg.rows import dict_row
from psycopg_pool import AsyncConnectionPool

from rumi.memory.store.postgres.tape_rows import PgTapeRows
from rumi.memory.store.tape_index import TapeIndex

CONNECT_TIMEOUT = 10


async def check_tapes(url: str, name: str, data_dir: Path) -> tuple[list[str], list[str]] | None:
    """(mismatches, notes) of `TapeIndex.check` for this Rumi's rows, or None when the store
    has no tape index yet (made at first start)."""
    pool = AsyncConnectionPool(url, min_size=1, max_size=1, open=False,
                               kwargs={"autocommit": True, "row_factory": dict_row,
                                       "connect_timeout": CONNECT_TIMEOUT,
                                       "options": "-c default_transaction_read_only=on"})
    await pool.open(wait=True, timeout=CONNECT_TIMEOUT + 5)
    try:
        async with pool.connection() as conn:
            cur = await conn.execute("SELECT to_regclass('rumi.tape_sources') IS NOT NULL AS t")
            row = await cur.fetchone()
        if row is None or not row["t"]:
            return None
        return await TapeIndex(data_dir, PgTapeRows(pool, name)).check()
    finally:
        await pool.close()

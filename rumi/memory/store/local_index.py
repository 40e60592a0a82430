"""A local SQLite file for what is derived from this Rumi's own files: the tape index.

The conversation tapes (`chats/<id>/.smma/session_log.jsonl`) are this machine's files, so the
keyword index of them (`tape_index.TapeIndex`) is this machine's too. On SQLite it sits in
`rumi.db` beside the memories; with the PostgreSQL store it sits in `data_dir/tape-index.db`,
which holds no memory (an empty or lost file is rebuilt from the tapes at start).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

import aiosqlite

from rumi.memory.store.schema import connect

FILE_NAME = "tape-index.db"


class LocalIndexDb:
    """A connection and its write lock, shaped like the SQLite store's for `TapeIndex`."""

    def __init__(self, conn: aiosqlite.Connection, path: Path) -> None:
        self.connection = conn
        self.db_path = path
        self.write_lock = asyncio.Lock()

    @classmethod
    async def open(cls, data_dir: Path) -> LocalIndexDb:
        path = Path(data_dir) / FILE_NAME
        return cls(await connect(path), path)

    @contextlib.asynccontextmanager
    async def transaction(self) -> AsyncIterator[aiosqlite.Connection]:
        async with self.write_lock:
            await self.connection.execute("BEGIN IMMEDIATE")
            try:
                yield self.connection
            except BaseException:
                await self.connection.execute("ROLLBACK")
                raise
            await self.connection.execute("COMMIT")

    async def close(self) -> None:
        await self.connection.close()

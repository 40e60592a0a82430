"""The one place that knows which store runs: `[store] backend` "sqlite" (default) or "postgres".

Everything else gets a `MemoryStoreAPI` from `open_store` and never asks which it is (the
store's `backend` property names it for /status and the doctor); the composition root gets
the reminders' rows from `reminder_rows`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, cast

from rumi.config import Settings
from rumi.memory.store.api import MemoryStoreAPI
from rumi.memory.store.health import DbHealth, prepare_database
from rumi.memory.store.ports import ChatVectors, TextEmbedder

SQLITE = "sqlite"
POSTGRES = "postgres"


def backend_of(settings: Settings) -> str:
    """The configured backend: "sqlite" or "postgres"."""
    return settings.store.backend


def store_url(settings: Settings) -> str:
    """The PostgreSQL URL with its password (never log or show this string)."""
    if settings.store.url is None:   # config validation refuses this already
        raise ValueError("store.backend is postgres but store.url (or RUMI_STORE_URL) is empty")
    return settings.store.url.get_secret_value()


def reminder_rows(settings: Settings) -> Any | None:
    """The reminders' rows on the configured store, for the composition root to hand to the
    reminders feature (`rumi.reminders.store.ReminderRows`, shaped but not imported: features
    never import each other). None on SQLite: the feature keeps them in `rumi.db` itself.
    Not opened yet: the feature opens them at start and closes them at stop."""
    if backend_of(settings) != POSTGRES:
        return None
    from rumi.memory.store.postgres.reminders import PgReminderRows

    def dim() -> int:
        from rumi.memory.vectors.embeddings import Embedder

        return Embedder(settings.memory).dim

    return PgReminderRows(store_url(settings), settings.store.name, dim)


@dataclass
class OpenedStore:
    store: MemoryStoreAPI
    health: DbHealth | None   # what was found in rumi.db before opening (SQLite only)


async def open_store(
    settings: Settings,
    embedder: TextEmbedder | None,
    *,
    make_vectors: Callable[[DbHealth], Awaitable[ChatVectors | None]] | None = None,
) -> OpenedStore:
    """Open (creating and migrating) the configured store.

    SQLite: `data_dir/rumi.db` is checked first (a damaged file is moved aside, see `health`);
    `make_vectors(health)` then builds the local vector index (None: keyword only).
    PostgreSQL: the vectors live in `cto.memory`, the tape index in the `rumi` schema; no
    local database file is written."""
    if backend_of(settings) == POSTGRES:
        from rumi.memory.store.postgres.store import PgMemoryStore

        pg = await PgMemoryStore.open(store_url(settings), settings.store.name,
                                      settings.memory, embedder)
        return OpenedStore(cast(MemoryStoreAPI, pg), None)
    from rumi.memory.store.memories import MemoryStore

    db_path = settings.data_dir / "rumi.db"
    health = await asyncio.to_thread(prepare_database, db_path)
    vectors = await make_vectors(health) if make_vectors is not None else None
    store = await MemoryStore.open(db_path, settings.memory, embedder, vectors)
    return OpenedStore(store, health)


async def hold_store_name(settings: Settings) -> Any | None:
    """On PostgreSQL, hold this Rumi's `store.name` for as long as it runs (a
    `postgres.name_lock.StoreNameLock`; `release()` it at the end), or raise `StoreNameTaken`
    (a `ConfigError`: one line) when another running Rumi holds it. None on SQLite: the data
    dir's own lock keeps one Rumi per `rumi.db`."""
    if backend_of(settings) != POSTGRES:
        return None
    from rumi.memory.store.postgres.name_lock import StoreNameLock

    return await StoreNameLock.acquire(store_url(settings), settings.store.name)

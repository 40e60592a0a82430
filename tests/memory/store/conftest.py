"""Fixtures shared by the store's PostgreSQL tests."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from rumi.config import MemorySettings
from rumi.memory.store.postgres.store import PgMemoryStore


@pytest.fixture
async def pg(memory_pg_url: str) -> AsyncIterator[PgMemoryStore]:
    """A keyword-only PostgreSQL store (no embedder) on the test's own database."""
    store = await PgMemoryStore.open(memory_pg_url, "test", MemorySettings(
        embeddings_enabled=False), None)
    try:
        yield store
    finally:
        await store.close()

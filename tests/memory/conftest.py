"""Memory fixtures: a real store — SQLite (rumi.db in the test's data dir) and PostgreSQL (a
fresh database of the test server) — with or without the shared model."""

from __future__ import annotations

import asyncio
import os
import secrets
from collections.abc import AsyncIterator, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from rumi.config import MemorySettings
from rumi.memory.store.api import MemoryStoreAPI
from rumi.memory.store.memories import MemoryStore
from rumi.memory.vectors.embeddings import Embedder, vector_model_name
from rumi.memory.vectors.index import VectorIndex
from rumi.memory.vectors.query_twin import quantize_model
from tests.conftest import MODEL_DIR, require
from tests.memory.backends import BACKENDS, DATA_DIRS, SQLITE
from tests.pg_server import APP_ROLE, PostgresServer

TEST_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
EMBED_DIM = 384


def model_settings(**overrides: object) -> MemorySettings:
    values: dict[str, object] = {"embedding_model": TEST_MODEL,
                                 "embedding_model_path": MODEL_DIR, "embedding_threads": 2,
                                 "embedding_load_wait_seconds": None,  # a loaded CI may be slow
                                 # Apertium's pipelines only where a test asks for them (and
                                 # closes them): test_machine_translation.py
                                 "recall_machine_translation": False}
    values.update(overrides)
    return MemorySettings(**values)


@pytest.fixture(scope="session")
def _loaded_embedder() -> Embedder:
    """One loaded model for the whole run (loading costs ~1 s); the Embedder is loop-agnostic."""
    embedder = Embedder(model_settings())
    if (MODEL_DIR / "model.onnx").exists():
        embedder._ensure_loaded()
    return embedder


@pytest.fixture
def embedder(_loaded_embedder: Embedder) -> Embedder:
    require(_loaded_embedder.loaded, f"shared embedding model not usable at {MODEL_DIR}")
    return _loaded_embedder


@pytest.fixture(scope="session")
def twin_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One int8 query twin of the shared model for the whole run (quantizing takes ~2 s)."""
    require((MODEL_DIR / "model.onnx").is_file(), f"shared embedding model missing at {MODEL_DIR}")
    out = tmp_path_factory.mktemp("twin") / "all-MiniLM-L6-v2-int8"
    quantize_model(MODEL_DIR, "model.onnx", out, vector_model_name(model_settings()))
    return out


async def open_store(data_dir: Path, settings: MemorySettings,
                     embedder: Embedder | None) -> MemoryStore:
    """A SQLite store in `data_dir` (for tests of SQLite itself: its files, FTS5, PRAGMAs)."""
    vectors = None if embedder is None else VectorIndex.of_data_dir(data_dir, embedder, settings)
    return await MemoryStore.open(data_dir / "rumi.db", settings, embedder, vectors)


async def open_backend(request: pytest.FixtureRequest, data_dir: Path,
                       settings: MemorySettings, embedder: Embedder | None) -> MemoryStoreAPI:
    """The store the parametrised fixtures run on: SQLite in `data_dir`, or PostgreSQL in a
    fresh database of the test server (`pg_url`), named like a Rumi (`store.name`)."""
    if request.param == "sqlite":
        return await open_store(data_dir, settings, embedder)
    from rumi.memory.store.postgres.store import PgMemoryStore  # the postgres extra

    url = request.getfixturevalue("memory_pg_url")
    store = await PgMemoryStore.open(url, "test", settings, embedder, dim=EMBED_DIM)
    DATA_DIRS[store] = data_dir
    return store


@pytest.fixture(scope="session")
def memory_pg_template(postgres_server: PostgresServer) -> str:
    """A database already migrated to the memory schema (384-d vectors), made a template:
    each test's database is a copy of it (~0.2 s) instead of a migration (~0.4 s more)."""
    import psycopg
    from psycopg import sql

    name = f"rumi_memory_tpl_{os.getpid()}"
    url = postgres_server.create_database(name)

    from rumi.memory.store.postgres import schema as pg_schema

    async def migrate() -> None:
        async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
            await pg_schema.migrate(conn, EMBED_DIM)

    # a fixture may be set up inside a running loop: migrate in a thread of its own
    with ThreadPoolExecutor(1) as pool:
        pool.submit(lambda: asyncio.run(migrate())).result()
    with psycopg.connect(postgres_server.admin_url(), autocommit=True) as conn:
        conn.execute(sql.SQL("ALTER DATABASE {} WITH IS_TEMPLATE true").format(
            sql.Identifier(name)))
    return name


@pytest.fixture
def memory_pg_url(postgres_server: PostgresServer, memory_pg_template: str) -> Iterator[str]:
    """A fresh, migrated database for this test, dropped after it."""
    import psycopg
    from psycopg import sql

    name = f"m{os.getpid()}_{secrets.token_hex(4)}"
    with psycopg.connect(postgres_server.admin_url(), autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {} OWNER {} TEMPLATE {}").format(
            sql.Identifier(name), sql.Identifier(APP_ROLE), sql.Identifier(memory_pg_template)))
    try:
        yield postgres_server.url(name)
    finally:
        postgres_server.drop_database(name)


def store_fixture(settings: MemorySettings | None = None, *, model: bool = True,
                  backends: Sequence[object] = BACKENDS) -> Any:
    """A fixture that opens this test's store on each of `backends` (`open_backend`) with
    `settings` (`model_settings()` when None) and, with `model`, the shared embedder, and
    closes it after the test: `name = store_fixture(...)` in a conftest or a test module.

    One opener for every "open a store per backend, yield, close" fixture; `sqlite_only`
    and the like narrow it (`indirect`), as they narrow `store`."""
    @pytest.fixture(params=list(backends))
    async def opened(request: pytest.FixtureRequest,
                     data_dir: Path) -> AsyncIterator[MemoryStoreAPI]:
        embedder = request.getfixturevalue("embedder") if model else None
        chosen = (settings or model_settings()).model_copy(deep=True)   # each test its own
        st = await open_backend(request, data_dir, chosen, embedder)
        try:
            yield st
        finally:
            await st.close()
    return opened


# With real embeddings: SQLite + usearch, and PostgreSQL + pgvector.
store = store_fixture()
# Keyword only (no embedder, no vectors), on both stores.
kw_store = store_fixture(MemorySettings(embeddings_enabled=False), model=False)
# The SQLite store only: for tests of rumi.db itself (its files, FTS5 tables, PRAGMAs).
sqlite_store = store_fixture(backends=[SQLITE])
sqlite_kw_store = store_fixture(MemorySettings(embeddings_enabled=False), model=False,
                                backends=[SQLITE])

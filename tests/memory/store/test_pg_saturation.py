"""The seeded `cto.algorithms` row follows the config's frequency saturation (20 since issue
35's Step 8) on a new PostgreSQL store and on one made before; a value an operator chose
stays theirs."""

from __future__ import annotations

import psycopg
import pytest

from rumi.config import MemorySettings
from rumi.memory.store.postgres import schema as pg_schema
from rumi.memory.store.postgres.store import PgMemoryStore
from tests.memory.conftest import EMBED_DIM

KW = MemorySettings(embeddings_enabled=False)


def saturations(url: str) -> list[object]:
    with psycopg.connect(url, autocommit=True) as conn:
        return [row[0] for row in conn.execute(
            "SELECT config #> '{scoring,frequency_saturation}' FROM cto.algorithms "
            "ORDER BY id")]


async def open_made_by_0_8_0(url: str, monkeypatch: pytest.MonkeyPatch,
                             operator_sql: str | None) -> PgMemoryStore:
    every = pg_schema.migrations
    with monkeypatch.context() as patch:
        patch.setattr(pg_schema, "migrations", lambda dim: every(dim)[:9])
        async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
            state = await pg_schema.migrate(conn, EMBED_DIM)
    assert "010_frequency_saturation_20" not in state.applied
    assert saturations(url) == [10]
    if operator_sql:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(operator_sql)
    return await PgMemoryStore.open(url, "casa", KW, None, dim=EMBED_DIM)


@pytest.mark.parametrize("made_before", [False, True], ids=["new store", "made by 0.8.0"])
async def test_the_seeded_row_scores_with_saturation_20(
        pg_url: str, monkeypatch: pytest.MonkeyPatch, made_before: bool) -> None:
    assert MemorySettings().recall_frequency_saturation == 20
    store = (await open_made_by_0_8_0(pg_url, monkeypatch, None) if made_before
             else await PgMemoryStore.open(pg_url, "casa", KW, None, dim=EMBED_DIM))
    try:
        assert saturations(pg_url) == [20]
        assert store.settings.recall_frequency_saturation == 20
    finally:
        await store.close()


async def test_a_saturation_an_operator_chose_is_kept(
        pg_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    store = await open_made_by_0_8_0(pg_url, monkeypatch, (
        "UPDATE cto.algorithms SET config = jsonb_set(config, "
        "'{scoring,frequency_saturation}', '3')"))
    try:
        assert saturations(pg_url) == [3]
        assert store.settings.recall_frequency_saturation == 3
    finally:
        await store.close()

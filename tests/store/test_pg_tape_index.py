"""The tape index on the PostgreSQL store lives in its `rumi` schema, not in a local file:
each Rumi indexes its own tapes (two Rumis with one person have two tapes of that chat), a
store that lacks the rows fills them again from the tape files, a day-window search reads the
rows through a server-side cursor, and a rebuild after a redaction leaves none of the old
words in the table."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import psycopg

from rumi.config import MemorySettings
from rumi.memory.store.postgres.store import PgMemoryStore
from rumi.memory.store.tape_index import TapeIndex
from rumi.paths import ChatPaths
from tests.pg_server import app_toml

KW = MemorySettings(embeddings_enabled=False)


def write_tape(data_dir: Path, chat: str, lines: list[tuple[int, str, str]]) -> Path:
    paths = ChatPaths(data_dir, chat)
    paths.smma.mkdir(parents=True, exist_ok=True)
    paths.tape.write_text("".join(
        json.dumps({"id": n, "timestamp": f"{day}T10:00:00Z", "role": "user",
                    "content": text}, ensure_ascii=False) + "\n"
        for n, text, day in lines), encoding="utf-8")
    return paths.tape


def sql(url: str, statement: str, params: tuple = ()) -> list[tuple]:
    with psycopg.connect(url, autocommit=True) as conn:
        cur = conn.execute(statement, params)
        return cur.fetchall() if cur.description else []


async def refs(index: TapeIndex, chat: str, query: str) -> list[str]:
    return [f"{hit.ref} {hit.text}" for hit in await index.search(chat, query, 20)]


async def test_each_rumi_indexes_its_own_tapes_of_a_shared_chat(pg_url, tmp_path):
    casa = await PgMemoryStore.open(pg_url, "casa", KW, None, dim=384)
    trabajo = await PgMemoryStore.open(pg_url, "trabajo", KW, None, dim=384)
    try:
        write_tape(tmp_path / "casa", "42", [(1, "Mi gata se llama Luna", "2026-06-01")])
        write_tape(tmp_path / "trabajo", "42", [(1, "La reunión es el martes", "2026-06-02"),
                                                (2, "Luna es el proyecto nuevo", "2026-06-03")])
        at_casa = TapeIndex(tmp_path / "casa", casa.tape_db)
        at_trabajo = TapeIndex(tmp_path / "trabajo", trabajo.tape_db)
        assert await at_casa.sync_all() == {"42": 1}
        assert await at_trabajo.sync_all() == {"42": 2}
        assert await at_casa.sync_all() == {"42": 0}   # casa dropped none of trabajo's rows

        assert await refs(at_casa, "42", "luna") == ["1 Mi gata se llama Luna"]
        assert await refs(at_trabajo, "42", "luna") == ["2 Luna es el proyecto nuevo"]
        assert await refs(at_trabajo, "42", "reunion") == ["1 La reunión es el martes"]
        assert await refs(at_casa, "7", "luna") == []   # another chat sees nothing
        assert sql(pg_url, "SELECT server_code, chat_id, messages FROM rumi.tape_sources "
                           "ORDER BY server_code") == [("casa", "42", 1), ("trabajo", "42", 2)]
        assert not (tmp_path / "casa" / "tape-index.db").exists()
        assert await at_casa.check() == ([], [])
    finally:
        await casa.close()
        await trabajo.close()


async def test_rows_lost_from_the_store_are_indexed_again_from_the_tapes(pg_url, tmp_path):
    store = await PgMemoryStore.open(pg_url, "casa", KW, None, dim=384)
    try:
        write_tape(tmp_path, "42", [(1, "Empiezo cerámica el martes", "2026-06-01"),
                                    (2, "Compré arcilla", "2026-06-02")])
        index = TapeIndex(tmp_path, store.tape_db)
        assert await index.sync_all() == {"42": 2}
        sql(pg_url, "DELETE FROM rumi.tape_sources")   # a restore of an older dump, say
        assert await refs(index, "42", "ceramica") == ["1 Empiezo cerámica el martes"]
        assert sql(pg_url, "SELECT count(*) FROM rumi.tape_messages") == [(2,)]
    finally:
        await store.close()


async def test_a_day_window_search_and_a_rebuild_after_a_redaction(pg_url, tmp_path):
    store = await PgMemoryStore.open(pg_url, "casa", KW, None, dim=384)
    try:
        days = [(n, f"mensaje {n} sobre el jardín", f"2026-06-{n:02d}") for n in range(1, 29)]
        tape = write_tape(tmp_path, "42", [*days, (29, "Mi PIN es 4821", "2026-06-29")])
        index = TapeIndex(tmp_path, store.tape_db)
        june_10 = (datetime(2026, 6, 10, tzinfo=UTC), datetime(2026, 6, 11, tzinfo=UTC))
        hits = await index.search("42", "", 5, [june_10])
        assert [hit.ref for hit in hits] == ["10"]
        assert [hit.ref for hit in await index.search("42", "jardin", 3)] == ["28", "27", "26"]
        assert await refs(index, "42", "4821") == ["29 Mi PIN es 4821"]

        tape.write_text(tape.read_text(encoding="utf-8").replace("Mi PIN es 4821",
                                                                 "[redactado]"),
                        encoding="utf-8")
        assert await index.rebuild("42") == 29
        assert await refs(index, "42", "4821") == []
        assert sql(pg_url, "SELECT count(*) FROM rumi.tape_messages WHERE content LIKE %s",
                   ("%4821%",)) == [(0,)]
    finally:
        await store.close()


async def test_the_app_on_postgresql_indexes_the_tapes_at_start(make_settings, fake_groq,
                                                                 pg_url, data_dir):
    """Switching a data dir with tapes to the PostgreSQL store: the first start fills the
    store's tape index from the files (the memory wiring's start-up catch-up)."""
    from rumi.app import build_app

    write_tape(data_dir, "42", [(1, "Mi gata se llama Luna", "2026-06-01"),
                                (2, "Luna come pienso", "2026-06-02")])
    settings = make_settings(app_toml(fake_groq.base_url), RUMI_STORE_URL=pg_url)
    app = await build_app(settings)
    await app.start()
    await app.stop()
    assert sql(pg_url, "SELECT s.server_code, s.chat_id, m.msg_id FROM rumi.tape_messages m "
                       "JOIN rumi.tape_sources s ON s.id = m.source ORDER BY m.msg_id") == [
        ("casa", "42", 1), ("casa", "42", 2)]
    assert not (data_dir / "rumi.db").exists()
    assert not (data_dir / "tape-index.db").exists()

"""Context blocks on the PostgreSQL store are seed 001's `cto.blocks` rows: this Rumi's
global blocks are scope `server` (server_code = store.name), a chat's are scope `agent`
(agent_code = the chat), a session's carry its id; `cto.get_active_blocks` finds them; the
seed's own `global` rows apply to every chat of every Rumi; two Rumis' blocks never mix; two
upserts of one block at once leave one row."""

from __future__ import annotations

import asyncio

import psycopg

from rumi.config import MemorySettings
from rumi.memory.store.blocks import BlockScope, BlockStore
from rumi.memory.store.postgres.store import PgMemoryStore

KW = MemorySettings(embeddings_enabled=False)


def sql(url: str, statement: str, params: tuple = ()) -> list[tuple]:
    with psycopg.connect(url, autocommit=True) as conn:
        cur = conn.execute(statement, params)
        return cur.fetchall() if cur.description else []


async def test_blocks_are_cto_rows_of_each_rumi(pg_url):
    casa = await PgMemoryStore.open(pg_url, "casa", KW, None, dim=384)
    trabajo = await PgMemoryStore.open(pg_url, "trabajo", KW, None, dim=384)
    try:
        at_casa, at_trabajo = BlockStore(casa), BlockStore(trabajo)
        persona = await at_casa.upsert("persona", "Eres Rumi, en casa.", priority=200)
        mine = await at_casa.upsert("proyecto", "El huerto.", scope="chat", chat_id="42",
                                    priority=150)
        task = await at_casa.upsert("tarea", "Regar.", scope=BlockScope.SESSION, chat_id="42",
                                    session_id="s1", priority=10)
        work = await at_trabajo.upsert("persona", "Eres Rumi, en el trabajo.", priority=200)
        assert sql(pg_url, "SELECT code, scope, server_code, agent_code, session_id "
                           "FROM cto.blocks ORDER BY id") == [
            ("persona", "server", "casa", None, None),
            ("proyecto", "agent", "casa", "42", None),
            ("tarea", "session", "casa", "42", "s1"),
            ("persona", "server", "trabajo", None, None)]
        assert sql(pg_url, "SELECT code FROM cto.get_active_blocks('server', 'casa')") == [
            ("persona",)]
        sql(pg_url, "INSERT INTO cto.blocks(hash, code, content, scope, priority) VALUES "
                    "(repeat('a', 64), 'reglas', 'Nunca compartas contraseñas.', 'global', 50)")

        assert [b.code for b in await at_casa.active_for("42", "s1")] == [
            "persona", "proyecto", "reglas", "tarea"]
        assert [b.id for b in await at_casa.active_for("42")][:2] == [persona.id, mine.id]
        assert [b.content for b in await at_trabajo.active_for("42")] == [
            "Eres Rumi, en el trabajo.", "Nunca compartas contraseñas."]
        assert [b.id for b in await at_trabajo.list("42")] == [work.id]
        # trabajo can neither switch off nor delete casa's blocks
        assert not await at_trabajo.set_status(mine.id, "inactive")
        assert not await at_trabajo.delete(task.id)
        assert (await at_casa.get("tarea", scope="session", chat_id="42",
                                  session_id="s1")) == task

        again = await asyncio.gather(*(at_casa.upsert("persona", f"Versión {n}.")
                                       for n in range(8)))
        assert {b.id for b in again} == {persona.id}
        assert sql(pg_url, "SELECT count(*) FROM cto.blocks WHERE server_code = 'casa' "
                           "AND code = 'persona'") == [(1,)]
    finally:
        await casa.close()
        await trabajo.close()

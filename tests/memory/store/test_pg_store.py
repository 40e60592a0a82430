"""What only the PostgreSQL store has: seed 001's SQL functions, the `cto.algorithms` row Rumi
reads, ownership across Rumis, pgvector's iterative scans, row-level races, schema refusal.

Everything shared with SQLite runs through the parametrised `store` / `kw_store` fixtures in
the other files; here each test opens what it needs on a fresh database of the test server.
"""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime, timedelta

import numpy as np
import psycopg
import pytest

from rumi.config import MemorySettings
from rumi.memory.recall.scoring import score
from rumi.memory.store.models import MemoryStatus, MemoryType, NewMemory
from rumi.memory.store.postgres.schema import StoreSchemaError
from rumi.memory.store.postgres.store import PgMemoryStore, redacted
from tests.memory.conftest import EMBED_DIM, model_settings
from tests.memory.two_rumis import two_rumis

KW = MemorySettings(embeddings_enabled=False)


def unit(seed: int, dim: int = EMBED_DIM) -> np.ndarray:
    vector = np.random.default_rng(seed).standard_normal(dim).astype(np.float32)
    return vector / np.linalg.norm(vector)


def sql(url: str, statement: str, params: tuple = ()) -> list[tuple]:
    with psycopg.connect(url, autocommit=True) as conn:
        cur = conn.execute(statement, params)
        return cur.fetchall() if cur.description else []


async def test_sql_score_equals_the_python_score_on_the_same_rows(memory_pg_url, embedder):
    """cto.calculate_memory_score (seed 001) and rumi/memory/recall/scoring.py agree to 1e-6
    on rows of every type, age, importance and days of use, with the weights of the active
    cto.algorithms row — and still agree after an operator activates other weights."""
    store = await PgMemoryStore.open(memory_pg_url, "casa", model_settings(), embedder)
    try:
        kinds = [MemoryType.PREFERENCE, MemoryType.DECISION, MemoryType.FACT,
                 MemoryType.ENTITY, MemoryType.TEMPORAL, MemoryType.EPISODIC]
        now = datetime(2026, 6, 1, 12, tzinfo=UTC)
        saved = [(await store.save("42", NewMemory(
            f"Recuerdo número {n} sobre viajes y comida" + (" ¿y tú? " if n % 3 == 0 else ""),
            type=kinds[n % len(kinds)],
            importance=round(0.1 + 0.13 * n, 2) % 1,
            created_at=now - timedelta(days=3 * n, hours=n)))).memory for n in range(8)]
        for n, memory in enumerate(saved):   # 1–4 days of use, each of 1–3 accesses
            for day in range(1 + n % 4):
                for _ in range(1 + (n + day) % 3):
                    await store.mark_accessed("42", [memory.id], now + timedelta(days=day))
        query = await store.embed_query("¿Qué comimos en el viaje?")

        async def compare(settings: MemorySettings) -> None:
            rows, vectors = await store.get_many_with_vectors("42", [m.id for m in saved])
            assert len(vectors) == len(saved)
            assert {m.access_days for m in rows} == {1, 2, 3, 4}
            assert any(m.access_count > m.access_days for m in rows)
            for memory in rows:
                cosine = float(np.dot(vectors[memory.id], query))
                expected = score(memory, cosine, now, settings).total
                [(got,)] = sql(memory_pg_url,
                               "SELECT cto.calculate_memory_score(%s, %s::vector, %s)",
                               (memory.id, str(query.tolist()), now))
                assert got == pytest.approx(expected, abs=1e-6), memory

        await compare(store.settings)
        assert store.settings.weight_importance == 0.40 and store.settings.weight_recency == 0.20
        # an operator activates new weights: the active row is what both sides read
        config = {"scoring": {"weights": {"recency": 0.5, "importance": 0.1, "relevance": 0.3,
                                          "frequency": 0.1},
                              "decay_rates": {"fact": 0.3, "preference": 0.2},
                              "frequency_saturation": 3, "gate_by_relevance": False,
                              "question_weight": 0.5}}
        sql(memory_pg_url, "UPDATE cto.algorithms SET status = 'deprecated' "
            "WHERE status = 'active'")
        sql(memory_pg_url, "INSERT INTO cto.algorithms(code, version, config, status, parent_id)"
            " VALUES ('memory_scoring', '2.1.0', %s, 'active', 1)", (json.dumps(config),))
    finally:
        await store.close()
    again = await PgMemoryStore.open(memory_pg_url, "casa", model_settings(), embedder)
    try:
        assert again.settings.weight_recency == 0.5
        assert again.settings.decay_per_day == {"fact": 0.3, "preference": 0.2}
        assert again.settings.recall_frequency_saturation == 3
        assert again.settings.recall_gate_by_relevance is False
        assert again.settings.recall_question_weight == 0.5
        store = again
        await compare(again.settings)
    finally:
        await again.close()


async def test_search_memories_and_get_active_blocks_do_what_seed_001_says(memory_pg_url,
                                                                          embedder):
    store = await PgMemoryStore.open(memory_pg_url, "casa", model_settings(), embedder)
    try:
        dog = (await store.save("42", NewMemory("Tiene un perro que se llama Toby"))).memory
        await store.save("42", NewMemory("Trabaja de enfermera en el hospital"))
        await store.save("77", NewMemory("Tiene un perro labrador"))   # another person
        query = await store.embed_query("mascota perro")
    finally:
        await store.close()
    rows = sql(memory_pg_url, "SELECT id, similarity, score FROM cto.search_memories("
               "%s::vector, '42', 5, 0.0)", (str(query.tolist()),))
    assert rows[0][0] == dog.id and len(rows) == 2   # only the owner's, best first
    assert rows[0][1] >= rows[1][1] and all(0 < r[2] <= 1 for r in rows)
    strict = sql(memory_pg_url, "SELECT id FROM cto.search_memories(%s::vector, '42', 5, %s)",
                 (str(query.tolist()), rows[0][1] - 1e-9))
    assert [r[0] for r in strict] == [dog.id]   # min_similarity cuts the rest

    for code, scope, server, agent, priority in [
            ("rules", "global", None, None, 1), ("persona", "global", None, None, 5),
            ("casa_only", "server", "casa", None, 3), ("trabajo_only", "server", "trabajo",
                                                       None, 3),
            ("agent_x", "agent", None, "x", 2)]:
        sql(memory_pg_url, "INSERT INTO cto.blocks(hash, code, content, scope, server_code, "
            "agent_code, priority) VALUES (md5(%s) || md5(%s), %s, %s, %s, %s, %s, %s)",
            (code, code, code, f"texto {code}", scope, server, agent, priority))
    sql(memory_pg_url, "UPDATE cto.blocks SET status = 'inactive' WHERE code = 'rules'")
    codes = lambda *a: [r[0] for r in sql(  # noqa: E731
        memory_pg_url, "SELECT code FROM cto.get_active_blocks(%s, %s, %s)", a)]
    assert codes("global", None, None) == ["persona"]
    assert codes("server", "casa", None) == ["casa_only"]
    assert codes("agent", None, "x") == ["agent_x"]
    assert codes("agent", None, "y") == []


async def test_a_small_owner_still_gets_k_neighbours_among_many_owners(memory_pg_url,
                                                                       embedder):
    """HNSW alone stops after ef_search candidates, most of them other people's; the store's
    iterative scan keeps going until k rows pass the owner filter."""
    store = await PgMemoryStore.open(memory_pg_url, "casa", model_settings(), embedder)
    try:
        store_model = store.model
        # bulk: 3,000 rows of 150 other people, then the index built once (as a restore does)
        sql(memory_pg_url, "DROP INDEX cto.ix_memory_embedding")
        sql(memory_pg_url,
            "INSERT INTO cto.memory(hash, owner_id, owner_type, type, content, embedding, "
            "embedding_model) SELECT md5(g::text) || md5(g::text), (g %% 150)::text, 'user', "
            "'fact', 'recuerdo ' || g, (SELECT array_agg(random() - 0.5) FROM "
            "generate_series(1, %s) WHERE g > 0)::vector, %s "
            "FROM generate_series(1, 3000) g", (EMBED_DIM, store_model))
        sql(memory_pg_url,
            "INSERT INTO cto.memory(hash, owner_id, owner_type, type, content, embedding, "
            "embedding_model) SELECT md5('s' || g) || md5('s' || g), '-999', 'group', 'fact', "
            "'pequeño ' || g, (SELECT array_agg(random() - 0.5) FROM generate_series(1, %s) "
            "WHERE g > 0)::vector, %s FROM generate_series(1, 12) g", (EMBED_DIM, store_model))
        sql(memory_pg_url, "CREATE INDEX ix_memory_embedding ON cto.memory USING hnsw "
            "(embedding vector_cosine_ops)")
        sql(memory_pg_url, "ANALYZE cto.memory")
        query = unit(7)
        hits = await store.nearest("-999", query, 10)
        assert len(hits) == 10
        assert all(-1 <= s <= 1 for _, s in hits)
        assert [s for _, s in hits] == sorted((s for _, s in hits), reverse=True)
        owners = sql(memory_pg_url, "SELECT DISTINCT owner_id FROM cto.memory WHERE id = ANY(%s)",
                     ([i for i, _ in hits],))
        assert owners == [("-999",)]
    finally:
        await store.close()


async def test_forget_leaves_nothing_of_the_memory_in_cto_memory(memory_pg_url, embedder):
    store = await PgMemoryStore.open(memory_pg_url, "casa", model_settings(), embedder)
    try:
        first = (await store.save("42", NewMemory("Su PIN es 1111", key="pin"))).memory
        second = await store.supersede("42", first.id, NewMemory("Su PIN es 2222", key="pin"))
        third = await store.update("42", second.id, content="Su PIN es 3333")
        keep = (await store.save("42", NewMemory("Le gusta nadar"))).memory
        gone = await store.forget("42", memory_id=third.id)
        assert [m.id for m in gone] == [third.id] and gone.history == 1
    finally:
        await store.close()
    rows = sql(memory_pg_url, "SELECT id, content, embedding IS NOT NULL FROM cto.memory")
    assert rows == [(keep.id, "Le gusta nadar", True)]
    hashes = {r[0] for r in sql(memory_pg_url, "SELECT hash FROM rumi.forgotten_hashes "
                                               "WHERE owner_id = '42'")}
    assert {first.content_hash, third.content_hash} <= hashes


async def test_two_rumis_writing_the_same_memory_at_once_lose_nothing(memory_pg_url):
    casa = await PgMemoryStore.open(memory_pg_url, "casa", KW, None, dim=EMBED_DIM)
    trabajo = await PgMemoryStore.open(memory_pg_url, "trabajo", KW, None, dim=EMBED_DIM)
    try:
        async def say(store: PgMemoryStore, n: int) -> int:
            result = await store.save("42", NewMemory("Vive en Lima", importance=n / 40))
            await store.mark_accessed("42", [result.memory.id])
            return result.memory.id

        ids = await asyncio.gather(*(say(casa if n % 2 else trabajo, n) for n in range(40)))
        assert len(set(ids)) == 1
        [row] = sql(memory_pg_url, "SELECT access_count_v2, importance, status FROM cto.memory")
        assert row == (40, 39 / 40, "active")   # every access counted, the largest kept
        # two supersedes of the same memory at once: one wins, the other is told, no fork
        old = ids[0]
        results = await asyncio.gather(
            casa.supersede("42", old, NewMemory("Vive en Cusco")),
            trabajo.supersede("42", old, NewMemory("Vive en Quito")),
            return_exceptions=True)
        won = [r for r in results if not isinstance(r, BaseException)]
        assert len(won) == 1 and len(results) - len(won) == 1
        active = [m.content for m in await casa.list("42")]
        assert active == [won[0].content]
        assert (await casa.get("42", old)).superseded_by == won[0].id
    finally:
        await casa.close()
        await trabajo.close()


async def test_one_persons_memories_reach_every_rumi_and_nobody_else(memory_pg_url):
    casa = await PgMemoryStore.open(memory_pg_url, "casa", KW, None, dim=EMBED_DIM)
    trabajo = await PgMemoryStore.open(memory_pg_url, "trabajo", KW, None, dim=EMBED_DIM)
    try:
        mine = (await casa.save("42", NewMemory("Mi gato se llama Michi"))).memory
        group = (await casa.save("-100", NewMemory("El grupo cena los viernes"))).memory
        assert [i for i, _ in await trabajo.keyword_search("42", "gato")] == [mine.id]
        assert await trabajo.keyword_search("43", "gato") == []
        assert await trabajo.keyword_search("42", "viernes") == []
        assert await trabajo.get("43", mine.id) is None
        assert await trabajo.get("42", group.id) is None
        assert [m.id for m in await trabajo.list("-100")] == [group.id]
        assert sql(memory_pg_url, "SELECT owner_type, owner_id, server_code FROM cto.memory "
                   "ORDER BY id") == [("user", "42", "casa"), ("group", "-100", "casa")]
        assert await trabajo.sharing() == ["trabajo", "casa"]
        # forgetting on one forgets for both
        await trabajo.forget("42", memory_id=mine.id)
        assert await casa.get("42", mine.id) is None
    finally:
        await casa.close()
        await trabajo.close()


async def test_spanish_and_english_words_find_their_forms_without_accents(memory_pg_url):
    store = await PgMemoryStore.open(memory_pg_url, "casa", KW, None, dim=EMBED_DIM)
    try:
        es = (await store.save("42", NewMemory("Le encantan las canciones de cuna"))).memory
        en = (await store.save("42", NewMemory("She was running marathons every spring"))).memory
        assert [i for i, _ in await store.keyword_search("42", "cancion")] == [es.id]
        assert [i for i, _ in await store.keyword_search("42", "canción")] == [es.id]
        assert [i for i, _ in await store.keyword_search("42", "marathon runs")] == [en.id]
        assert await store.keyword_search("42", "' OR 1=1 --") == []
        assert await store.keyword_search("42", "a & b | !c <-> (d)") == []
    finally:
        await store.close()


async def test_a_newer_or_different_schema_is_refused_in_one_line(memory_pg_url):
    store = await PgMemoryStore.open(memory_pg_url, "casa", KW, None, dim=EMBED_DIM)
    await store.close()
    with pytest.raises(StoreSchemaError) as wrong_dim:
        await PgMemoryStore.open(memory_pg_url, "casa", KW, None, dim=768)
    assert "384" in str(wrong_dim.value) and "768" in str(wrong_dim.value)
    sql(memory_pg_url, "INSERT INTO rumi.schema_migrations(name) VALUES ('900_from_the_future')")
    with pytest.raises(StoreSchemaError) as newer:
        await PgMemoryStore.open(memory_pg_url, "casa", KW, None, dim=EMBED_DIM)
    text = str(newer.value)
    assert "\n" not in text and "900_from_the_future" in text and "newer" in text
    password = memory_pg_url.split(":")[2].split("@")[0]
    assert password not in text and password not in redacted(memory_pg_url)
    assert redacted(memory_pg_url).startswith("127.0.0.1:")


async def test_expired_and_superseded_rows_keep_their_status(memory_pg_url):
    store = await PgMemoryStore.open(memory_pg_url, "casa", KW, None, dim=EMBED_DIM)
    try:
        past = datetime.now(UTC) - timedelta(minutes=1)
        old = (await store.save("42", NewMemory("Viaje a Roma", type=MemoryType.EPISODIC,
                                                expires_at=past))).memory
        assert await store.keyword_search("42", "Roma") == []
        assert await store.purge_expired() == 1
        assert (await store.get("42", old.id)).status == MemoryStatus.EXPIRED
    finally:
        await store.close()


async def test_a_forget_on_one_rumi_leaves_the_other_rumis_memory_md(memory_pg_url, tmp_path):
    """Two Rumis, two data dirs, one store: casa forgets, and the line leaves trabajo's
    MEMORY.md by itself (NOTIFY, then the memory wiring re-renders the file); a memory casa
    learns appears there too. casa never hears its own changes."""
    async with two_rumis(memory_pg_url, tmp_path, dim=EMBED_DIM) as rumis:
        casa, sync = rumis.casa, rumis.sync
        heard_by_casa: list[str] = []

        async def casa_heard(chat: str) -> None:
            heard_by_casa.append(chat)

        await casa.watch(casa_heard)
        await rumis.trabajo_listens(rumis.runtime.changed_elsewhere)
        pin = (await casa.save("42", NewMemory("Su PIN es 4821"))).memory
        await casa.save("42", NewMemory("Le gusta nadar"))
        await sync.write("42")
        md = rumis.memory_md("42")
        assert "Su PIN es 4821" in md.read_text(encoding="utf-8")

        await casa.forget("42", memory_id=pin.id)

        async def settled(wanted: bool) -> None:
            while ("Su PIN es 4821" in md.read_text(encoding="utf-8")) != wanted:
                await asyncio.sleep(0.05)

        await asyncio.wait_for(settled(False), 20)
        assert "Le gusta nadar" in md.read_text(encoding="utf-8")
        await casa.save("42", NewMemory("Su PIN es 4821", source="explicit"))
        await asyncio.wait_for(settled(True), 20)
        assert heard_by_casa == []   # its own writes are not news to it


async def test_status_names_the_store_and_the_rumis_sharing_it_never_the_password(
        memory_pg_url, tmp_path):
    from rumi.memory.status import memory_count

    async with two_rumis(memory_pg_url, tmp_path, dim=EMBED_DIM) as rumis:
        await rumis.casa.save("42", NewMemory("Le gusta nadar"))
        line = await memory_count(rumis.trabajo, "42")
    password = memory_pg_url.split(":")[2].split("@")[0]
    database = memory_pg_url.rsplit("/", 1)[1]
    assert "1" in line.splitlines()[0]
    assert f"{redacted(memory_pg_url)}" in line and database in line
    assert "trabajo" in line and "casa" in line.splitlines()[1].split(";")[1]
    assert password not in line


async def test_the_configured_store_is_what_the_memory_feature_opens(memory_pg_url, make_settings,
                                                                     data_dir):
    """`[store] backend = "postgres"`: open_memory_store gives the PostgreSQL store, with the
    weights of cto.algorithms; nothing is written to a local SQLite file."""
    from rumi.memory.factory import open_memory_store

    settings = make_settings('[store]\nbackend = "postgres"\nname = "casa"\n'
                             "[memory]\nembeddings_enabled = false\n",
                             RUMI_STORE_URL=memory_pg_url)
    store = await open_memory_store(settings)
    try:
        assert store.backend == "postgres" and store.recovery is None
        saved = (await store.save("42", NewMemory("Vive en Lima", source="explicit"))).memory
        assert store.settings.weight_importance == 0.40
    finally:
        await store.close()
    assert not (data_dir / "rumi.db").exists()
    assert not (data_dir / "tape-index.db").exists()   # the tape index is in the rumi schema
    assert sql(memory_pg_url, "SELECT content, server_code FROM cto.memory WHERE id = %s",
               (saved.id,)) == [("Vive en Lima", "casa")]


async def test_a_remember_sent_while_postgresql_restarts_is_kept(tmp_path):
    """The server stops (clients' connections drop) and comes back 2 s later: a save made
    while it is down waits for it and is kept; the pool reconnects by itself."""
    from tests.conftest import require
    from tests.pg_server import PostgresServer, PostgresUnavailable

    try:
        server = PostgresServer().start()   # its own server: this test stops it
    except PostgresUnavailable as exc:
        require(False, f"no PostgreSQL for the tests: {exc}")
        raise
    try:
        url = server.create_database()
        store = await PgMemoryStore.open(url, "casa", KW, None, dim=EMBED_DIM)
        try:
            before = (await store.save("42", NewMemory("Antes del corte"))).memory
            restart = asyncio.create_task(asyncio.to_thread(server.restart, down_for=2.0))

            def down() -> bool:
                try:
                    with psycopg.connect(url, connect_timeout=1):
                        return False
                except psycopg.OperationalError:
                    return True

            while not await asyncio.to_thread(down):
                await asyncio.sleep(0.05)
            during = (await store.save("42", NewMemory("Durante el corte",
                                                       source="explicit"))).memory
            await restart
            after = await store.list("42")
            assert {m.id for m in after} == {before.id, during.id}
        finally:
            await store.close()
        assert sql(url, "SELECT content FROM cto.memory ORDER BY id") == [
            ("Antes del corte",), ("Durante el corte",)]
    finally:
        server.stop()


async def test_memories_stored_without_vectors_are_embedded_on_first_use(memory_pg_url,
                                                                         embedder):
    """A rebuild (or a migration) stores rows without vectors; the chat's first vector search
    embeds them, `reindex` the rest, and stats count them."""
    store = await PgMemoryStore.open(memory_pg_url, "casa", model_settings(backfill_batch=2),
                                     embedder)
    try:
        saved = await store.save_many("42", [NewMemory(f"Tiene {n} gatos y un perro")
                                             for n in range(5)], embed=False)
        dog = (await store.save("42", NewMemory("Su perro se llama Toby"), )).memory
        assert (await store.stats("42"))["embedded"] == 1
        hits = await store.vector_search("42", "perro", 10)   # backfills one batch first
        assert dog.id in {i for i, _ in hits} and len(hits) == 3
        assert await store.reindex("42") == {"embedded": 3, "indexed": 6}
        assert len(await store.get_embeddings("42", [m.memory.id for m in saved])) == 5
    finally:
        await store.close()


async def test_a_rare_word_outranks_a_word_every_memory_has(memory_pg_url):
    """Recall's keyword half weighs each word by its rarity in the chat (BM25's idf): the
    speaker's name, in every turn, must not outrank the one word the question is about."""
    from rumi.memory.recall.query import plan

    store = await PgMemoryStore.open(memory_pg_url, "casa", KW, None, dim=EMBED_DIM)
    try:
        chatter = await store.save_many("42", [
            NewMemory(f"Caroline: fuimos de compras el día {n}", type=MemoryType.EPISODIC,
                      created_at=datetime.now(UTC) - timedelta(days=5))
            for n in range(30)])
        rex = (await store.save("42", NewMemory("Caroline: adoptamos un cachorro, Rex",
                                                type=MemoryType.EPISODIC))).memory
        other = (await store.save("42", NewMemory(   # days later: not the same conversation
            "Melanie: el cachorro ya camina", type=MemoryType.EPISODIC,
            created_at=datetime.now(UTC) + timedelta(days=2)))).memory
        hits = await store.keyword_index.search("42", plan("Caroline cachorro", []), 5)
        # the rare word, alone, beats the common one, alone (ranked without idf they tie,
        # and the older chatter came first)
        assert {i for i, _ in hits[:2]} == {rex.id, other.id}
        assert hits[1][1] > 10 * hits[2][1]
        assert hits[2][0] in {r.memory.id for r in chatter}
    finally:
        await store.close()

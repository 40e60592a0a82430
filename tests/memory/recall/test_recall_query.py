"""Query reading (stop words, dates) and the recall index's context capture and backfill."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

from rumi.config import MemorySettings
from rumi.memory.recall.query import date_ranges, plan, search_terms
from rumi.memory.recall.retrieval import MemoryRecall
from rumi.memory.store import schema
from rumi.memory.store.memories import MemoryStore
from rumi.memory.store.models import MemoryType, NewMemory
from rumi.memory.vectors.embeddings import Embedder
from tests.memory.backends import sqlite_only_kw
from tests.memory.conftest import model_settings, open_store


def test_search_terms_drop_question_and_stop_words() -> None:
    assert search_terms("What did Caroline's sister paint last year?") == (
        "caroline", "sister", "paint", "last", "year")
    assert search_terms("¿Qué le regalé a mi madre en su cumpleaños?") == (
        "regalé", "madre", "cumpleaños")
    assert search_terms("what is it?") == ("what", "is", "it")
    assert search_terms('NEAR( "x" * -') == ("near",)


def test_dates_in_english_and_spanish() -> None:
    def days(text: str) -> list[tuple[str, str]]:
        return [(r.start.date().isoformat(), r.end.date().isoformat()) for r in date_ranges(text)]

    assert days("Which team did Tim sign with on 21 May, 2023?") == [("2023-05-21", "2023-05-22")]
    assert days("as mentioned on November 6, 2023") == [("2023-11-06", "2023-11-07")]
    assert days("What did he read on 8th December, 2023?") == [("2023-12-08", "2023-12-09")]
    assert days("What did John do in December 2023?") == [("2023-12-01", "2024-01-01")]
    assert days("¿Qué hice el 2 de junio de 2025?") == [("2025-06-02", "2025-06-03")]
    assert days("en marzo de 2024 y en 2022") == [("2024-03-01", "2024-04-01"),
                                                  ("2022-01-01", "2023-01-01")]
    assert days("2024-02-29 and 2023-02-30") == [("2024-02-29", "2024-03-01")]
    assert days("I may go there, she has 2 cats") == []
    assert plan("dinner on 3 March, 2023").dates[0].contains(
        datetime(2023, 3, 3, 20, tzinfo=UTC))


def fts_rows(db: Path, table: str) -> dict[int, tuple[str, str, str]]:
    with sqlite3.connect(db) as conn:
        return {r[0]: (r[1], r[2], r[3])  # noqa: S608 - table names come from the registry
                for r in conn.execute(f"SELECT rowid, content, ctx1, ctx2 FROM {table}")}


async def test_context_is_captured_at_save_and_follows_status(data_dir: Path) -> None:
    store = await open_store(data_dir, MemorySettings(embeddings_enabled=False), None)
    try:
        index = MemoryRecall(store, store.settings).keyword_index
        assert await index.table("1") is None  # nothing stored: no table for the chat
        t0 = datetime(2026, 1, 5, 10, tzinfo=UTC)
        ids = [(await store.save("1", NewMemory(content="turn 0", type=MemoryType.EPISODIC,
                                                created_at=t0))).memory.id]
        table = await index.table("1")
        assert table is not None  # created and backfilled; triggers keep it in sync from here
        ids += [(await store.save("1", NewMemory(content=f"turn {n}", type=MemoryType.EPISODIC,
                                                 created_at=t0 + timedelta(minutes=n)))).memory.id
                for n in (1, 2)]
        fact = (await store.save("1", NewMemory(content="a fact", created_at=t0))).memory.id
        other = (await store.save("2", NewMemory(content="turn 9", type=MemoryType.EPISODIC,
                                                 created_at=t0))).memory.id
        rows = fts_rows(data_dir / "rumi.db", table)
        assert rows[ids[0]] == ("turn 0", "", "")
        assert rows[ids[2]] == ("turn 2", "turn 1", "turn 0")
        assert rows[fact] == ("a fact", "", "")  # other type: not the same conversation thread
        assert other not in rows  # another chat's memory never enters this chat's table
        await store.forget("1", memory_id=ids[1])
        assert ids[1] not in fts_rows(data_dir / "rumi.db", table)
        await store.update("1", ids[2], content="turn two")
        assert fts_rows(data_dir / "rumi.db", table)[ids[2]][0] == "turn two"
    finally:
        await store.close()


async def test_a_database_with_the_shared_index_upgrades_to_per_chat_tables(
    data_dir: Path,
) -> None:
    """A rumi.db from before migration 011 (one shared `recall_fts`) keeps recalling."""
    store = await open_store(data_dir, MemorySettings(embeddings_enabled=False), None)
    try:
        t0 = datetime(2026, 1, 5, 10, tzinfo=UTC)
        for text in ("Ana: Which team did you sign with?", "Tim: The Wolves!"):
            await store.save("1", NewMemory(content=text, type=MemoryType.EPISODIC,
                                            created_at=t0))
        conn = store.connection
        await conn.execute("DROP TABLE recall_chats")
        await conn.execute("CREATE VIRTUAL TABLE recall_fts USING fts5(content, ctx1, ctx2)")
        await conn.execute("INSERT INTO recall_fts(rowid, content, ctx1, ctx2) "
                           "SELECT id, content, '', '' FROM memories")
        await conn.execute("CREATE TRIGGER recall_fts_ai AFTER INSERT ON memories BEGIN "
                           "INSERT INTO recall_fts(rowid, content, ctx1, ctx2) "
                           "VALUES (new.id, new.content, '', ''); END")
        await conn.execute("DELETE FROM schema_migrations WHERE name = '011_recall_fts_per_chat'")
    finally:
        await store.close()
    store = await MemoryStore.open(data_dir / "rumi.db", MemorySettings(embeddings_enabled=False))
    try:
        async with store.connection.execute(
            "SELECT name FROM sqlite_master WHERE name LIKE 'recall_fts%'"
        ) as cur:
            assert [r[0] async for r in cur] == []  # shared table and its triggers dropped
        await store.save("1", NewMemory(content="Ana: Congrats on signing!",
                                        type=MemoryType.EPISODIC, created_at=t0))
        found = await MemoryRecall(store, store.settings).recall("1", "sign", k=5)
        assert sorted(s.memory.content for s in found) == [
            "Ana: Congrats on signing!", "Ana: Which team did you sign with?",
            "Tim: The Wolves!"]
    finally:
        await store.close()


@sqlite_only_kw  # SQLite's per-chat FTS5 table and its doc budget
async def test_common_words_are_dropped_within_the_doc_budget(kw_store: MemoryStore) -> None:
    saved = await kw_store.save_many("1", [NewMemory(content=f"common word number {n}")
                                           for n in range(30)]
                                     + [NewMemory(content="rare zebra sighting")])
    zebra = saved[-1].memory.id
    index = kw_store.keyword_index

    async def found(query: str, budget: int) -> set[int]:
        return {i for i, _ in await index.search("1", plan(query), 50, doc_budget=budget)}

    assert await found("common zebra", 10) == {zebra}  # "common" (30 docs) would not fit
    assert await found("common zebra", 100) == {r.memory.id for r in saved}
    assert len(await found("common", 10)) == 10  # the rarest word is always kept
    assert await found("absent", 10) == set()


async def traced(store: MemoryStore, recall: MemoryRecall, chat: str, query: str
                 ) -> tuple[list[str], list[str]]:
    """(contents recalled, SQL statements the recall ran; nested trigger/pragma lines aside)."""
    statements: list[str] = []
    await store.connection.set_trace_callback(statements.append)
    try:
        found = await recall.recall(chat, query, k=5)
    finally:
        await store.connection.set_trace_callback(None)
    return [s.memory.content for s in found], [s for s in statements if not s.startswith("--")]


@sqlite_only_kw  # SQLite's per-chat FTS5 table and its doc budget
async def test_an_empty_chat_is_looked_up_once_until_a_memory_arrives(
    kw_store: MemoryStore,
) -> None:
    """An empty chat's recall looked up the registry and its memories every time; that answer
    is now remembered, and forgotten by the first save, so the very next recall finds it."""
    recall = MemoryRecall(kw_store, kw_store.settings)
    query = "where does the user live"
    assert await recall.recall("0", query, k=5) == []  # the registry is checked once per store
    found, first = await traced(kw_store, recall, "1", query)
    assert found == [] and len(first) == 2  # the chat's registry row, then its memories
    found, again = await traced(kw_store, recall, "1", query)
    assert found == [] and again == ["PRAGMA data_version"]
    await kw_store.save("1", NewMemory(content="The user lives in Lima"))
    found, _ = await traced(kw_store, recall, "1", query)
    assert found == ["The user lives in Lima"]


async def test_an_import_by_another_process_reaches_the_next_recall(data_dir: Path) -> None:
    """`rumi memory import` (or an archive restore) in a shell writes through its own
    connection, which this one's `total_changes` never sees: `data_version` does."""
    settings = MemorySettings(embeddings_enabled=False)
    bot = await open_store(data_dir, settings, None)
    shell = await open_store(data_dir, settings, None)
    try:
        recall = MemoryRecall(bot, settings)
        query = "where does the user live"
        for _ in range(2):
            assert await recall.recall("1", query, k=5) == []
        await shell.save("2", NewMemory(content="The user lives in Lima"))
        report = await shell.import_report("1", await shell.export_jsonl("2"))
        assert report.imported == 1
        found = await recall.recall("1", query, k=5)
        assert [s.memory.content for s in found] == ["The user lives in Lima"]
    finally:
        await shell.close()
        await bot.close()


@sqlite_only_kw  # SQLite's per-chat FTS5 table and its doc budget
async def test_a_word_too_common_for_the_budget_ranks_only_its_newest_matches(
    kw_store: MemoryStore,
) -> None:
    """The rarest word is always kept; when even it matches more than the budget, bm25 runs on
    its newest `budget` matches only (it used to score all of them: ~250 ms at 100k)."""
    saved = await kw_store.save_many("1", [NewMemory(content=f"common word number {n}")
                                           for n in range(30)])
    ids = sorted(r.memory.id for r in saved)
    settings = MemorySettings(embeddings_enabled=False, recall_keyword_doc_budget=10)
    recall = MemoryRecall(kw_store, settings)
    hits = await recall.keyword_index.search("1", plan("common"), 50, doc_budget=10)
    assert sorted(i for i, _ in hits) == ids[-10:]
    hits = await recall.keyword_index.search("1", plan("common"), 50, doc_budget=100)
    assert len(hits) == 30  # within the budget: every match is ranked


@sqlite_only_kw  # SQLite's per-chat FTS5 table and its doc budget
async def test_a_word_in_half_the_ranked_window_ranks_nothing_beside_the_vector_half(
    kw_store: MemoryStore,
) -> None:
    """Past the budget, a word in at least half of the window that would be ranked has BM25 IDF
    ≤ 0 there (FTS5 clamps it to 1e-6); ranking it cost FTS5's IDF pass over the word's whole
    posting list (~15 ms at 100k) only for fusion to inflate noise into a full keyword match.
    Beside the vector half it ranks nothing; keyword-only recall still ranks the window."""
    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    saved = await kw_store.save_many("1", [  # hours apart: no conversational context
        NewMemory(content=f"{'half' if n % 2 else 'other'} "
                          f"{'third' if n % 3 == 0 else 'filler'} line {n}",
                  created_at=t0 + timedelta(hours=4 * n))
        for n in range(60)])
    ids = [r.memory.id for r in saved]
    index = kw_store.keyword_index

    async def found(word: str, rank_common_words: bool) -> list[int]:
        hits = await index.search("1", plan(word), 50, doc_budget=5,
                                  rank_common_words=rank_common_words)
        return sorted(i for i, _ in hits)

    assert await found("half", rank_common_words=False) == []
    assert await found("half", rank_common_words=True) == ids[1::2][-5:]
    # in a third of the window: BM25 still weighs it, so its newest matches are ranked
    assert await found("third", rank_common_words=False) == ids[::3][-5:]
    # within the budget nothing changes, however common the word
    assert len(await index.search("1", plan("half"), 50, doc_budget=100,
                                  rank_common_words=False)) == 30


async def test_hybrid_recall_leaves_a_too_common_word_to_the_vectors(
    data_dir: Path, embedder: Embedder
) -> None:
    settings = model_settings(recall_keyword_doc_budget=5)
    store = await open_store(data_dir, settings, embedder)
    try:
        t0 = datetime(2026, 1, 1, tzinfo=UTC)
        await store.save_many("1", [NewMemory(content=f"Today's tea was number {n}",
                                              created_at=t0 + timedelta(days=n))
                                    for n in range(20)])
        hybrid = await MemoryRecall(store, settings).recall("1", "tea", k=5, touch=False)
        assert len(hybrid) == 5 and all(s.score.keyword == 0 for s in hybrid)
        keyword_only = await MemoryRecall(store, settings, mode="keyword").recall(
            "1", "tea", k=5, touch=False)
        assert len(keyword_only) == 5 and all(s.score.keyword > 0 for s in keyword_only)
    finally:
        await store.close()


@sqlite_only_kw  # SQLite's query plans
async def test_lookups_by_id_never_scan_the_whole_chat(kw_store: MemoryStore) -> None:
    """`chat_id = ? AND id IN (…100 ids…)` made SQLite walk the chat's whole index (~25 ms per
    lookup at 100k memories); every by-id statement of a recall must use rowid lookups."""
    saved = await kw_store.save_many("1", [NewMemory(content=f"note {n}") for n in range(300)])
    ids = [r.memory.id for r in saved][::3]
    statements: list[str] = []
    await kw_store.connection.set_trace_callback(statements.append)
    try:
        await kw_store.get_many("1", ids)
        await kw_store.get_embeddings("1", ids)
        await kw_store.mark_accessed("1", ids)
        await kw_store._alive_ids("1", ids)
        await kw_store.forget("1", memory_id=ids[0])
    finally:
        await kw_store.connection.set_trace_callback(None)
    by_id = [s for s in statements if " IN (" in s and "memories" in s]
    assert len(by_id) >= 4
    for sql in by_id:
        async with kw_store.connection.execute("EXPLAIN QUERY PLAN " + sql) as cur:
            plan_rows = [row[3] async for row in cur]
        assert not any("ix_memories_chat_status" in p for p in plan_rows), (sql, plan_rows)


async def test_per_chat_tables_from_before_migration_012_are_rebuilt_with_keys(
    data_dir: Path,
) -> None:
    """Tables built by migration 011's code had no key/summary columns; 012 drops them, and
    the next search rebuilds them, so `/search` finds a fact by its key."""
    settings = MemorySettings(embeddings_enabled=False)
    store = await open_store(data_dir, settings, None)
    try:
        fact = (await store.save("1", NewMemory(content="Lima", key="ciudad"))).memory
        table = await store.keyword_index.table("1")
        assert table is not None
        conn = store.connection
        for name in schema.RECALL_TRIGGERS:
            await conn.execute(f"DROP TRIGGER {table}_{name}")
        await conn.execute(f"DROP TABLE {table}")
        await conn.execute(f"CREATE VIRTUAL TABLE {table} USING fts5(content, ctx1, ctx2)")
        await conn.execute(f"INSERT INTO {table}(rowid, content, ctx1, ctx2) "
                           "SELECT id, content, '', '' FROM memories")
        await conn.execute("DELETE FROM schema_migrations WHERE name LIKE '012%'")
    finally:
        await store.close()
    store = await MemoryStore.open(data_dir / "rumi.db", settings)
    try:
        assert [i for i, _ in await store.keyword_search("1", "ciudad", 5)] == [fact.id]
        found = await MemoryRecall(store, settings).recall("1", "Lima", k=5)
        assert [s.memory.id for s in found] == [fact.id]
        async with store.connection.execute(
            "SELECT count(*) FROM sqlite_master WHERE name = ?", (table,)
        ) as cur:
            assert (await cur.fetchone())[0] == 0  # the old table is gone, not reused
    finally:
        await store.close()


async def _recall_table(store: MemoryStore, chat: str) -> str:
    [(n,)] = await store.connection.execute_fetchall(
        "SELECT n FROM recall_chats WHERE chat_id = ?", (chat,))
    return f"recall_fts_{n}"


async def _built_then_altered(data_dir: Path, settings: MemorySettings,
                              statements: list[str]) -> str:
    """A chat "1" whose keyword table was built by a first process, then altered by
    `statements` (`{table}` is its name) before that process exits; the table's name."""
    first = await open_store(data_dir, settings, None)
    try:
        await first.save("1", NewMemory(content="Lives in Lima", key="ciudad"))
        assert len(await first.keyword_search("1", "ciudad")) == 1
        table = await _recall_table(first, "1")
        async with first.transaction() as conn:
            for sql in statements:
                await conn.execute(sql.format(table=table))
        return table
    finally:
        await first.close()


async def test_a_keyword_table_of_another_definition_is_rebuilt(data_dir: Path) -> None:
    """An older Rumi still running beside migration 012 rebuilt a chat's table without the
    `key` and `summary` columns, and every `/search` of that chat failed (returned nothing)
    until someone rebuilt it by hand. A table that is not exactly this version's is rebuilt."""
    settings = MemorySettings(embeddings_enabled=False)
    await _built_then_altered(data_dir, settings, [
        *(f"DROP TRIGGER {{table}}_{suffix}" for suffix in schema.RECALL_TRIGGERS),
        "DROP TABLE {table}",
        "CREATE VIRTUAL TABLE {table} USING fts5(content, ctx1, ctx2)",
        "INSERT INTO {table}(rowid, content, ctx1, ctx2) SELECT id, content, '', '' FROM memories",
    ])
    again = await open_store(data_dir, settings, None)
    try:
        assert len(await again.keyword_search("1", "ciudad")) == 1
        found = await MemoryRecall(again, settings).recall("1", "Lima", k=3)
        assert [s.memory.content for s in found] == ["Lives in Lima"]
        await again.save("1", NewMemory(content="Works in Cusco"))  # the triggers are back
        found = await MemoryRecall(again, settings).recall("1", "Cusco", k=3)
        assert [s.memory.content for s in found] == ["Works in Cusco"]
    finally:
        await again.close()


async def test_a_keyword_table_with_other_bm25_weights_is_rebuilt(data_dir: Path) -> None:
    settings = MemorySettings(embeddings_enabled=False)
    table = await _built_then_altered(data_dir, settings, [
        "INSERT INTO {table}({table}, rank) VALUES ('rank', 'bm25()')"])
    again = await open_store(data_dir, settings, None)
    try:
        assert await MemoryRecall(again, settings).recall("1", "Lima", k=3)
        [(rank,)] = await again.connection.execute_fetchall(
            f"SELECT v FROM {table}_config WHERE k = 'rank'")
        assert rank.startswith("bm25(2.0")
    finally:
        await again.close()


async def test_a_current_keyword_table_is_reused_after_a_restart(data_dir: Path) -> None:
    settings = MemorySettings(embeddings_enabled=False)
    await _built_then_altered(data_dir, settings, [])
    again = await open_store(data_dir, settings, None)
    try:
        found, statements = await traced(again, MemoryRecall(again, settings), "1", "Lima")
        assert found == ["Lives in Lima"]
        assert not [s for s in statements if s.startswith(("CREATE", "DROP", "BEGIN"))]
    finally:
        await again.close()

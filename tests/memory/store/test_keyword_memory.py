"""Recall's keyword ranking from arrays (`memory.recall_keyword_engine = "memory"`,
`keyword_memory`) against FTS5's own bm25 on the same real store.

The truth is always FTS5 itself: the same store's keyword index with the memory engine
switched off for one search. Every write a chat sees in real use (save, edit, supersede,
forget, erase, import, another process, a restart) is made, and the next search must give
the very same ids and scores — and a forgotten memory's words must be gone from the arrays
themselves, not only filtered from the results."""

from __future__ import annotations

import asyncio
import random
import sqlite3
import threading
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from rumi.config import MemorySettings
from rumi.memory.recall.query import QueryPlan, plan
from rumi.memory.store import recall_index
from rumi.memory.store.codec import utcnow
from rumi.memory.store.coverage import KeywordHits
from rumi.memory.store.keyword_memory import ChatKeywords, Stopped, Tokens, read_chat
from rumi.memory.store.memories import MemoryStore
from rumi.memory.store.models import MemoryType, NewMemory

SETTINGS = MemorySettings(embeddings_enabled=False, recall_keyword_engine="memory",
                          recall_keyword_memory_min=0)
WORDS = ("harbour", "lighthouse", "keeper", "ferry", "painted", "painting", "paints", "boat",
         "canción", "cancion", "noon", "storm", "rope", "gull", "tide", "anchor", "sail",
         "mast", "dock", "pier", "netting", "crab", "salt", "wind", "foghorn")


@pytest.fixture
async def store(tmp_path: Path):
    opened = await MemoryStore.open(tmp_path / "rumi.db", SETTINGS)
    try:
        yield opened
    finally:
        await opened.close()


async def _arrays(store: MemoryStore, chat: str) -> ChatKeywords:
    """The chat's arrays as they stand now (read first if they are not held)."""
    index = store.keyword_index
    assert index.memory is not None
    assert await index.prepare(chat)
    table = await index.table(chat)
    assert table is not None
    view = await index.memory.view(chat, table)
    assert view is not None
    return view


async def _reads_done(store: MemoryStore) -> None:
    memory = store.keyword_index.memory
    assert memory is not None
    await asyncio.gather(*memory._building.values())  # noqa: SLF001 - wait for the reads


async def _both(store: MemoryStore, chat: str, query: QueryPlan, limit: int = 50,
                budget: int = 2_000, *, common: bool = True,
                served: bool = True) -> tuple[KeywordHits, KeywordHits]:
    """(the memory engine's hits, FTS5's hits) for one query on the same store, same moment;
    `served`: the arrays, not FTS5, must have ranked the first."""
    index = store.keyword_index
    assert index.memory is not None
    if index.memory.peek(chat, await index.table(chat) or "") is None:
        await _arrays(store, chat)   # held from now on; a stale copy is the search's to notice
    before = index.memory.served
    reading = bool(index.memory._building)  # noqa: SLF001 - its end takes the lock: FTS5 then
    mine = await index.search(chat, query, limit, budget, rank_common_words=common)
    assert reading or (index.memory.served > before) == served
    memory, index.memory = index.memory, None
    try:
        truth = await index.search(chat, query, limit, budget, rank_common_words=common)
    finally:
        index.memory = memory
    return mine, truth


async def _same(store: MemoryStore, chat: str, text: str, **kwargs: Any) -> list[int]:
    mine, truth = await _both(store, chat, plan(text), **kwargs)  # type: ignore[arg-type]
    assert list(mine) == list(truth)   # ids and scores, float for float
    assert getattr(mine, "coverage", None) == getattr(truth, "coverage", None)
    return [i for i, _ in mine]


def _text(rng: random.Random) -> str:
    # Zipf-like: the first words are common, so budgets and windows come into play
    picks = [WORDS[min(int(rng.paretovariate(1.1)) - 1, len(WORDS) - 1)]
             for _ in range(rng.randint(2, 9))]
    return " ".join(picks) + f" item{rng.randint(0, 40)}"


@pytest.mark.parametrize("seed", [1, 2, 3])
async def test_the_same_ids_and_scores_as_fts5_over_generated_chats(
        store: MemoryStore, seed: int) -> None:
    rng = random.Random(seed)
    types = (MemoryType.FACT, MemoryType.EPISODIC, MemoryType.PREFERENCE)
    saved = await store.save_many("1", [
        NewMemory(_text(rng), type=rng.choice(types),
                  key=rng.choice([None, "boat", "harbour"]),
                  summary=rng.choice([None, "tide and storm"]))
        for _ in range(300)])
    held = await _arrays(store, "1")
    assert held.rows == len({s.memory.id for s in saved}) > 250
    for n in range(40):
        text = " ".join(rng.sample(WORDS, rng.randint(1, 5)))
        for budget in (2_000, 60, 5):   # everything; some words dropped; the newest window
            await _same(store, "1", text, budget=budget, common=bool(n % 2))
    # words the chat never said, standing in for by their other language's words
    query = replace(plan("puerto faro"), alternatives={"puerto": ("harbour", "dock"),
                                                       "faro": ("lighthouse",)})
    mine, truth = await _both(store, "1", query, budget=60)
    assert list(mine) == list(truth) and mine and mine.coverage == truth.coverage


async def test_a_forgotten_memory_leaves_the_arrays_with_its_words(store: MemoryStore) -> None:
    saved = await store.save_many("1", [NewMemory(f"harbour note {n}") for n in range(20)]
                                  + [NewMemory("the zanzibar lighthouse keeper")])
    secret = saved[-1].memory.id
    assert secret in await _same(store, "1", "zanzibar lighthouse")
    builds = store.keyword_index.memory.builds  # type: ignore[union-attr]
    await store.forget("1", memory_id=secret)
    held = await _arrays(store, "1")   # caught up at once: no count holds the words
    assert held.count("zanzibar") == 0 and held.count("lighthous") == 0
    assert held.rows == 20
    assert await _same(store, "1", "zanzibar lighthouse") == []
    # and the chat is read again behind it, so not even the word's string stays in memory
    await _reads_done(store)
    assert store.keyword_index.memory.builds == builds + 1  # type: ignore[union-attr]
    assert "zanzibar" not in (await _arrays(store, "1")).terms
    # erased the way a redaction does, too
    gone = saved[3].memory.id
    await store.erase("1", [gone])
    assert gone not in await _same(store, "1", "harbour note")
    assert len(await _same(store, "1", "harbour note")) == 19


async def test_an_edit_replaces_the_old_words(store: MemoryStore) -> None:
    saved = await store.save_many("1", [NewMemory(f"harbour note {n}") for n in range(10)]
                                  + [NewMemory("the ferry left the harbour")])
    edited = saved[-1].memory.id
    await _arrays(store, "1")
    await store.update("1", edited, content="the boat left at noon")
    assert await _same(store, "1", "ferry") == []
    assert await _same(store, "1", "boat noon") == [edited]
    assert (await _arrays(store, "1")).count("ferri") == 0
    newer = await store.supersede("1", edited, NewMemory("the gull flew over the pier"))
    assert await _same(store, "1", "boat noon") == []
    assert await _same(store, "1", "gull pier") == [newer.id]


async def test_every_write_of_the_chat_reaches_the_next_search(store: MemoryStore) -> None:
    rng = random.Random(9)
    saved = await store.save_many("1", [NewMemory(_text(rng)) for _ in range(80)])
    await _arrays(store, "1")
    memory = store.keyword_index.memory
    assert memory is not None
    builds = memory.builds
    await store.save("1", NewMemory("a storm broke the mast at the dock"))
    await _same(store, "1", "storm mast dock")
    await store.update("1", saved[5].memory.id, content="crab netting by the pier")
    await _same(store, "1", "crab netting pier harbour")
    # saves and edits are caught up on from this connection's own log: never read again
    assert memory.builds == builds
    await store.forget("1", key=None, text="crab netting")
    await _same(store, "1", "crab netting pier")
    await _reads_done(store)   # a deletion reads the chat again behind the caught-up arrays
    assert memory.builds == builds + 1
    lines = await store.export_jsonl("1")
    await store.import_report("1", [line.replace("harbour", "foghorn") for line in lines[:30]])
    await _same(store, "1", "foghorn harbour keeper")
    await store.save("1", NewMemory("salt wind", expires_at=utcnow() - timedelta(hours=1)))
    assert await _same(store, "1", "salt wind") == await _same(store, "1", "wind salt")
    assert memory.builds == builds + 1


async def test_another_chats_memories_never_appear(store: MemoryStore) -> None:
    await store.save_many("1", [NewMemory(f"harbour note {n}") for n in range(10)])
    other = await store.save_many("2", [NewMemory(f"harbour zanzibar secret {n}")
                                        for n in range(40)])
    ids = set(await _same(store, "1", "harbour zanzibar"))
    assert len(ids) == 10 and not ids & {s.memory.id for s in other}
    assert (await _arrays(store, "1")).count("zanzibar") == 0
    await store.save("2", NewMemory("zanzibar again"))
    assert (await _arrays(store, "1")).count("zanzibar") == 0
    assert set(await _same(store, "2", "zanzibar")) >= {s.memory.id for s in other}


async def test_another_process_writing_is_seen(store: MemoryStore, tmp_path: Path) -> None:
    saved = await store.save_many("1", [NewMemory(f"harbour note {n}") for n in range(20)]
                                  + [NewMemory("the zanzibar keeper")])
    await _arrays(store, "1")
    builds = store.keyword_index.memory.builds  # type: ignore[union-attr]
    with sqlite3.connect(tmp_path / "rumi.db") as conn:
        conn.execute("UPDATE memories SET status = 'deleted' WHERE id = ?",
                     (saved[-1].memory.id,))
    # the next search sees the stamp move with no write of its own: FTS5 ranks it meanwhile
    assert [i for i, _ in await store.keyword_index.search("1", plan("zanzibar"), 50)] == []
    held = await _arrays(store, "1")   # read again
    assert store.keyword_index.memory.builds == builds + 1  # type: ignore[union-attr]
    assert held.count("zanzibar") == 0
    found = await _same(store, "1", "zanzibar keeper harbour")
    assert len(found) == 20 and saved[-1].memory.id not in found


async def test_a_restart_reads_the_arrays_again(tmp_path: Path) -> None:
    first = await MemoryStore.open(tmp_path / "rumi.db", SETTINGS)
    try:
        await first.save_many("1", [NewMemory(f"harbour note {n} tide") for n in range(30)])
        before = await _same(first, "1", "harbour tide")
    finally:
        await first.close()
    second = await MemoryStore.open(tmp_path / "rumi.db", SETTINGS)
    try:
        assert second.keyword_index.memory.builds == 0  # type: ignore[union-attr]
        assert await _same(second, "1", "harbour tide") == before
        assert second.keyword_index.memory.builds == 1  # type: ignore[union-attr]
    finally:
        await second.close()


async def test_a_word_fts5_splits_is_left_to_fts5(store: MemoryStore) -> None:
    """A query word the tokenizer makes two tokens of (a phrase to FTS5: here a New Tai Lue
    vowel sign, a letter to Python and a separator to SQLite's Unicode tables) is never
    looked up as one word in the arrays: such a query is ranked by FTS5 itself."""
    word = "harb\u19b0our"
    saved = await store.save_many("1", [NewMemory(f"{word} note"), NewMemory("harb our"),
                                        NewMemory("harbour")])
    index = store.keyword_index
    assert index.memory is not None
    assert plan(word).terms == (word,) and len(index.memory.tokens.word(word)) == 2
    found = await _same(store, "1", f"{word} note", served=False)   # FTS5's answer
    assert found[0] == saved[0].memory.id


def test_a_querys_new_words_are_tokenized_together_as_one_by_one() -> None:
    """`Tokens.words` tokenizes a query's uncached words in one batch: each word gets the
    very tokens `word` gives it alone (two, one or none), in order, and is cached."""
    words = ["painting", "harb\u19b0our", "Canción", "---", "painting", "gulls", "e-mail"]
    batch = Tokens(recall_index.TOKENIZER)
    alone = Tokens(recall_index.TOKENIZER)
    try:
        batch.word("gulls")   # one cached already
        found = batch.words(words)
        assert list(found) == list(dict.fromkeys(words))
        assert found == {w: alone.word(w) for w in words}
        assert (found["painting"], found["harb\u19b0our"], found["---"], found["e-mail"]) == (
            ("paint",), ("harb", "our"), (), ("e", "mail"))
        assert batch.words(["painting"]) == {"painting": ("paint",)}
    finally:
        batch.close()
        alone.close()


async def test_a_small_chat_below_the_minimum_is_ranked_by_fts5(tmp_path: Path) -> None:
    settings = SETTINGS.model_copy(update={"recall_keyword_memory_min": 50})
    store = await MemoryStore.open(tmp_path / "rumi.db", settings)
    try:
        await store.save_many("1", [NewMemory(f"harbour note {n}") for n in range(10)])
        assert not await store.keyword_index.prepare("1")
        assert len(await store.keyword_index.search("1", plan("harbour"), 50)) == 10
        assert store.keyword_index.memory.builds == 0  # type: ignore[union-attr]
        # known small now: the next searches do not even read the table's stamp for it
        seen: list[str] = []
        await store.connection.set_trace_callback(seen.append)
        assert len(await store.keyword_index.search("1", plan("harbour note"), 50)) == 10
        assert seen and not [sql for sql in seen if "recall_kw_log" in sql]
        # grown past the minimum: its next search starts reading its arrays
        await store.save_many("1", [NewMemory(f"tide note {n}") for n in range(45)])
        await store.keyword_index.search("1", plan("tide"), 50)
        assert await store.keyword_index.prepare("1")
        assert store.keyword_index.memory.builds == 1  # type: ignore[union-attr]
    finally:
        await store.close()


async def test_only_the_held_chats_writes_are_logged(store: MemoryStore) -> None:
    """The log of this connection's writes is kept only for chats whose arrays are held or
    being read, and a chat pushed out (least recently used) leaves it."""
    index = store.keyword_index
    assert index.memory is not None
    index.memory.CHATS = 1
    await store.save_many("1", [NewMemory(f"harbour note {n}") for n in range(5)])
    await store.save_many("2", [NewMemory(f"harbour tide {n}") for n in range(5)])
    await _arrays(store, "1")
    await store.save("2", NewMemory("not logged: chat 2 is not held"))
    await store.save("1", NewMemory("logged: chat 1 is held"))

    async def logged() -> list[str]:
        rows = await store.connection.execute_fetchall(
            "SELECT chat_id FROM temp.recall_kw_log ORDER BY seq")
        return [r[0] for r in rows]

    assert await logged() == ["1"]
    await _same(store, "1", "logged held")   # caught up: the log is consumed
    assert await logged() == []
    await _arrays(store, "2")                  # chat 1 leaves (one chat held)
    await store.save("1", NewMemory("chat 1 again"))
    assert await logged() == []
    await _same(store, "1", "chat again")      # read again, and still the same as FTS5


async def test_a_write_during_a_read_again_is_not_lost(store: MemoryStore) -> None:
    """A forget starts reading the chat again in a worker thread; whatever is saved, edited
    or forgotten while that read runs must still be in the arrays that replace the old."""
    saved = await store.save_many("1", [NewMemory(f"harbour note {n}") for n in range(30)])
    await _arrays(store, "1")
    for n in range(3):
        await store.forget("1", memory_id=saved[n].memory.id)
        await _same(store, "1", "harbour note")          # catches up, starts the read
        new = (await store.save("1", NewMemory(f"gull number {n} on the pier"))).memory
        await store.update("1", saved[10 + n].memory.id, content=f"storm {n} at the dock")
        await _same(store, "1", "gull pier storm dock")   # may be served while reading
        await _reads_done(store)
        found = await _same(store, "1", f"gull pier storm dock number {n}")
        assert new.id in found and saved[10 + n].memory.id in found
        assert saved[n].memory.id not in await _same(store, "1", "harbour note")


async def test_a_search_inside_a_transaction_leaves_the_arrays_alone(
        store: MemoryStore) -> None:
    """Inside a transaction this connection sees its uncommitted rows (FTS5 ranks then), and
    a transaction that rolls back leaves nothing in the arrays; one that commits is seen."""
    await store.save_many("1", [NewMemory(f"harbour note {n}") for n in range(20)])
    await _arrays(store, "1")
    index = store.keyword_index
    for commit in (False, True):
        try:
            async with store.transaction() as conn:
                await conn.execute(
                    "INSERT INTO memories(chat_id, type, content, source, importance, "
                    "confidence, access_count, created_at, updated_at, status, related_ids, "
                    "content_hash, metadata) SELECT chat_id, type, 'zanzibar harbour', source, "
                    "importance, confidence, 0, created_at, updated_at, status, related_ids, "
                    f"'x{commit}', metadata FROM memories WHERE chat_id = '1' LIMIT 1")
                inside = await index.search("1", plan("zanzibar"), 50)
                assert len(inside) == 1   # its own uncommitted row, ranked by FTS5
                if not commit:
                    raise RuntimeError("rolled back")
        except RuntimeError:
            pass
        found = await _same(store, "1", "zanzibar harbour")
        assert (await _arrays(store, "1")).count("zanzibar") == int(commit)
        assert len(found) == 20 + int(commit)


async def test_closing_the_store_stops_a_read_in_its_worker_thread(
        store: MemoryStore, tmp_path: Path) -> None:
    """A read stops between its parts once the store closes, so a one-off command on a big
    chat does not wait at exit for a read it will never use."""
    await store.save_many("1", [NewMemory(f"harbour note {n}") for n in range(10)])
    table = await store.keyword_index.table("1")
    assert table is not None
    stop = threading.Event()
    assert read_chat(tmp_path / "rumi.db", table, stop).rows == 10
    stop.set()
    with pytest.raises(Stopped):
        read_chat(tmp_path / "rumi.db", table, stop)


async def test_a_rebuilt_table_is_read_again(store: MemoryStore) -> None:
    """The chat's table dropped by hand and rebuilt under the same name (its schema version
    moves): the arrays of the old table are never used for the new one."""
    await store.save_many("1", [NewMemory(f"harbour note {n}") for n in range(20)])
    table = (await store.keyword_index.table("1")) or ""
    held = await _arrays(store, "1")
    for name in recall_index.RECALL_TRIGGERS:
        await store.connection.execute(f"DROP TRIGGER {table}_{name}")
    await store.connection.execute(f"DROP TABLE {table}")
    await store.save_many("1", [NewMemory(f"harbour later {n}") for n in range(4)])
    await store.keyword_index.search("1", plan("harbour"), 50)   # finds it gone
    assert len(await _same(store, "1", "harbour later")) == 24
    assert await store.keyword_index.table("1") == table
    again = await _arrays(store, "1")
    assert again is not held and again.rows == 24 and again.count("later") == 4


async def test_many_rows_caught_up_on_are_folded_into_a_new_read(store: MemoryStore) -> None:
    """Rows re-read after this connection's writes are kept aside (ranked in Python); past
    `CATCH_UP` of them the chat is read again, so they cannot pile up."""
    await store.save_many("1", [NewMemory(f"harbour note {n}") for n in range(10)])
    memory = store.keyword_index.memory
    assert memory is not None
    memory.CATCH_UP = 5
    await _arrays(store, "1")
    builds = memory.builds
    for n in range(4):
        await store.save("1", NewMemory(f"gull {n} on the pier"))
        await _same(store, "1", "gull pier harbour")
    assert memory.builds == builds
    for n in range(4, 8):
        await store.save("1", NewMemory(f"gull {n} on the pier"))
        await _same(store, "1", "gull pier harbour")
    await _reads_done(store)
    assert memory.builds > builds
    assert len((await _arrays(store, "1")).changed) <= 5
    assert len(await _same(store, "1", "gull pier harbour")) == 18

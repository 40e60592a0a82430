"""MemoryStore lifecycle against a real rumi.db and the real MiniLM model."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from rumi.memory.learning.consolidation import Consolidator
from rumi.memory.store import editing
from rumi.memory.store.codec import vector_label
from rumi.memory.store.memories import MemoryNotFoundError, MemoryStore
from rumi.memory.store.models import (
    MemoryInputError,
    MemorySource,
    MemoryStatus,
    MemoryType,
    NewMemory,
)
from rumi.memory.vectors.embeddings import Embedder
from tests.conftest import require_real_model
from tests.memory.backends import sqlite_only
from tests.memory.conftest import model_settings, open_store


async def test_save_get_list_fill_every_field(store: MemoryStore) -> None:
    before = datetime.now(UTC)
    result = await store.save("42", NewMemory(
        "Juan trabaja en Google como ingeniero", type=MemoryType.FACT, key="Trabajo",
        summary="trabaja en Google", source=MemorySource.EXPLICIT, importance=0.9,
        confidence=0.7, metadata={"from": "test"}))
    mem = result.memory
    assert result.created
    assert mem.chat_id == "42" and mem.key == "trabajo" and mem.status == MemoryStatus.ACTIVE
    assert mem.importance == 0.9 and mem.confidence == 0.7 and mem.source == MemorySource.EXPLICIT
    assert mem.embedding_model == vector_label(store.embedder.model_name,
                                               store.settings.recall_vector_context)
    assert mem.metadata == {"from": "test"} and len(mem.content_hash) == 64
    assert mem.created_at >= before.replace(microsecond=0)
    # fact TTL is 180 days by default, counted from now
    assert mem.expires_at is not None
    assert timedelta(days=179) < mem.expires_at - before < timedelta(days=181)
    assert await store.get("42", mem.id) == mem
    assert [m.id for m in await store.list("42")] == [mem.id]
    profile = (await store.save("42", NewMemory("Prefiere respuestas cortas",
                                                type=MemoryType.PROFILE))).memory
    assert profile.expires_at is None
    assert [m.id for m in await store.list("42", types=[MemoryType.PROFILE])] == [profile.id]


async def test_save_is_idempotent_by_content_hash(store: MemoryStore) -> None:
    first = await store.save("1", NewMemory("Tiene un perro llamado Toby", importance=0.3))
    again = await store.save("1", NewMemory("  tiene un  PERRO llamado toby ", importance=0.8))
    assert first.created and not again.created
    assert again.memory.id == first.memory.id
    assert again.memory.importance == 0.8  # saying it again never lowers importance
    assert (await store.stats("1"))["active"] == 1
    batch = await store.save_many("1", [NewMemory("Vive en Lima"), NewMemory("vive en lima"),
                                        NewMemory("Tiene un perro llamado Toby")])
    assert [r.created for r in batch] == [True, False, False]
    assert batch[0].memory.id == batch[1].memory.id
    assert (await store.stats("1"))["active"] == 2


async def test_key_value_facts_upsert_and_forget_by_key(store: MemoryStore) -> None:
    a = await store.save("7", NewMemory("trabaja en Google", key="trabajo"))
    b = await store.save("7", NewMemory("trabaja en Google", key="trabajo"))
    c = await store.save("7", NewMemory("da clases los sábados", key="trabajo"))
    d = await store.save("7", NewMemory("se llama Juan", key="nombre"))
    # same value under another key is a different fact
    e = await store.save("7", NewMemory("trabaja en Google", key="empresa"))
    assert b.memory.id == a.memory.id and not b.created
    assert len({a.memory.id, c.memory.id, d.memory.id, e.memory.id}) == 4
    forgotten = await store.forget("7", key="TRABAJO")
    assert sorted(m.id for m in forgotten) == sorted([a.memory.id, c.memory.id])
    assert all(m.status == MemoryStatus.DELETED for m in forgotten)
    assert [m.key for m in await store.list("7")] == ["empresa", "nombre"]
    assert await store.keyword_search("7", "clases sábados", 5) == []
    # forgetting again finds nothing; re-saving brings the fact back as a new memory
    assert await store.forget("7", key="trabajo") == []
    back = await store.save("7", NewMemory("trabaja en Google", key="trabajo"))
    assert back.created and back.memory.id != a.memory.id


async def test_two_chats_are_isolated(store: MemoryStore) -> None:
    secret = (await store.save("100", NewMemory("La clave del banco es 4321"))).memory
    mine = (await store.save("-200", NewMemory("Me gusta el ajedrez"))).memory
    assert await store.get("-200", secret.id) is None
    assert await store.get_many("-200", [secret.id, mine.id]) == [mine]
    assert [m.id for m in await store.list("-200")] == [mine.id]
    assert await store.keyword_search("-200", "clave banco 4321", 10) == []
    assert all(i != secret.id for i, _ in await store.vector_search("-200", "clave del banco", 10))
    assert await store.forget("-200", memory_id=secret.id) == []
    assert await store.forget("-200", text="clave del banco") == []
    with pytest.raises(MemoryNotFoundError):
        await store.update("-200", secret.id, content="robado")
    with pytest.raises(MemoryNotFoundError):
        await store.supersede("-200", secret.id, NewMemory("robado"))
    await store.mark_accessed("-200", [secret.id])
    assert (await store.get("100", secret.id)).access_count == 0
    assert "clave" not in "\n".join(await store.export_jsonl("-200"))
    assert (await store.get("100", secret.id)).status == MemoryStatus.ACTIVE
    assert [i for i, _ in await store.keyword_search("100", "banco", 5)] == [secret.id]


async def test_unknown_chat_is_empty_and_bad_chat_id_is_refused(store: MemoryStore) -> None:
    assert await store.list("999") == []
    assert await store.get("999", 1) is None
    assert await store.keyword_search("999", "hola", 5) == []
    assert await store.vector_search("999", "hola", 5) == []
    assert await store.forget("999", key="x") == []
    assert (await store.stats("999"))["total"] == 0
    assert await store.export_jsonl("999") == []
    for bad in ("../etc", "", "a b", "x" * 100, "1;DROP TABLE memories"):
        with pytest.raises(MemoryInputError):
            await store.list(bad)
        with pytest.raises(MemoryInputError):
            await store.save(bad, NewMemory("hola"))


async def test_keyword_search_ranks_and_ignores_diacritics(store: MemoryStore) -> None:
    song = (await store.save("5", NewMemory("Su canción favorita es Bohemian Rhapsody"))).memory
    cafe = (await store.save("5", NewMemory("Toma café con leche por la mañana"))).memory
    both = (await store.save("5", NewMemory("Escucha una cancion mientras toma cafe"))).memory
    hits = await store.keyword_search("5", "cancion", 10)
    assert {i for i, _ in hits} == {song.id, both.id}
    assert all(score > 0 for _, score in hits)
    ranked = await store.keyword_search("5", "canción café", 10)
    assert ranked[0][0] == both.id and {i for i, _ in ranked} == {song.id, cafe.id, both.id}
    assert [i for i, _ in await store.keyword_search("5", "canción café", 10,
                                                      match_all=True)] == [both.id]


@pytest.mark.parametrize("query", [
    '"', '""', "*", "canción*", "NEAR(", "NEAR(canción café", "-café", "canción -", ":",
    "content:canción", "(", ")", "AND", "OR NOT", "canción AND OR NOT café", "^café",
    "'; DROP TABLE memories; --", "\x00", "\ud800", "   ", "", "🙂", "{}[]", "a" * 10_000,
])
async def test_keyword_search_never_raises_on_fts_syntax(kw_store: MemoryStore, query: str) -> None:
    mem = (await kw_store.save("5", NewMemory("Su canción favorita: café y NEAR la playa"))).memory
    hits = await kw_store.keyword_search("5", query, 10)
    assert isinstance(hits, list)
    assert all(i == mem.id for i, _ in hits)
    assert await kw_store.integrity_check() == "ok"


async def test_vector_search_finds_by_meaning(store: MemoryStore) -> None:
    require_real_model()
    dog = (await store.save("3", NewMemory("My dog Toby loves running on the beach"))).memory
    await store.save("3", NewMemory("The quarterly tax report is due in April"))
    await store.save("3", NewMemory("I prefer green tea over coffee"))
    hits = await store.vector_search("3", "What is the name of my pet?", 3)
    assert hits[0][0] == dog.id
    assert -1.0 <= hits[-1][1] <= hits[0][1] <= 1.0
    vec = await store.embed_query("puppy playing at the seaside")
    assert await store.embed_query("puppy playing at the seaside") is vec  # cached
    assert not vec.flags.writeable
    fresh = (await store.embedder.embed(["puppy playing at the seaside"]))[0]
    assert float(vec @ fresh) > 0.9999
    assert await store.embed_query("   ") is None
    assert (await store.vector_search("3", vec, 1))[0][0] == dog.id
    stored = await store.get_embeddings("3", [dog.id])
    assert stored[dog.id].shape == (384,)


@sqlite_only  # SQLite's statements and the private steps of its editing
async def test_rows_with_their_vectors_in_one_trip(store: MemoryStore) -> None:
    """Recall's keyword hits load rows and stored vectors in one statement; it must answer
    exactly what `get_many` and `get_embeddings` answer, for this chat only, by rowid."""
    saved = await store.save_many("5", [NewMemory(f"Walked the dog on day {n}")
                                        for n in range(6)])
    other = (await store.save("6", NewMemory("Walked the dog in the other chat"))).memory
    ids = [r.memory.id for r in saved]
    async with store.transaction() as conn:  # one memory not embedded (yet)
        await conn.execute("DELETE FROM memory_embeddings WHERE memory_id = ?", (ids[2],))
    wanted = [ids[4], other.id, ids[2], ids[0], 999_999, ids[4]]
    statements: list[str] = []
    await store.connection.set_trace_callback(statements.append)
    try:
        rows, vectors = await store.get_many_with_vectors("5", wanted)
    finally:
        await store.connection.set_trace_callback(None)
    assert rows == await store.get_many("5", wanted)
    assert [m.id for m in rows] == [ids[4], ids[2], ids[0]]
    expected = await store.get_embeddings("5", wanted)
    assert sorted(vectors) == sorted(expected) == sorted([ids[4], ids[0]])
    for memory_id, vector in vectors.items():
        assert np.array_equal(vector, expected[memory_id])
    [sql] = [s for s in statements if " IN (" in s]
    async with store.connection.execute("EXPLAIN QUERY PLAN " + sql) as cur:
        plan_rows = [row[3] async for row in cur]
    assert not any("ix_memories_chat_status" in p for p in plan_rows), plan_rows


@sqlite_only  # SQLite's statements
async def test_recall_rows_take_the_vectors_from_a_verified_index(store: MemoryStore) -> None:
    """Once the chat's index is verified, recall's rows load without their 1.5 KB vectors
    and the index gives them: the same bytes SQLite holds. A row the index lacks reads
    SQLite's vector (if any); an index not verified (another process wrote) is not used."""
    saved = await store.save_many("5", [NewMemory(f"Fed the cat on day {n}") for n in range(6)])
    ids = [r.memory.id for r in saved]
    assert await store.prepare_vectors("5")
    async with store.transaction() as conn:  # one memory not embedded (yet), nor indexed
        await conn.execute("DELETE FROM memory_embeddings WHERE memory_id = ?", (ids[2],))
    assert await store.vectors.remove("5", [ids[2]]) == 1
    wanted = [ids[4], ids[2], ids[0], 999_999]
    expected = await store.get_embeddings("5", wanted)
    assert sorted(expected) == sorted([ids[4], ids[0]])

    async def load() -> tuple[list[str], dict[int, np.ndarray]]:
        statements: list[str] = []
        await store.connection.set_trace_callback(statements.append)
        try:
            rows, vectors = await store.recall_rows_with_vectors("5", wanted)
        finally:
            await store.connection.set_trace_callback(None)
        assert [r.id for r in rows] == [ids[4], ids[2], ids[0]]
        assert sorted(vectors) == sorted(expected)
        for memory_id, vector in vectors.items():
            assert vector.tobytes() == expected[memory_id].tobytes()
        return [s for s in statements if "memory_embeddings" in s], vectors

    from_index, _ = await load()
    # only the row the index lacks asked SQLite for a vector (and found none)
    assert len(from_index) == 1 and str(ids[2]) in from_index[0]
    assert str(ids[4]) not in from_index[0].split("IN (")[1]
    store.index.invalidate("5")   # what another process's write does until the next check
    from_sqlite, _ = await load()
    assert len(from_sqlite) == 1 and "LEFT JOIN memory_embeddings" in from_sqlite[0]


async def test_update_reembeds_and_rehashes(store: MemoryStore) -> None:
    mem = (await store.save("8", NewMemory("Plays the violin every evening"))).memory
    other = (await store.save("8", NewMemory("Works as a nurse at the hospital"))).memory
    updated = await store.update("8", mem.id, content="Plays the guitar in a rock band",
                                 importance=0.95)
    assert updated.content.startswith("Plays the guitar") and updated.importance == 0.95
    assert updated.content_hash != mem.content_hash and updated.updated_at >= mem.updated_at
    assert (await store.vector_search("8", "electric guitar music", 1))[0][0] == mem.id
    assert await store.keyword_search("8", "violin", 5) == []
    with pytest.raises(MemoryInputError):
        await store.update("8", mem.id, content="works as a nurse at the HOSPITAL")
    with pytest.raises(MemoryInputError):
        await store.update("8", other.id, importance=float("nan"))
    with pytest.raises(MemoryNotFoundError):
        await store.update("8", 99_999, importance=0.1)


async def test_supersede_keeps_history(store: MemoryStore) -> None:
    old = (await store.save("9", NewMemory("Vive en Madrid", key="ubicacion"))).memory
    new = await store.supersede("9", old.id, NewMemory("Vive en Barcelona", key="ubicacion",
                                                       importance=0.7))
    prev = await store.get("9", old.id)
    assert prev.status == MemoryStatus.SUPERSEDED and prev.superseded_by == new.id
    assert new.status == MemoryStatus.ACTIVE and old.id in new.related_ids
    assert [m.id for m in await store.list("9")] == [new.id]
    assert {m.id for m in await store.list("9", status=None)} == {old.id, new.id}
    assert [i for i, _ in await store.keyword_search("9", "Madrid", 5)] == []
    assert all(i != old.id for i, _ in await store.vector_search("9", "Madrid", 5))
    with pytest.raises(MemoryInputError):
        await store.supersede("9", old.id, NewMemory("Vive en Sevilla"))


class CountingEmbedder:
    """The real embedder, recording every text the store asks it to embed."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.texts: list[str] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def embed(self, texts: list[str]) -> np.ndarray | None:
        self.texts.extend(texts)
        return await self.inner.embed(texts)


async def test_dedup_points_at_the_existing_twin_without_embedding(
    data_dir: Path, embedder: Embedder
) -> None:
    """The periodic dedup supersedes by a twin that is already active; its text used to be
    embedded anyway (then thrown away) before the twin was found."""
    counting = CountingEmbedder(embedder)
    store = await open_store(data_dir, model_settings(), counting)  # type: ignore[arg-type]
    try:
        keep = (await store.save("9", NewMemory("Prefiere reuniones por la mañana",
                                                importance=0.9))).memory
        drop = (await store.save("9", NewMemory("Prefiere las reuniones por la mañana",
                                                importance=0.3, confidence=0.95))).memory
        assert len(counting.texts) == 2
        assert await Consolidator(store, None).deduplicate_chat("9") == 1
        assert counting.texts[2:] == []
        old, twin = await store.get_many("9", [drop.id, keep.id])
        assert old.status == MemoryStatus.SUPERSEDED and old.superseded_by == keep.id
        assert twin.status == MemoryStatus.ACTIVE and twin.content == keep.content
        assert twin.confidence == 0.95  # refreshed like a re-save: the stronger twin's values
        assert [m.id for m in await store.list("9")] == [keep.id]
        assert await store.index.index_ids("9") == [keep.id]  # the twin kept its vector
        assert await store.vectors.verify("9", [keep.id])
        # a supersede by a text nobody has yet still embeds it, once
        new = await store.supersede("9", keep.id, NewMemory("Prefiere reuniones por la tarde"))
        assert counting.texts[2:] == ["Prefiere reuniones por la tarde"]
        assert await store.vectors.verify("9", [new.id])
    finally:
        await store.close()


@sqlite_only  # SQLite's statements and the private steps of its editing
async def test_a_twin_forgotten_before_the_supersede_commits_is_not_pointed_at(
    store: MemoryStore,
) -> None:
    """The twin is looked up outside the write transaction; if it is gone by then, nothing is
    written and `supersede` falls back to inserting (and embedding) the new memory."""
    old = (await store.save("9", NewMemory("Vive en Madrid"))).memory
    twin = (await store.save("9", NewMemory("Vive en Valencia"))).memory
    await store.forget("9", memory_id=twin.id)
    mem = NewMemory("Vive en Valencia")
    assert not await editing._point_at_twin(store, "9", old.id, twin.id, mem, twin.content_hash)
    assert (await store.get("9", old.id)).status == MemoryStatus.ACTIVE
    new = await store.supersede("9", old.id, mem)
    assert new.id not in (old.id, twin.id) and new.status == MemoryStatus.ACTIVE
    assert (await store.get("9", old.id)).superseded_by == new.id
    assert (await store.vector_search("9", "Vive en Valencia", 1))[0][0] == new.id


@sqlite_only  # SQLite's statements and the private steps of its editing
async def test_an_old_memory_forgotten_before_the_supersede_commits_stays_forgotten(
    store: MemoryStore,
) -> None:
    """`supersede` checks the old memory before its transaction (and, without a twin, before
    embedding); a forget in that gap must win, not be turned into "superseded"."""
    old = (await store.save("9", NewMemory("Vive en Sevilla"))).memory
    twin = (await store.save("9", NewMemory("Vive en Cádiz"))).memory
    await store.forget("9", memory_id=old.id)
    fresh = NewMemory("Vive en Huelva")
    with pytest.raises(MemoryInputError):
        await editing._supersede_with_new(store, "9", old.id, fresh,
                                          editing.content_hash(fresh.content, None))
    with pytest.raises(MemoryInputError):
        await editing._point_at_twin(store, "9", old.id, twin.id, NewMemory("Vive en Cádiz"),
                                     twin.content_hash)
    assert await store.get("9", old.id) is None  # erased, and nothing re-created it
    assert [m.content for m in await store.list("9")] == ["Vive en Cádiz"]  # nothing inserted


async def test_forget_by_id_and_by_text(store: MemoryStore) -> None:
    a = (await store.save("4", NewMemory("Su hermana se llama Lucía"))).memory
    b = (await store.save("4", NewMemory("Su hermana vive en Lima"))).memory
    c = (await store.save("4", NewMemory("Le gusta el cine de terror"))).memory
    assert [m.id for m in await store.forget("4", memory_id=a.id)] == [a.id]
    assert await store.forget("4", memory_id=a.id) == []
    gone = await store.forget("4", text="hermana VIVE en lima")
    assert [m.id for m in gone] == [b.id] and gone[0].status == MemoryStatus.DELETED
    assert [m.id for m in await store.list("4")] == [c.id]
    assert await store.get_embeddings("4", [a.id, b.id]) == {}
    assert {i for i, _ in await store.vector_search("4", "hermana", 5)} == {c.id}
    with pytest.raises(MemoryInputError):
        await store.forget("4")
    with pytest.raises(MemoryInputError):
        await store.forget("4", memory_id=c.id, key="x")
    with pytest.raises(MemoryInputError):
        await store.forget("4", text='"*"')


async def test_mark_accessed_and_stats(store: MemoryStore) -> None:
    a = (await store.save("6", NewMemory("Fue a Oaxaca", type=MemoryType.EPISODIC))).memory
    b = (await store.save("6", NewMemory("Prefiere Python", type=MemoryType.PREFERENCE))).memory
    when = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    await store.mark_accessed("6", [a.id, a.id, b.id], when=when)
    await store.mark_accessed("6", [a.id])
    got = await store.get("6", a.id)
    assert got.access_count == 2 and got.last_accessed_at > when
    assert (await store.get("6", b.id)).last_accessed_at == when
    await store.forget("6", memory_id=b.id)
    stats = await store.stats("6")
    assert stats["by_type"] == {"episodic": 1}
    assert stats["by_status"] == {"active": 1}  # a forgotten memory leaves no row
    assert stats["embedded"] == 1 and stats["embeddings"]["available"] is True


async def test_purge_expired_rebuilds_the_index(store: MemoryStore, data_dir: Path) -> None:
    past = datetime.now(UTC) - timedelta(minutes=1)
    old = (await store.save("11", NewMemory("Old episode about a trip to Rome",
                                            type=MemoryType.EPISODIC, expires_at=past))).memory
    keep = (await store.save("11", NewMemory("Trip to Rome planned for next year"))).memory
    gone = (await store.save("11", NewMemory("Trip notes to forget"))).memory
    await store.forget("11", memory_id=gone.id)
    # an expired memory is already invisible before the purge runs
    assert all(i != old.id for i, _ in await store.vector_search("11", "Rome trip", 5))
    assert all(i != old.id for i, _ in await store.keyword_search("11", "Rome", 5))
    assert await store.purge_expired() == 1
    assert (await store.get("11", old.id)).status == MemoryStatus.EXPIRED
    assert await store.purge_expired() == 0
    if store.backend == "sqlite":   # usearch only marks removals: the purge rebuilt the file
        meta = json.loads((data_dir / "vectors" / "11.json").read_text())
        assert meta["count"] == 1 and store.vectors.removed("11") == 0
        assert await store.vectors.verify("11", [keep.id])
    stats = await store.stats("11")
    assert stats["by_status"] == {"active": 1, "expired": 1}
    # purge with an explicit clock expires by TTL
    ep = (await store.save("11", NewMemory("Another episode", type=MemoryType.EPISODIC))).memory
    other = (await store.save("12", NewMemory("Episode elsewhere", type=MemoryType.EPISODIC)))
    later = datetime.now(UTC) + timedelta(days=31)
    assert await store.purge_expired(later, chat_id="11") == 1
    assert (await store.get("12", other.memory.id)).status == MemoryStatus.ACTIVE
    assert await store.purge_expired(later) == 1  # now chat 12's episode
    assert (await store.get("11", keep.id)).status == MemoryStatus.ACTIVE
    assert (await store.get("11", ep.id)).status == MemoryStatus.EXPIRED


async def test_export_import_round_trip_into_another_chat(store: MemoryStore) -> None:
    a = (await store.save("20", NewMemory("Vive en Madrid", key="ubicacion"))).memory
    await store.supersede("20", a.id, NewMemory("Vive en Valencia", key="ubicacion"))
    await store.save("20", NewMemory("Le encanta el sushi", type=MemoryType.PREFERENCE,
                                     importance=0.9, metadata={"n": 1}))
    deleted = (await store.save("20", NewMemory("Dato borrado"))).memory
    await store.forget("20", memory_id=deleted.id)
    lines = await store.export_jsonl("20")
    assert len(lines) == 3 and all(json.loads(x)["format"] == "rumi.memory/1" for x in lines)
    report = await store.import_report("21", [*lines, "not json", '{"content": ""}',
                                              '{"content": "x", "importance": "NaN"}', "", "[1]"])
    assert report.imported == 3 and report.duplicates == 0
    assert [n for n, _ in report.errors] == [4, 5, 6, 8]
    copied = {m.content: m for m in await store.list("21", status=None)}
    assert set(copied) == {"Vive en Madrid", "Vive en Valencia", "Le encanta el sushi"}
    assert all(m.source == MemorySource.IMPORT for m in copied.values())
    assert copied["Vive en Madrid"].status == MemoryStatus.SUPERSEDED
    assert copied["Vive en Madrid"].superseded_by == copied["Vive en Valencia"].id
    assert copied["Le encanta el sushi"].importance == 0.9
    assert copied["Le encanta el sushi"].metadata == {"n": 1}
    assert (await store.vector_search("21", "sushi", 1))[0][0] == copied["Le encanta el sushi"].id
    again = await store.import_report("21", lines)  # importing again adds nothing
    assert (again.imported, again.duplicates, again.errors) == (0, 3, [])
    assert len(await store.list("21", status=None)) == 3
    assert len(await store.list("20", status=None)) == 3  # the forgotten one is erased


async def test_reopen_keeps_memories_and_index(data_dir: Path, embedder: Embedder) -> None:
    st = await open_store(data_dir, model_settings(), embedder)
    mem = (await st.save("30", NewMemory("The cat sleeps on the sofa"))).memory
    await st.close()
    assert (data_dir / "vectors" / "30.usearch").exists()
    st = await open_store(data_dir, model_settings(), embedder)
    try:
        assert (await st.get("30", mem.id)).content == "The cat sleeps on the sofa"
        assert await st.vectors.verify("30", [mem.id])
        assert (await st.vector_search("30", "kitten napping on a couch", 1))[0][0] == mem.id
    finally:
        await st.close()


async def test_keyword_search_finds_keys_summaries_and_word_forms(store: MemoryStore) -> None:
    fact = (await store.save("5", NewMemory("Lima", key="ciudad", type=MemoryType.FACT))).memory
    long = (await store.save("5", NewMemory("Un texto largo sobre el viaje",
                                            summary="vacaciones en Cusco"))).memory
    sign = (await store.save("5", NewMemory("She signed the contract yesterday"))).memory
    assert [i for i, _ in await store.keyword_search("5", "ciudad", 5)] == [fact.id]
    assert [i for i, _ in await store.keyword_search("5", "Cusco", 5)] == [long.id]
    assert [i for i, _ in await store.keyword_search("5", "signing", 5)] == [sign.id]
    await store.update("5", fact.id, key="pais", content="Perú")
    assert await store.keyword_search("5", "ciudad", 5) == []
    assert [i for i, _ in await store.keyword_search("5", "pais peru", 5,
                                                      match_all=True)] == [fact.id]


async def test_forget_erases_vectors_and_history_and_compacts_the_index(
    store: MemoryStore, data_dir: Path,
) -> None:
    old = (await store.save("15", NewMemory("Su PIN del banco es 4821", key="pin"))).memory
    new = await store.supersede("15", old.id, NewMemory("Su PIN del banco es 9917", key="pin"))
    keep = (await store.save("15", NewMemory("Le gusta nadar"))).memory
    vectors = await store.get_embeddings("15", [old.id, new.id])
    assert set(vectors) == {old.id, new.id}

    gone = await store.forget("15", key="pin")

    assert [m.id for m in gone] == [new.id] and gone.history == 1
    assert await store.list("15", status=None) == [await store.get("15", keep.id)]
    assert await store.get_embeddings("15", [old.id, new.id]) == {}
    assert {i for i, _ in await store.vector_search("15", "PIN del banco", 5)} == {keep.id}
    if store.backend == "sqlite":
        # usearch only marks a removal; the freed slots were overwritten and the file saved
        # at once, so neither vector (the superseded one either) is left in it
        assert await store.vectors.verify("15", [keep.id])
        meta = json.loads((data_dir / "vectors" / "15.json").read_text())
        assert meta["count"] == 1
        saved = (data_dir / "vectors" / "15.usearch").read_bytes()
        assert all(v.tobytes() not in saved for v in vectors.values())
    assert await store.forgotten("15", [old.content_hash, new.content_hash,
                                        keep.content_hash]) == {old.content_hash,
                                                                new.content_hash}


async def test_the_forget_benchmark_runs_and_measures_real_forgets() -> None:
    import argparse
    import sys

    from tests.conftest import REPO

    sys.path.insert(0, str(REPO / "benchmarks"))
    import forget_cost

    out = await forget_cost.run(argparse.Namespace(n=30, other=10, forgets=2, model_path=""))
    assert (out["n_chat"], out["forgets"], out["vectors"]) == (30, 2, False)
    assert out["forget_ms_max"] >= out["forget_ms_p50"] > 0

"""Consolidation on the real store: duplicate, update, contradiction → superseded (history kept)."""

from __future__ import annotations

import json

import pytest

from rumi.memory.consolidation import Consolidator, parse_decision, store_neighbours
from rumi.memory.models import MemoryStatus, MemoryType, NewMemory
from tests.conftest import MODEL_DIR, require


def decision(action: str, target: int | None = None, content: str | None = None) -> str:
    return json.dumps({"action": action, "target_id": target, "content": content})


async def test_near_duplicate_is_skipped_without_asking_the_model(store, llm, fake_groq):
    first = (await store.save("1", NewMemory("Trabaja en Google como ingeniera",
                                             importance=0.5))).memory
    out = await Consolidator(store, llm).integrate(
        "1", NewMemory("Trabaja en Google como ingeniera.", importance=0.9))
    assert out.action == "NOOP" and out.target.id == first.id
    assert fake_groq.requests == []
    [only] = await store.list("1")
    assert only.id == first.id and only.importance == pytest.approx(0.9)


async def test_same_key_update_merges_via_llm(store, llm, fake_groq):
    old = (await store.save("1", NewMemory("Tiene un gato", key="mascotas"))).memory
    fake_groq.enqueue_text(decision("UPDATE", old.id, "Tiene un gato y un perro"))
    out = await Consolidator(store, llm).integrate(
        "1", NewMemory("Tiene un perro", key="mascotas", importance=0.7))
    assert out.action == "UPDATE"
    assert fake_groq.requests[0]["response_format"] == {"type": "json_object"}
    assert f"id {old.id}" in fake_groq.requests[0]["messages"][1]["content"]
    [mem] = await store.list("1")
    assert (mem.id, mem.content) == (old.id, "Tiene un gato y un perro")


async def test_contradiction_supersedes_and_keeps_history(store, llm, fake_groq):
    old = (await store.save("1", NewMemory("Vive en Madrid", key="ciudad"))).memory
    fake_groq.enqueue_text(decision("SUPERSEDE", old.id))
    out = await Consolidator(store, llm).integrate("1", NewMemory("Vive en Lima", key="ciudad"))
    assert out.action == "SUPERSEDE"
    [active] = await store.list("1")
    assert active.content == "Vive en Lima"
    history = await store.get("1", old.id)
    assert history.status == MemoryStatus.SUPERSEDED and history.superseded_by == active.id


async def test_model_noop_and_unusable_answers(store, llm, fake_groq):
    old = (await store.save("1", NewMemory("Usa Linux en casa", key="sistema"))).memory
    fake_groq.enqueue_text(decision("NOOP", old.id))
    out = await Consolidator(store, llm).integrate(
        "1", NewMemory("En casa tiene Linux instalado", key="sistema"))
    assert out.action == "NOOP" and len(await store.list("1")) == 1
    # a target that is not a candidate, twice → safe default: ADD (nothing lost)
    fake_groq.enqueue_text(decision("SUPERSEDE", 999))
    fake_groq.enqueue_text("garbage")
    out = await Consolidator(store, llm).integrate(
        "1", NewMemory("Usa Windows en el trabajo", key="sistema"))
    assert out.action == "ADD" and len(await store.list("1")) == 2


async def test_unrelated_memory_is_added_without_llm(store, llm, fake_groq):
    await store.save("1", NewMemory("Le gusta el jazz", type=MemoryType.PREFERENCE))
    out = await Consolidator(store, llm).integrate("1", NewMemory("Tiene dos hermanos"))
    assert out.action == "ADD" and fake_groq.requests == []


async def test_periodic_dedup_forgets_the_weaker_duplicate(store, llm):
    keep = (await store.save("1", NewMemory("Prefiere reuniones por la mañana",
                                            type=MemoryType.PREFERENCE, importance=0.9))).memory
    weak = (await store.save("1", NewMemory("Prefiere las reuniones por la mañana",
                                            type=MemoryType.PREFERENCE, importance=0.3))).memory
    await store.save("1", NewMemory("Prefiere reuniones por la tarde", key="reuniones"))
    assert await Consolidator(store, llm).deduplicate_chat("1") == 1
    ids = {m.id for m in await store.list("1")}
    assert keep.id in ids and weak.id not in ids and len(ids) == 2


def test_parse_decision_validation():
    assert parse_decision(decision("ADD"), set()).action == "ADD"
    with pytest.raises(ValueError):
        parse_decision(decision("UPDATE", 3, None), {3})
    with pytest.raises(ValueError):
        parse_decision('{"action": "DELETE"}', set())


async def test_vector_neighbours_reach_the_model(data_dir, llm, fake_groq):
    """With real embeddings, a paraphrase with no shared key is still compared."""
    require((MODEL_DIR / "model.onnx").exists(), f"shared embedding model not found at {MODEL_DIR}")
    from rumi.memory.embeddings import Embedder
    from tests.memory.conftest import model_settings, open_store

    settings = model_settings()
    store = await open_store(data_dir, settings, Embedder(settings))
    try:
        old = (await store.save("1", NewMemory("The user works as a nurse at the hospital"))).memory
        fake_groq.enqueue_text(decision("SUPERSEDE", old.id))
        out = await Consolidator(store, llm, neighbours=store_neighbours(store, 0.5)).integrate(
            "1", NewMemory("The user now works as a teacher, no longer a nurse"))
        assert out.action == "SUPERSEDE"
        assert f"id {old.id}" in fake_groq.requests[0]["messages"][1]["content"]
    finally:
        await store.close()


async def test_periodic_dedup_only_looks_at_recent_changes(store, llm):
    from datetime import UTC, datetime, timedelta

    await store.save("2", NewMemory("Juega al tenis los sábados", importance=0.6))
    await store.save("2", NewMemory("Juega al tenis los sábados.", importance=0.4))
    later = datetime.now(UTC) + timedelta(hours=1)
    assert await Consolidator(store, llm).deduplicate_chat("2", since=later) == 0
    assert await Consolidator(store, llm).deduplicate_chat("2", since=None) == 1

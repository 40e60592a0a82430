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
    # a target that is not a candidate, twice → no usable answer: a memory without that key
    # is added (nothing lost) ...
    fake_groq.enqueue_text(decision("SUPERSEDE", 999))
    fake_groq.enqueue_text("garbage")
    out = await Consolidator(store, llm).integrate(
        "1", NewMemory("En el trabajo usa Windows", key="trabajo"))
    assert out.action == "ADD" and len(await store.list("1")) == 2


async def test_a_new_value_for_a_key_supersedes_when_the_model_gives_no_answer(
        store, llm, fake_groq):
    """"vive en Madrid" after "vive en Sevilla" with an unusable consolidation answer used to
    leave both active; now the newer value wins deterministically and the old one is history."""
    old = (await store.save("1", NewMemory("Vive en Sevilla", key="ciudad"))).memory
    fake_groq.enqueue_text("garbage")
    fake_groq.enqueue_text("still garbage")
    out = await Consolidator(store, llm).integrate("1", NewMemory("Vive en Madrid", key="ciudad"))
    assert out.action == "SUPERSEDE" and out.target.id == old.id
    [active] = await store.list("1")
    assert active.content == "Vive en Madrid"
    history = await store.get("1", old.id)
    assert history.status == MemoryStatus.SUPERSEDED and history.superseded_by == active.id
    # the model down altogether: the same
    fake_groq.enqueue_error(503, "down")
    fake_groq.enqueue_error(503, "down")
    out = await Consolidator(store, llm).integrate("1", NewMemory("Vive en Bilbao", key="ciudad"))
    assert out.action == "SUPERSEDE"
    assert [m.content for m in await store.list("1")] == ["Vive en Bilbao"]


async def test_unrelated_memory_is_added_without_llm(store, llm, fake_groq):
    await store.save("1", NewMemory("Le gusta el jazz", type=MemoryType.PREFERENCE))
    out = await Consolidator(store, llm).integrate("1", NewMemory("Tiene dos hermanos"))
    assert out.action == "ADD" and fake_groq.requests == []


async def test_periodic_dedup_supersedes_the_weaker_duplicate_keeping_history(store, llm):
    keep = (await store.save("1", NewMemory("Prefiere reuniones por la mañana",
                                            type=MemoryType.PREFERENCE, importance=0.9))).memory
    weak = (await store.save("1", NewMemory("Prefiere las reuniones por la mañana",
                                            type=MemoryType.PREFERENCE, importance=0.3))).memory
    await store.save("1", NewMemory("Prefiere reuniones por la tarde", key="reuniones"))
    assert await Consolidator(store, llm).deduplicate_chat("1") == 1
    ids = {m.id for m in await store.list("1")}
    assert keep.id in ids and weak.id not in ids and len(ids) == 2
    history = await store.get("1", weak.id)
    assert history.status == MemoryStatus.SUPERSEDED and history.superseded_by == keep.id
    assert (await store.get("1", keep.id)).content == "Prefiere reuniones por la mañana"


CONTRADICTIONS = [
    ("Le gusta el café", "No le gusta el café"),
    ("Tiene 30 años", "Tiene 31 años"),
    ("Vive en Lima", "Vive en Lisboa"),
    ("Su gato se llama Michi", "Su gato se llama Mimi"),
]


@pytest.mark.parametrize("old_text, new_text", CONTRADICTIONS)
async def test_similar_text_that_says_something_else_goes_to_the_model(
        store, llm, fake_groq, old_text, new_text):
    """A ratio > 0.8 is not a duplicate when a negation, number or content word differs."""
    old = (await store.save("1", NewMemory(old_text))).memory
    fake_groq.enqueue_text(decision("SUPERSEDE", old.id))
    out = await Consolidator(store, llm).integrate("1", NewMemory(new_text))
    assert out.action == "SUPERSEDE"
    assert f"id {old.id}" in fake_groq.requests[0]["messages"][1]["content"]
    [active] = await store.list("1")
    assert active.content == new_text
    assert (await store.get("1", old.id)).status == MemoryStatus.SUPERSEDED


@pytest.mark.parametrize("old_text, new_text", CONTRADICTIONS)
async def test_periodic_dedup_keeps_near_texts_that_differ(store, llm, old_text, new_text):
    await store.save("3", NewMemory(old_text, importance=0.9))
    await store.save("3", NewMemory(new_text, importance=0.3))
    assert await Consolidator(store, llm).deduplicate_chat("3") == 0
    assert len(await store.list("3")) == 2


async def test_episodic_memories_are_not_text_deduplicated(store, llm, fake_groq):
    """Two same-text events (on different days) are both real."""
    await store.save("4", NewMemory("Fue al médico.", type=MemoryType.EPISODIC))
    await store.save("4", NewMemory("Fue al médico", type=MemoryType.EPISODIC))
    assert await Consolidator(store, llm).deduplicate_chat("4") == 0
    out = await Consolidator(store, llm).integrate(
        "4", NewMemory("fue al medico", type=MemoryType.EPISODIC))
    assert out.action == "ADD" and len(await store.list("4")) == 3


async def test_consolidating_thousands_of_memories_keeps_the_event_loop_responsive(store, llm):
    """2,000 memories with a shared vocabulary (pairwise difflib: ~25 s of CPU) are
    deduplicated without stalling the loop: grouping, and the work runs in a thread."""
    import asyncio
    import random

    rng = random.Random(7)
    words = ["casa", "perro", "gato", "trabajo", "ciudad", "viaje", "libro", "música", "café",
             "playa", "montaña", "río", "coche", "tren", "jardín", "cocina"]
    items = [NewMemory("Le gusta " + " ".join(rng.choice(words) for _ in range(5)) + f" {i}")
             for i in range(2_000)]
    items.append(NewMemory("Le gusta el " + items[0].content[len("Le gusta "):]))
    await store.save_many("5", items)
    loop = asyncio.get_running_loop()
    gaps: list[float] = []
    done = asyncio.Event()

    async def ticker() -> None:
        last = loop.time()
        while not done.is_set():
            await asyncio.sleep(0.005)
            now = loop.time()
            gaps.append(now - last)
            last = now

    tick = asyncio.create_task(ticker())
    consolidator = Consolidator(store, llm)
    assert await consolidator.deduplicate_chat("5") == 1
    out = await consolidator.integrate("5", NewMemory("Le gusta la ópera"))
    done.set()
    await tick
    assert out.action == "ADD"
    assert max(gaps) < 1.0, f"event loop stalled {max(gaps):.2f}s"


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

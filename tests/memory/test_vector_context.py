"""`recall_vector_context`: a memory's vector embeds the question said just before it.

On both stores, with the real model: the stored vector is compared with the model's vector of
the text it should embed. The context comes only from the same chat, the same type, within
three hours and earlier — never from another chat or a later memory — and an edited memory is
re-embedded with it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from rumi.memory.recall.retrieval import MemoryRecall
from rumi.memory.store.api import MemoryStoreAPI
from rumi.memory.store.codec import asked_in, embedding_text
from rumi.memory.store.models import MemoryType, NewMemory
from rumi.memory.vectors.embeddings import Embedder
from tests.memory.backends import BACKENDS
from tests.memory.conftest import model_settings, open_backend, store_fixture

T0 = datetime(2026, 3, 1, 18, 0, tzinfo=UTC)
ASKS = "Ana: I went to the museum with the kids. How did they like the dinosaurs?"
ANSWER = "Ben: They were awestruck, they want to go back."


ctx_store = store_fixture(model_settings(recall_vector_context=True))


def said(content: str, minutes: float = 0, kind: MemoryType = MemoryType.EPISODIC) -> NewMemory:
    return NewMemory(content=content, type=kind, created_at=T0 + timedelta(minutes=minutes))


async def embeds(store: MemoryStoreAPI, embedder: Embedder, chat: str, memory_id: int,
                 text: str) -> bool:
    """Whether the stored vector of `memory_id` is the model's vector of `text`."""
    _, vectors = await store.get_many_with_vectors(chat, [memory_id])
    expected = await embedder.embed([text])
    assert expected is not None
    return bool(np.dot(vectors[memory_id], expected[0]) > 0.999)


def test_asked_in_keeps_the_questions_after_the_label() -> None:
    assert asked_in(ASKS) == "Ana: How did they like the dinosaurs?"
    assert asked_in("Gina: ¡Hola! ¿Cómo estás? Yo bien.") == "Gina: ¿Cómo estás?"
    assert asked_in("What now? And then?") == "What now? And then?"
    assert asked_in(ANSWER) == ""
    assert embedding_text("x", None, "") == "x"
    assert embedding_text("x", "k", "Ana: Why?") == "Ana: Why?\nk: x"


@pytest.mark.parametrize("batch", [True, False], ids=["one-batch", "two-saves"])
async def test_an_answer_embeds_the_question_before_it(
        ctx_store: MemoryStoreAPI, embedder: Embedder, batch: bool) -> None:
    if batch:
        asks, answer = await ctx_store.save_many("c1", [said(ASKS), said(ANSWER, 1)])
    else:
        asks = await ctx_store.save("c1", said(ASKS))
        answer = await ctx_store.save("c1", said(ANSWER, 1))
    assert answer.memory.content == ANSWER   # the memory itself is unchanged
    assert await embeds(ctx_store, embedder, "c1", answer.memory.id,
                        f"Ana: How did they like the dinosaurs?\n{ANSWER}")
    assert await embeds(ctx_store, embedder, "c1", asks.memory.id, ASKS)


async def test_the_context_never_comes_from_another_chat_a_later_memory_or_far_away(
        ctx_store: MemoryStoreAPI, embedder: Embedder) -> None:
    await ctx_store.save("c1", said(ASKS))
    other_chat = await ctx_store.save("c2", said(ANSWER, 1))
    assert await embeds(ctx_store, embedder, "c2", other_chat.memory.id, ANSWER)
    first = await ctx_store.save("c3", said(ANSWER, 1))   # the answer saved before the question
    await ctx_store.save("c3", said(ASKS))
    assert await embeds(ctx_store, embedder, "c3", first.memory.id, ANSWER)
    await ctx_store.save("c4", said(ASKS))
    late = await ctx_store.save("c4", said(ANSWER, 60 * 4))            # four hours later
    fact = await ctx_store.save("c4", said("Ben likes dinosaurs.", 60 * 4 + 1, MemoryType.FACT))
    assert await embeds(ctx_store, embedder, "c4", late.memory.id, ANSWER)
    assert await embeds(ctx_store, embedder, "c4", fact.memory.id, "Ben likes dinosaurs.")


async def test_an_edited_memory_is_re_embedded_with_its_context(
        ctx_store: MemoryStoreAPI, embedder: Embedder) -> None:
    await ctx_store.save("c1", said(ASKS))
    answer = await ctx_store.save("c1", said(ANSWER, 1))
    edited = "Ben: They loved the T. rex most."
    await ctx_store.update("c1", answer.memory.id, content=edited)
    assert await embeds(ctx_store, embedder, "c1", answer.memory.id,
                        f"Ana: How did they like the dinosaurs?\n{edited}")
    replaced = await ctx_store.supersede("c1", answer.memory.id, said("Ben: They were bored.", 2))
    assert await embeds(ctx_store, embedder, "c1", replaced.id,
                        "Ana: How did they like the dinosaurs?\nBen: They were bored.")


async def test_turned_off_a_memory_embeds_its_own_text(reopen: Any, embedder: Embedder) -> None:
    store = await reopen(recall_vector_context=False)
    await store.save("c1", said(ASKS))
    answer = await store.save("c1", said(ANSWER, 1))
    assert await embeds(store, embedder, "c1", answer.memory.id, ANSWER)


# The setting on, no model: keyword-only recall.
kw_ctx_store = store_fixture(model_settings(recall_vector_context=True), model=False)


async def test_without_a_model_the_setting_saves_and_edits_as_before(
        kw_ctx_store: MemoryStoreAPI) -> None:
    await kw_ctx_store.save("c1", said(ASKS))
    answer = await kw_ctx_store.save("c1", said(ANSWER, 1))
    edited = await kw_ctx_store.update("c1", answer.memory.id, content="Ben: They loved it.")
    assert edited.content == "Ben: They loved it."
    assert [m.content for m in await kw_ctx_store.list("c1")] == ["Ben: They loved it.", ASKS]


async def test_memories_embedded_later_get_the_same_context(
        ctx_store: MemoryStoreAPI, embedder: Embedder) -> None:
    """Saved without vectors (a rebuild at start, or while the model was away), then embedded
    by the backfill: the same context as at save, from the chat's own earlier memories."""
    await ctx_store.save("c2", said(ASKS))   # another chat's question, said in between
    asks, answer, later = await ctx_store.save_many(
        "c1", [said(ASKS), said(ANSWER, 1), said("Ana: Shall we go again?", 2)], embed=False)
    assert await ctx_store.embed_missing("c1", 100) == 3
    assert await embeds(ctx_store, embedder, "c1", answer.memory.id,
                        f"Ana: How did they like the dinosaurs?\n{ANSWER}")
    assert await embeds(ctx_store, embedder, "c1", asks.memory.id, ASKS)
    assert await embeds(ctx_store, embedder, "c1", later.memory.id, "Ana: Shall we go again?")


@pytest.fixture(params=BACKENDS)
async def reopen(request: pytest.FixtureRequest, data_dir: Path,
                 embedder: Embedder) -> AsyncIterator[object]:
    """Open the same store (SQLite file / PostgreSQL database) again with other settings."""
    opened: list[MemoryStoreAPI] = []

    async def again(**overrides: object) -> MemoryStoreAPI:
        st = await open_backend(request, data_dir, model_settings(**overrides), embedder)
        opened.append(st)
        return st
    yield again
    for st in opened:
        await st.close()


async def test_the_upgrade_re_embeds_existing_memories_and_recall_works_meanwhile(
        reopen: Any, embedder: Embedder) -> None:
    before = await reopen(recall_vector_context=False)   # a store written before it existed
    await before.save("c1", said(ASKS))
    answer = (await before.save("c1", said(ANSWER, 1))).memory
    assert await embeds(before, embedder, "c1", answer.id, ANSWER)
    await before.close()

    after = await reopen()                                # the default: on
    if hasattr(after, "chats_missing_vectors"):   # what the bot re-embeds after its start
        assert await after.chats_missing_vectors() == ["c1"]
    recall = MemoryRecall(after, after.settings)   # the first recall re-embeds its chat (on
    found = await recall.recall("c1", "dinosaurs", k=5, touch=False)   # SQLite, keywords
    assert answer.id - 1 in {s.memory.id for s in found}                # until then)
    await after.embed_missing("c1", 100)   # what the background re-embed does (if still due)
    assert await embeds(after, embedder, "c1", answer.id,
                        f"Ana: How did they like the dinosaurs?\n{ANSWER}")
    if hasattr(after, "chats_missing_vectors"):
        assert await after.chats_missing_vectors() == []
    found = await recall.recall("c1", "the children were amazed", k=5, touch=False)
    assert answer.id in {s.memory.id for s in found}
    assert [m.content for m in await after.list("c1")] == [ANSWER, ASKS]   # nothing lost


async def test_an_imported_conversation_gets_the_context_from_its_own_lines(
        ctx_store: MemoryStoreAPI, embedder: Embedder) -> None:
    await ctx_store.save_many("c1", [said(ASKS), said(ANSWER, 1)])
    await ctx_store.save("c9", said("Zoe: What did Ben say about the museum?", -1))
    report = await ctx_store.import_report("c9", await ctx_store.export_jsonl("c1"))
    assert report.imported == 2
    by_content = {m.content: m.id for m in await ctx_store.list("c9")}
    assert await embeds(ctx_store, embedder, "c9", by_content[ANSWER],
                        f"Ana: How did they like the dinosaurs?\n{ANSWER}")
    # the first imported line follows c9's own question (earlier, same type, 1 minute before)
    assert await embeds(ctx_store, embedder, "c9", by_content[ASKS],
                        f"Zoe: What did Ben say about the museum?\n{ASKS}")

"""The long-term memory's lines in /status: what search works, how much is stored, and why the
last recalled memories were chosen.

The issue asks that a missing embedding model never be silent: memory then runs on keyword
search alone, and the person (or operator) reading /status must see that and the reason. The
score components make recall inspectable without a debugger: "why did it bring that up?".
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from rumi import messages as msg
from rumi.memory.recall.retrieval import MemoryRecall
from rumi.memory.store.api import MemoryStoreAPI
from rumi.memory.store.codec import clip

SNIPPET_CHARS = 60

StatusLine = Callable[[str, Any], Awaitable[str | None]]


def _reason(raw: str | None) -> str:
    """The embedder's English reason, told in the chat's language (the detail stays as the
    library said)."""
    text = (raw or "").strip()
    if not text or "disabled" in text or "not configured" in text:
        return msg.MEMORY_REASON_DISABLED
    if "no vector index" in text:
        return msg.MEMORY_REASON_NO_INDEX
    detail = text.split(":", 1)[1].strip() if ":" in text else text
    return msg.MEMORY_REASON_MODEL.format(detail=detail[:200])


async def memory_status(store: MemoryStoreAPI, recall: MemoryRecall | None,
                        chat_id: str) -> str:
    """Search mode + active count, then the last recall's top memories with their components."""
    stats = await store.stats(chat_id)
    emb = stats["embeddings"]
    if emb.get("available"):
        twin = (emb.get("query_model") or {}).get("loaded")
        when = msg.STATUS_MEMORY_QUERY_TWIN if twin else ""
        lines = [msg.STATUS_MEMORY_SEMANTIC.format(
            model=emb.get("model"), active=msg.count_of(stats["active"], "ACTIVE_MEMORIES"),
            when=when if emb.get("loaded") else msg.STATUS_MEMORY_LOADS_ON_USE)]
    else:
        lines = [msg.STATUS_MEMORY_KEYWORD_ONLY.format(reason=_reason(emb.get("reason")),
                                                       active=msg.count_of(stats["active"],
                                                                           "ACTIVE_MEMORIES"))]
    last = recall.last_recalled(chat_id) if recall is not None else []
    if last:
        lines.append(msg.STATUS_MEMORY_LAST)
        for scored in last:
            parts = scored.score
            lines.append(msg.STATUS_MEMORY_ITEM.format(
                id=scored.memory.id, total=parts.total, recency=parts.recency,
                importance=parts.importance, relevance=parts.relevance,
                frequency=parts.frequency, snippet=clip(scored.memory.content, SNIPPET_CHARS)))
    return "\n".join(lines)


async def memory_count(store: MemoryStoreAPI, chat_id: str) -> str:
    """The person's line: how many memories, and a hint when only keyword search works."""
    stats = await store.stats(chat_id)
    line = msg.STATUS_MEMORIES.format(active=stats["active"])
    if not stats["embeddings"].get("available"):
        line += msg.STATUS_MEMORIES_KEYWORD_ONLY
    if store.backend == "postgres":   # where it is (never the password) and who shares it
        names = await store.sharing()
        where = msg.STATUS_MEMORY_STORE.format(where=store.where, name=names[0])
        if names[1:]:
            where += msg.STATUS_MEMORY_STORE_SHARED.format(others=", ".join(names[1:]))
        line += "\n" + where
    return line


def memory_status_provider(store: MemoryStoreAPI, recall: MemoryRecall | None) -> StatusLine:
    """A `Assistant.add_status_provider(…, detail=True)` callback: search mode and why the
    last memories were recalled."""

    async def provide(chat_id: str, session: Any) -> str | None:
        return await memory_status(store, recall, chat_id)

    return provide


def memory_count_provider(store: MemoryStoreAPI) -> StatusLine:
    """A `Assistant.add_status_provider` callback for the person's `/status`."""

    async def provide(chat_id: str, session: Any) -> str | None:
        return await memory_count(store, chat_id)

    return provide

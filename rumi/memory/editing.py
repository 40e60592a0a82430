"""Changing memories that exist: update, supersede, forget (the store's write paths other
than save). Each keeps SQLite and the chat's vector index in step: SQLite first, inside one
transaction, then the index (which `IndexKeeper` re-verifies if a step was missed).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

from rumi.memory import fts
from rumi.memory.codec import (
    check_chat_id,
    clean_ids,
    clean_key,
    clean_metadata,
    clean_new_memory,
    clean_text,
    clean_type,
    clean_unit,
    content_hash,
    embedding_text,
    to_utc,
    ts,
    utcnow,
)
from rumi.memory.models import Memory, MemoryInputError, MemoryStatus, MemoryType, NewMemory

if TYPE_CHECKING:
    from rumi.memory.store import MemoryStore

_CHUNK = 500
UNSET: Any = object()
_UNSET = UNSET


class MemoryNotFoundError(MemoryInputError):
    """The id does not name a memory of this chat."""


async def update(
    store: MemoryStore,
    chat_id: str,
    memory_id: int,
    *,
    content: str | None = None,
    summary: str | None = _UNSET,
    key: str | None = _UNSET,
    type: MemoryType | str | None = None,  # noqa: A002 - mirrors the column name
    importance: float | None = None,
    confidence: float | None = None,
    expires_at: datetime | None = _UNSET,
    metadata: dict[str, Any] | None = None,
    related_ids: Iterable[int] | None = None,
) -> Memory:
    """Change fields in place; a new content (or key) is re-hashed and re-embedded."""
    chat = check_chat_id(chat_id)
    old = await store.get(chat, memory_id)
    if old is None or old.status == MemoryStatus.DELETED:
        raise MemoryNotFoundError(f"No existe el recuerdo #{memory_id}.")
    sets: dict[str, Any] = {}
    new_content = old.content
    new_key = old.key
    if content is not None:
        new_content = clean_text(content, "el recuerdo", store.settings.max_content_chars)
        sets["content"] = new_content
    if key is not _UNSET:
        new_key = clean_key(key)
        sets["key"] = new_key
    if summary is not _UNSET:
        text = clean_text(summary, "el resumen", 2_000, required=False)
        sets["summary"] = text[:500] if text else None
    if type is not None:
        sets["type"] = clean_type(type).value
    if importance is not None:
        sets["importance"] = clean_unit(importance, "La importancia")
    if confidence is not None:
        sets["confidence"] = clean_unit(confidence, "La confianza")
    if expires_at is not _UNSET:
        sets["expires_at"] = ts(to_utc(expires_at)) if expires_at else None
    if metadata is not None:
        sets["metadata"] = json.dumps(clean_metadata(metadata), ensure_ascii=False)
    if related_ids is not None:
        sets["related_ids"] = json.dumps(list(clean_ids(related_ids)))
    text_changed = new_content != old.content or new_key != old.key
    digest = content_hash(new_content, new_key)
    if text_changed and old.status == MemoryStatus.ACTIVE:
        other = await store._active_id(chat, digest)
        if other is not None and other != old.id:
            raise MemoryInputError(f"Ya existe un recuerdo igual (#{other}).")
    matrix = await store.index.embed([embedding_text(new_content, new_key)]) \
        if text_changed else None
    if not sets:
        return old
    sets["content_hash"] = digest
    sets["updated_at"] = ts(utcnow())
    assignments = ", ".join(f"{name} = ?" for name in sets)
    async with store.transaction() as conn:
        await conn.execute(
            f"UPDATE memories SET {assignments} WHERE id = ? AND chat_id = ?",  # noqa: S608
            (*sets.values(), old.id, chat),
        )
        if text_changed:
            await conn.execute("DELETE FROM memory_embeddings WHERE memory_id = ?", (old.id,))
            await conn.execute("UPDATE memories SET embedding_model = NULL WHERE id = ?",
                               (old.id,))
            if matrix is not None:
                await store.index.write_vectors([old.id], matrix)
    if text_changed and old.status == MemoryStatus.ACTIVE:
        if matrix is not None:
            await store.index.add(chat, [old.id], matrix)
        else:
            await store.index.remove(chat, [old.id])
    updated = await store.get(chat, old.id)
    assert updated is not None
    return updated

async def supersede(store: MemoryStore, chat_id: str, old_id: int, new: NewMemory) -> Memory:
    """Replace an active memory: old → superseded (kept as history) pointing at the new.

    When the new text is already an active memory (the periodic dedup always supersedes by
    such a twin) the old one just points at it: nothing is embedded, the twin keeps its vector.
    """
    chat = check_chat_id(chat_id)
    old = await store.get(chat, old_id)
    if old is None or old.status == MemoryStatus.DELETED:
        raise MemoryNotFoundError(f"No existe el recuerdo #{old_id}.")
    if old.status != MemoryStatus.ACTIVE:
        raise MemoryInputError(f"El recuerdo #{old_id} ya no está activo ({old.status}).")
    mem = clean_new_memory(new, store.settings.max_content_chars)
    digest = content_hash(mem.content, mem.key)
    if digest == old.content_hash:
        return (await store.save(chat, mem)).memory
    if old.id not in mem.related_ids:
        mem = replace(mem, related_ids=(*mem.related_ids, old.id))
    twin = await store._active_id(chat, digest)
    if twin is None or not await _point_at_twin(store, chat, old.id, twin, mem, digest):
        twin = await _supersede_with_new(store, chat, old.id, mem, digest)
    result = await store.get(chat, twin)
    assert result is not None
    return result


async def _point_at_twin(
    store: MemoryStore, chat: str, old_id: int, twin_id: int, mem: NewMemory, digest: str
) -> bool:
    """Old → superseded by the active `twin_id`, refreshed like a re-save. False, with nothing
    written, when the twin stopped being active after it was looked up (forgotten meanwhile)."""
    now = utcnow()
    async with store.transaction() as conn:
        if twin_id == old_id or await store._active_id(chat, digest) != twin_id:
            return False
        await _retire(conn, old_id, now)
        await conn.execute("UPDATE memories SET superseded_by = ? WHERE id = ?",
                           (twin_id, old_id))
        await store._refresh(twin_id, mem, now)
    await store.index.remove(chat, [old_id])
    return True


async def _supersede_with_new(
    store: MemoryStore, chat: str, old_id: int, mem: NewMemory, digest: str
) -> int:
    """Old → superseded by `mem`, embedded and inserted (or refreshed, if saved meanwhile)."""
    matrix = await store.index.embed([embedding_text(mem.content, mem.key)])
    now = utcnow()
    async with store.transaction() as conn:
        await _retire(conn, old_id, now)
        new_id = await store._active_id(chat, digest)
        fresh = new_id is None
        if new_id is None:
            new_id = await store._insert(conn, chat, mem, digest, now)
            if matrix is not None:
                await store.index.write_vectors([new_id], matrix)
        else:
            await store._refresh(new_id, mem, now)
        await conn.execute("UPDATE memories SET superseded_by = ? WHERE id = ?",
                           (new_id, old_id))
    await store.index.remove(chat, [old_id])
    if fresh and matrix is not None:
        await store.index.add(chat, [new_id], matrix)
    return new_id

async def _retire(conn: Any, old_id: int, now: datetime) -> None:
    """Mark the old memory superseded, inside the caller's transaction, only if it is still
    active: a forget or another supersede between the caller's check and this transaction
    must not be overwritten (the raise rolls the transaction back)."""
    cur = await conn.execute(
        "UPDATE memories SET status = 'superseded', updated_at = ? "
        "WHERE id = ? AND status = 'active'", (ts(now), old_id))
    if cur.rowcount != 1:
        raise MemoryInputError(f"El recuerdo #{old_id} ya no está activo.")


async def forget(
    store: MemoryStore,
    chat_id: str,
    *,
    memory_id: int | None = None,
    key: str | None = None,
    text: str | None = None,
) -> list[Memory]:
    """Delete active memories by id, by key (every fact under it) or by phrase match.

    Returns what was forgotten. Their vectors are dropped too (nothing left to match on).
    """
    chat = check_chat_id(chat_id)
    if sum(v is not None for v in (memory_id, key, text)) != 1:
        raise MemoryInputError("Indica qué olvidar: un id, una clave o un texto.")
    if memory_id is not None:
        ids = [m.id for m in await store.get_many(chat, [memory_id])
               if m.status == MemoryStatus.ACTIVE]
    elif key is not None:
        ids = [m.id for m in await store.list(chat, key=key, limit=100_000)]
    else:
        expr = fts.phrase(text or "")
        if expr is None:
            raise MemoryInputError("El texto a olvidar no tiene palabras.")
        async with store.connection.execute(
            "SELECT m.id FROM memories_fts JOIN memories m ON m.id = memories_fts.rowid "
            "WHERE memories_fts MATCH ? AND m.chat_id = ? AND m.status = 'active'",
            (expr, chat),
        ) as cur:
            ids = [row[0] for row in await cur.fetchall()]
    if not ids:
        return []
    await set_status(store, chat, ids, MemoryStatus.DELETED, drop_vectors=True)
    await store.index.remove(chat, ids)
    return await store.get_many(chat, ids)

async def set_status(
    store: MemoryStore, chat: str, ids: Sequence[int], status: MemoryStatus, *, drop_vectors: bool
) -> None:
    now = ts(utcnow())
    async with store.transaction() as conn:
        for start in range(0, len(ids), _CHUNK):
            chunk = [int(i) for i in ids[start : start + _CHUNK]]
            marks = ",".join("?" * len(chunk))
            await conn.execute(
                f"UPDATE memories SET status = ?, updated_at = ? "  # noqa: S608
                f"WHERE +chat_id = ? AND id IN ({marks})",  # rowid lookups (see store._CHUNK)
                (status.value, now, chat, *chunk),
            )
            if drop_vectors:
                await conn.execute(
                    f"DELETE FROM memory_embeddings WHERE memory_id IN ({marks})",  # noqa: S608
                    chunk,
                )
                await conn.execute(
                    f"UPDATE memories SET embedding_model = NULL WHERE id IN ({marks})",  # noqa: S608
                    chunk,
                )

"""Changing memories that exist: update, supersede, forget (the store's write paths other
than save). Each keeps SQLite and the chat's vector index in step: SQLite first, inside one
transaction, then the index (which `IndexKeeper` re-verifies if a step was missed).
"""

from __future__ import annotations

import asyncio
import json
import logging
import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

from rumi.memory.store import fts, translations
from rumi.memory.store.codec import (
    asked_in,
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
from rumi.memory.store.models import Memory, MemoryInputError, MemoryStatus, MemoryType, NewMemory
from rumi.memory.store.recall_index import optimize_registered
from rumi.memory.store.recall_index import table_name as recall_table
from rumi.memory.store.rows import MemoryRows
from rumi.memory.store.schema import RECALL_REGISTRY

log = logging.getLogger(__name__)

_CHUNK = 500
_CHECKPOINT_TRIES = 5
UNSET: Any = object()
_UNSET = UNSET


class MemoryNotFoundError(MemoryInputError):
    """The id does not name a memory of this chat."""


async def update(
    store: MemoryRows,
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
    sets.update(_other_fields(summary, type, importance, confidence, expires_at, metadata,
                              related_ids))
    text_changed = new_content != old.content or new_key != old.key
    digest = content_hash(new_content, new_key)
    if text_changed and old.status == MemoryStatus.ACTIVE:
        other = await store.active_id(chat, digest)
        if other is not None and other != old.id:
            raise MemoryInputError(f"Ya existe un recuerdo igual (#{other}).")
    matrix = await store.index.embed([embedding_text(
        new_content, new_key, await _context_of(store, chat, old, sets))]) \
        if text_changed else None
    if not sets:
        return old
    sets["content_hash"] = digest
    sets["updated_at"] = ts(utcnow())
    await _write_update(store, chat, old, sets, text_changed, matrix)
    updated = await store.get(chat, old.id)
    assert updated is not None
    return updated


async def _context_of(store: MemoryRows, chat: str, old: Memory, sets: dict[str, Any]) -> str:
    """An edited memory's vector context: the questions of the memory said just before it
    (earlier id, same type as after the edit), as when it was saved (`vector_contexts`)."""
    if not store.settings.recall_vector_context:
        return ""
    kind = MemoryType(sets.get("type", old.type.value))
    before = await store.content_before(chat, kind, old.created_at, old.id)
    return asked_in(before) if before else ""


async def _context_in_place_of(store: MemoryRows, chat: str, old_id: int,
                               mem: NewMemory) -> str:
    """A superseding memory's vector context: it takes the old one's place in the
    conversation, so the questions of what was said before the old one."""
    if not store.settings.recall_vector_context:
        return ""
    before = await store.content_before(chat, mem.type, mem.created_at or utcnow(), old_id)
    return asked_in(before) if before else ""


def _other_fields(
    summary: str | None, kind: MemoryType | str | None, importance: float | None,
    confidence: float | None, expires_at: datetime | None, metadata: dict[str, Any] | None,
    related_ids: Iterable[int] | None,
) -> dict[str, Any]:
    """Columns `update` sets besides the text, each validated (`_UNSET`/None: unchanged)."""
    sets: dict[str, Any] = {}
    if summary is not _UNSET:
        text = clean_text(summary, "el resumen", 2_000, required=False)
        sets["summary"] = text[:500] if text else None
    if kind is not None:
        sets["type"] = clean_type(kind).value
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
    return sets


async def _write_update(store: MemoryRows, chat: str, old: Memory, sets: dict[str, Any],
                        text_changed: bool, matrix: Any) -> None:
    """One transaction for the row (and its vector when the text changed), then the index."""
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

async def supersede(store: MemoryRows, chat_id: str, old_id: int, new: NewMemory) -> Memory:
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
    twin = await store.active_id(chat, digest)
    if twin is None or not await _point_at_twin(store, chat, old.id, twin, mem, digest):
        twin = await _supersede_with_new(store, chat, old.id, mem, digest)
    result = await store.get(chat, twin)
    assert result is not None
    return result


async def _point_at_twin(
    store: MemoryRows, chat: str, old_id: int, twin_id: int, mem: NewMemory, digest: str
) -> bool:
    """Old → superseded by the active `twin_id`, refreshed like a re-save. False, with nothing
    written, when the twin stopped being active after it was looked up (forgotten meanwhile)."""
    now = utcnow()
    async with store.transaction() as conn:
        if twin_id == old_id or await store.active_id(chat, digest) != twin_id:
            return False
        await _retire(conn, old_id, now)
        await conn.execute("UPDATE memories SET superseded_by = ? WHERE id = ?",
                           (twin_id, old_id))
        await store.refresh_row(twin_id, mem, now)
    await store.index.remove(chat, [old_id])
    return True


async def _supersede_with_new(
    store: MemoryRows, chat: str, old_id: int, mem: NewMemory, digest: str
) -> int:
    """Old → superseded by `mem`, embedded and inserted (or refreshed, if saved meanwhile)."""
    context = await _context_in_place_of(store, chat, old_id, mem)
    matrix = await store.index.embed([embedding_text(mem.content, mem.key, context)])
    now = utcnow()
    async with store.transaction() as conn:
        await _retire(conn, old_id, now)
        new_id = await store.active_id(chat, digest)
        fresh = new_id is None
        if new_id is None:
            new_id = await store.insert_row(conn, chat, mem, digest, now)
            if matrix is not None:
                await store.index.write_vectors([new_id], matrix)
        else:
            await store.refresh_row(new_id, mem, now)
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


class Forgotten(list[Memory]):
    """The active memories a forget removed (a list, as before), plus how many earlier
    versions of them (their superseded history) went with them, for an honest reply."""

    history: int = 0


async def forget(
    store: MemoryRows,
    chat_id: str,
    *,
    memory_id: int | None = None,
    key: str | None = None,
    text: str | None = None,
) -> Forgotten:
    """Erase active memories by id, by key (every fact under it) or by phrase match.

    Erase, not mark: a person who says "forget it" means the text is gone, so the rows, their
    superseded history and any pre-edit text are deleted (see `purge`). Returns what was
    forgotten, as it was just before.
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
    result = Forgotten(replace(m, status=MemoryStatus.DELETED)
                       for m in await store.get_many(chat, ids))
    if result:
        result.history = await purge(store, chat, [m.id for m in result])
    return result


async def purge(store: MemoryRows, chat: str, ids: Sequence[int]) -> int:
    """Delete memories `ids` and every version they superseded, leaving no copy of the text:
    the rows (the FTS triggers and the embeddings' cascade follow), the keyword indexes'
    segments (an FTS5 'optimize' merges away the deleted entries), the chat's vector file
    (`IndexKeeper.erase`: the freed slots overwritten and the file saved, or rebuilt) and
    the WAL (checkpointed with TRUNCATE; `secure_delete`, set on every connection, zeroes
    the freed pages).

    What stays is one hash per forgotten text (`forgotten_hashes`), so extraction and
    import can refuse to learn it again. Returns how many history rows went too."""
    async with store.transaction() as conn:
        chain = await conn.execute_fetchall(_CHAIN_SQL.format(marks=_marks(ids)),
                                            (chat, *[int(i) for i in ids], chat))
        hashes: set[str] = set()
        for row in chain:
            hashes.add(row[3])
            hashes.update(content_hash(old, row[2]) for old in _edited_from(row[4])
                          if isinstance(old, str) and old.strip())
        now = ts(utcnow())
        await conn.executemany(
            "INSERT OR IGNORE INTO forgotten_hashes(chat_id, content_hash, forgotten_at) "
            "VALUES (?, ?, ?)", [(chat, h, now) for h in sorted(hashes)])
        every = [int(row[0]) for row in chain]
        for start in range(0, len(every), _CHUNK):
            chunk = every[start : start + _CHUNK]
            await conn.execute(
                f"DELETE FROM memories WHERE id IN ({_marks(chunk)})", chunk)  # noqa: S608
        await optimize_keyword_indexes(conn, chat)
        await translations.optimize(conn, chat)
    await store.index.erase(chat, every)
    await checkpoint(store)
    return len(every) - len(set(ids))


# the memories named and, following `superseded_by` backwards, every version they replaced
_CHAIN_SQL = """WITH RECURSIVE gone(id) AS (
    SELECT id FROM memories WHERE +chat_id = ? AND id IN ({marks})
    UNION SELECT m.id FROM memories m JOIN gone ON m.superseded_by = gone.id
    WHERE +m.chat_id = ?)
SELECT m.id, m.content, m.key, m.content_hash, m.metadata FROM memories m
JOIN gone ON gone.id = m.id"""


def _marks(ids: Sequence[int]) -> str:
    return ",".join("?" * len(ids))


def _edited_from(metadata: str | None) -> list[Any]:
    try:
        data = json.loads(metadata or "{}")
    except ValueError:
        return []
    found = data.get("edited_from", []) if isinstance(data, dict) else []
    return found if isinstance(found, list) else []


async def optimize_keyword_indexes(conn: Any, chat: str | None) -> None:
    """Merge the FTS5 segments of `memories_fts` and the chat's recall table (every chat's
    when `chat` is None): a delete only adds a tombstone entry; the old segment, with the
    forgotten words, stays on disk until a merge rewrites it."""
    await conn.execute("INSERT INTO memories_fts(memories_fts) VALUES ('optimize')")
    await optimize_registered(conn, RECALL_REGISTRY, recall_table, chat)


async def checkpoint(store: MemoryRows) -> None:
    """Copy the WAL into the database and truncate it, so the pre-forget page images it
    held are gone from disk. Best effort: a reader in another process can hold it back
    (or one of this connection's own searches still reading), so it is tried a few times;
    then the next forget's, or closing the database, does it. The database file is clean."""
    for attempt in range(_CHECKPOINT_TRIES):
        if attempt:
            await asyncio.sleep(0.05 * attempt)
        try:
            async with store.write_lock:
                rows = await store.connection.execute_fetchall("PRAGMA wal_checkpoint(TRUNCATE)")
        except sqlite3.OperationalError:  # a statement of ours still reading: "table is locked"
            continue
        if not (rows and rows[0][0]):
            return
    log.info("WAL checkpoint after a forget was held back; the next one (or closing) does it")


async def forgotten(store: MemoryRows, chat: str, hashes: Iterable[str]) -> set[str]:
    """Which of `hashes` name texts this chat has forgotten (not to be learned again by itself)."""
    wanted = sorted(set(hashes))
    found: set[str] = set()
    for start in range(0, len(wanted), _CHUNK):
        chunk = wanted[start : start + _CHUNK]
        rows = await store.connection.execute_fetchall(
            "SELECT content_hash FROM forgotten_hashes WHERE chat_id = ? "  # noqa: S608
            f"AND content_hash IN ({_marks(chunk)})", (chat, *chunk))
        found.update(row[0] for row in rows)
    return found


async def mark_forgotten(store: MemoryRows, chat: str, hashes: Iterable[str]) -> None:
    """Note texts as forgotten without a row to delete (a pre-edit text dropped by /forget)."""
    now = ts(utcnow())
    async with store.transaction() as conn:
        await conn.executemany(
            "INSERT OR IGNORE INTO forgotten_hashes(chat_id, content_hash, forgotten_at) "
            "VALUES (?, ?, ?)", [(chat, h, now) for h in sorted(set(hashes))])

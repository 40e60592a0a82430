"""Writing `cto.memory`: upsert, update, supersede, forget (with every earlier version), import.

The same rules as the SQLite store's `editing` (same messages, same results), written for
PostgreSQL: a save is one `INSERT … ON CONFLICT` on the active-hash index, so two Rumis saving
the same memory at once both end on one row with the larger importance; an update or a
supersede locks the row (`FOR UPDATE`) before it checks it is still active.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

import numpy as np

from rumi.memory.store import fts
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
    utcnow,
)
from rumi.memory.store.editing import UNSET, Forgotten, MemoryNotFoundError
from rumi.memory.store.models import Memory, MemoryInputError, MemoryStatus, MemoryType, NewMemory
from rumi.memory.store.postgres.changes import announce
from rumi.memory.store.postgres.rows import owner
from rumi.memory.store.transfer import ImportReport, carried_matrix, parse_lines

_INSERT = """INSERT INTO cto.memory AS m (owner_type, owner_id, type, content, summary, key,
    source, importance, confidence, created_at, updated_at, expires_at, status, related_to,
    hash, metadata, member_id, server_code, embedding, embedding_model)
VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)"""

# an import's row carries its access count and last access in the same statement: a second
# UPDATE per row would write every index (HNSW included) again
_INSERT_COUNTED = _INSERT.replace(
    "embedding, embedding_model)",
    "embedding, embedding_model, access_count_v2, last_access, access_days, access_day_at)"
).replace("%s, %s)", "%s, %s, %s, %s, %s, %s)")

_REFRESH = """ ON CONFLICT (owner_type, owner_id, hash) WHERE status = 'active' DO UPDATE SET
    importance = greatest(m.importance, excluded.importance),
    confidence = greatest(m.confidence, excluded.confidence),
    updated_at = excluded.updated_at,
    source = CASE WHEN excluded.source = 'explicit' THEN 'explicit' ELSE m.source END,
    expires_at = CASE WHEN m.expires_at IS NULL OR excluded.expires_at IS NULL THEN NULL
                      ELSE greatest(m.expires_at, excluded.expires_at) END,
    embedding = coalesce(m.embedding, excluded.embedding),
    embedding_model = coalesce(m.embedding_model, excluded.embedding_model)
RETURNING id, (xmax = 0) AS inserted"""


def _values(store: Any, chat: str, mem: NewMemory, digest: str, now: datetime,
            status: MemoryStatus, vector: np.ndarray | None) -> tuple[Any, ...]:
    return (*owner(chat), mem.type.value, mem.content, mem.summary, mem.key, mem.source.value,
            mem.importance, mem.confidence, mem.created_at or now, now, store.expiry(mem, now),
            status.value, list(mem.related_ids), digest,
            json.dumps(mem.metadata, ensure_ascii=False), mem.owner_id, store.name,
            vector, store.model if vector is not None else None)


async def upsert(conn: Any, store: Any, chat: str, mem: NewMemory, digest: str, now: datetime,
                 vector: np.ndarray | None) -> tuple[int, bool]:
    """Insert an active memory or refresh the active one with the same hash (atomic)."""
    cur = await conn.execute(_INSERT + _REFRESH,
                             _values(store, chat, mem, digest, now, MemoryStatus.ACTIVE, vector))
    row = await cur.fetchone()
    return int(row["id"]), bool(row["inserted"])


async def update(store: Any, chat_id: str, memory_id: int, *, content: str | None = None,
                 summary: Any = UNSET, key: Any = UNSET, type: Any = None,  # noqa: A002
                 importance: float | None = None, confidence: float | None = None,
                 expires_at: Any = UNSET, metadata: dict[str, Any] | None = None,
                 related_ids: Iterable[int] | None = None) -> Memory:
    """Change fields in place; a new content (or key) is re-hashed and re-embedded."""
    chat = check_chat_id(chat_id)
    old = await store.get(chat, memory_id)
    if old is None or old.status == MemoryStatus.DELETED:
        raise MemoryNotFoundError(f"No existe el recuerdo #{memory_id}.")
    sets: dict[str, Any] = {}
    new_content, new_key = old.content, old.key
    if content is not None:
        new_content = clean_text(content, "el recuerdo", store.settings.max_content_chars)
        sets["content"] = new_content
    if key is not UNSET:
        new_key = clean_key(key)
        sets["key"] = new_key
    if summary is not UNSET:
        text = clean_text(summary, "el resumen", 2_000, required=False)
        sets["summary"] = text[:500] if text else None
    if type is not None:
        sets["type"] = clean_type(type).value
    if importance is not None:
        sets["importance"] = clean_unit(importance, "La importancia")
    if confidence is not None:
        sets["confidence"] = clean_unit(confidence, "La confianza")
    if expires_at is not UNSET:
        sets["expires_at"] = to_utc(expires_at) if expires_at else None
    if metadata is not None:
        sets["metadata"] = json.dumps(clean_metadata(metadata), ensure_ascii=False)
    if related_ids is not None:
        sets["related_to"] = list(clean_ids(related_ids))
    if not sets:
        return old
    changed = new_content != old.content or new_key != old.key
    digest = content_hash(new_content, new_key)
    if changed and old.status == MemoryStatus.ACTIVE:
        other = await store.active_id(chat, digest)
        if other is not None and other != old.id:
            raise MemoryInputError(f"Ya existe un recuerdo igual (#{other}).")
    if changed:
        context = ""
        if store.settings.recall_vector_context:   # as when it was saved (SQLite's editing)
            before = await store.content_before(
                chat, MemoryType(sets.get("type", old.type.value)), old.created_at, old.id)
            context = asked_in(before) if before else ""
        matrix = await store.embed([embedding_text(new_content, new_key, context)])
        sets["embedding"] = matrix[0] if matrix is not None else None
        sets["embedding_model"] = store.model if matrix is not None else None
    sets["hash"] = digest
    sets["updated_at"] = utcnow()
    assignments = ", ".join(f"{name} = %s" for name in sets)
    await store.run(
        f"UPDATE cto.memory SET {assignments} WHERE id = %s "  # noqa: S608
        "AND owner_type = %s AND owner_id = %s", (*sets.values(), old.id, *owner(chat)))
    updated = await store.get(chat, old.id)
    assert updated is not None
    return updated


async def supersede(store: Any, chat_id: str, old_id: int, new: NewMemory) -> Memory:
    """Old → superseded (kept as history) pointing at the new one (or its active twin)."""
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
    context = ""
    if twin is None and store.settings.recall_vector_context:  # in the old one's place
        before = await store.content_before(chat, mem.type, mem.created_at or utcnow(), old.id)
        context = asked_in(before) if before else ""
    matrix = None if twin is not None else await store.embed(
        [embedding_text(mem.content, mem.key, context)])
    now = utcnow()
    async with store.pool.connection() as conn, conn.transaction():
        cur = await conn.execute(
            "UPDATE cto.memory SET status = 'superseded', updated_at = %s WHERE id = %s "
            "AND owner_type = %s AND owner_id = %s AND status = 'active'",
            (now, old.id, *owner(chat)))
        if cur.rowcount != 1:   # forgotten or superseded meanwhile: the transaction rolls back
            raise MemoryInputError(f"El recuerdo #{old_id} ya no está activo.")
        new_id, _ = await upsert(conn, store, chat, mem, digest, now,
                                 matrix[0] if matrix is not None else None)
        await conn.execute("UPDATE cto.memory SET superseded_by = %s WHERE id = %s",
                           (new_id, old.id))
    result = await store.get(chat, new_id)
    assert result is not None
    return result


async def forget(store: Any, chat_id: str, *, memory_id: int | None = None,
                 key: str | None = None, text: str | None = None) -> Forgotten:
    """Erase active memories by id, by key or by phrase, with all their earlier versions."""
    chat = check_chat_id(chat_id)
    if sum(v is not None for v in (memory_id, key, text)) != 1:
        raise MemoryInputError("Indica qué olvidar: un id, una clave o un texto.")
    if memory_id is not None:
        ids = [m.id for m in await store.get_many(chat, [memory_id])
               if m.status == MemoryStatus.ACTIVE]
    elif key is not None:
        ids = [m.id for m in await store.list(chat, key=key, limit=100_000)]
    else:
        words = fts.terms(text or "")
        if not words:
            raise MemoryInputError("El texto a olvidar no tiene palabras.")
        rows = await store.fetch(
            "SELECT id FROM cto.memory WHERE owner_type = %s AND owner_id = %s "
            "AND status = 'active' AND to_tsvector('simple', rumi.fold(content || ' ' || "
            "coalesce(summary, '') || ' ' || coalesce(key, ''))) @@ "
            "phraseto_tsquery('simple', rumi.fold(%s))", (*owner(chat), " ".join(words)))
        ids = [int(r["id"]) for r in rows]
    result = Forgotten(replace(m, status=MemoryStatus.DELETED)
                       for m in await store.get_many(chat, ids))
    if result:
        result.history = await purge(store, chat, [m.id for m in result])
    return result


_CHAIN = """WITH RECURSIVE gone(id) AS (
    SELECT id FROM cto.memory WHERE owner_type = %s AND owner_id = %s AND id = ANY(%s::bigint[])
    UNION SELECT m.id FROM cto.memory m JOIN gone ON m.superseded_by = gone.id
    WHERE m.owner_type = %s AND m.owner_id = %s)
SELECT m.id, m.key, m.hash, m.metadata FROM cto.memory m JOIN gone ON gone.id = m.id
FOR UPDATE OF m"""


async def purge(store: Any, chat: str, ids: Sequence[int]) -> int:
    """Delete memories `ids` and every version they superseded (row and vector together);
    keep one hash per forgotten text in `rumi.forgotten_hashes`. Returns the history count."""
    kind, who = owner(chat)
    async with store.pool.connection() as conn, conn.transaction():
        cur = await conn.execute(_CHAIN, (kind, who, [int(i) for i in ids], kind, who))
        chain = await cur.fetchall()
        hashes: set[str] = set()
        for row in chain:
            hashes.add(row["hash"])
            edits = (row["metadata"] or {}).get("edited_from", [])
            hashes.update(content_hash(old, row["key"]) for old in
                          (edits if isinstance(edits, list) else [])
                          if isinstance(old, str) and old.strip())
        await conn.cursor().executemany(
            "INSERT INTO rumi.forgotten_hashes(owner_type, owner_id, hash) VALUES (%s, %s, %s) "
            "ON CONFLICT DO NOTHING", [(kind, who, h) for h in sorted(hashes)])
        every = [int(row["id"]) for row in chain]
        await conn.execute("DELETE FROM cto.memory WHERE id = ANY(%s::bigint[])", (every,))
        await announce(conn, store.name, chat)
    return len(every) - len(set(ids))


async def import_lines(store: Any, chat: str, lines: Iterable[str], *,
                       vectors: Mapping[int, np.ndarray] | None = None,
                       keep_source: bool = False) -> ImportReport:
    """JSON lines of an export into this chat: history rows keep their status, links are
    remapped to the new ids, what the chat forgot or already holds is skipped. With `vectors`
    (a migration's, by the lines' ids) those are written as they are: nothing is embedded."""
    report = ImportReport()
    entries = parse_lines(lines, store.settings.max_content_chars, report,
                          keep_source=keep_source)
    gone = await store.forgotten(chat, [e.digest for e in entries])
    report.forgotten = sum(1 for e in entries if e.digest in gone)
    entries = [e for e in entries if e.digest not in gone]
    rows = await store.fetch("SELECT hash, status, id FROM cto.memory WHERE owner_type = %s "
                             "AND owner_id = %s AND status <> 'deleted'", owner(chat))
    existing = {(r["hash"], r["status"]): int(r["id"]) for r in rows}
    id_map: dict[int, int] = {}
    todo = []
    for entry in entries:
        slot = (entry.digest, entry.status.value)
        if slot in existing:
            report.duplicates += 1
            if entry.old_id is not None:
                id_map[entry.old_id] = existing[slot]
            continue
        existing[slot] = -1
        todo.append(entry)
    active = [e for e in todo if e.status == MemoryStatus.ACTIVE]
    if vectors is None:
        contexts = await store.vector_contexts(chat, [e.memory for e in active]) \
            if store.can_embed else [""] * len(active)
        matrix = await store.embed([embedding_text(e.memory.content, e.memory.key, c)
                                    for e, c in zip(active, contexts, strict=True)])
    else:
        have, matrix = carried_matrix(todo, [n for n, e in enumerate(todo)
                                             if e.status == MemoryStatus.ACTIVE],
                                      vectors, store.has_vectors)
        active = [todo[n] for n in have]
    vector_of = {id(e): matrix[n] for n, e in enumerate(active)} if matrix is not None else {}
    now = utcnow()
    new_ids: list[tuple[Any, int]] = []
    async with store.pool.connection() as conn, conn.transaction():
        # one pipeline of single-row statements (psycopg's executemany), not a round trip each
        # (ON CONFLICT … RETURNING needs one statement per row to tell which rows went in)
        cur = conn.cursor()
        await cur.executemany(
            _INSERT_COUNTED + _REFRESH,
            [(*_values(store, chat, entry.memory, entry.digest, now, entry.status,
                       vector_of.get(id(entry))), entry.access_count, entry.last_accessed_at,
              entry.access_days, entry.access_day_at)
             for entry in todo], returning=True)
        found = []
        for _ in todo:
            found.append(await cur.fetchone())
            cur.nextset()
        for entry, row in zip(todo, found, strict=True):
            if not row["inserted"]:
                report.duplicates += 1
            else:
                new_ids.append((entry, int(row["id"])))
            if entry.old_id is not None:
                id_map[entry.old_id] = int(row["id"])
        for entry, new_id in new_ids:
            sup = id_map.get(entry.superseded_by) if entry.superseded_by is not None else None
            if sup is None and not any(i in id_map for i in entry.related):
                continue   # the row went in with no links already
            await conn.execute(
                "UPDATE cto.memory SET related_to = %s, superseded_by = %s WHERE id = %s",
                ([id_map[i] for i in entry.related if i in id_map], sup, new_id))
        await announce(conn, store.name, chat)
    report.imported = len(new_ids)
    report.vectors = sum(1 for entry, _ in new_ids if id(entry) in vector_of)
    return report

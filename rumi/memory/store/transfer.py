"""Export a chat's memories as JSON lines and merge such lines into a chat.

Import is forgiving per line and strict per field: each line is validated like any other
input; a bad line is reported (line number + reason) and skipped, never fatal. Memories already
present (same key + content hash and status) are not duplicated. Ids are remapped, so
`superseded_by` and `related_ids` keep pointing at the right memories in the target chat.

`rumi store migrate` uses the same lines with two differences (`import_lines(vectors=…,
keep_source=True)`): each memory's stored vector comes along, keyed by its id in the lines, and
is written as it is instead of being embedded again (a Pi re-embedding 20k memories takes
minutes, and another model would silently change recall); and each line keeps its `source`
(a `/remember`ed memory stays `explicit`, not `import`).
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from rumi import messages as msg
from rumi.memory.store import editing
from rumi.memory.store.codec import (
    MEMORY_COLUMNS,
    clean_new_memory,
    content_hash,
    embedding_text,
    parse_ts,
    row_to_memory,
    ts,
    utcnow,
)
from rumi.memory.store.models import (
    Memory,
    MemoryInputError,
    MemorySource,
    MemoryStatus,
    MemoryType,
    NewMemory,
)
from rumi.memory.store.rows import MemoryRows

FORMAT = "rumi.memory/1"
_IMPORTABLE = {MemoryStatus.ACTIVE, MemoryStatus.SUPERSEDED, MemoryStatus.EXPIRED}


@dataclass
class ImportReport:
    imported: int = 0
    duplicates: int = 0
    forgotten: int = 0   # lines this chat had forgotten: never brought back by an import
    vectors: int = 0     # vectors written with the new rows (carried, or embedded now)
    errors: list[tuple[int, str]] = field(default_factory=list)


def memory_to_line(memory: Memory) -> str:
    record: dict[str, Any] = {
        "format": FORMAT,
        "id": memory.id,
        "type": memory.type.value,
        "content": memory.content,
        "summary": memory.summary,
        "key": memory.key,
        "source": memory.source.value,
        "importance": memory.importance,
        "confidence": memory.confidence,
        "access_count": memory.access_count,
        "last_accessed_at": ts(memory.last_accessed_at),
        "access_days": memory.access_days,
        "access_day_at": ts(memory.access_day_at),
        "created_at": ts(memory.created_at),
        "updated_at": ts(memory.updated_at),
        "expires_at": ts(memory.expires_at),
        "status": memory.status.value,
        "superseded_by": memory.superseded_by,
        "related_ids": list(memory.related_ids),
        "metadata": memory.metadata,
    }
    if memory.owner_id is not None:
        record["owner_id"] = memory.owner_id
    return json.dumps(record, ensure_ascii=False)


async def export_lines(store: MemoryRows, chat: str) -> list[str]:
    async with store.connection.execute(
        f"SELECT {MEMORY_COLUMNS} FROM memories WHERE chat_id = ? AND status != 'deleted' "  # noqa: S608
        "ORDER BY id",
        (chat,),
    ) as cur:
        return [memory_to_line(store.access.apply(row_to_memory(row)))
                for row in await cur.fetchall()]


@dataclass
class _Entry:
    line_no: int
    old_id: int | None
    memory: NewMemory
    status: MemoryStatus
    digest: str
    superseded_by: int | None
    related: tuple[int, ...]
    access_count: int
    last_accessed_at: str | None
    access_days: int
    access_day_at: str | None


def _source(record: dict[str, Any], keep: bool) -> MemorySource:
    if keep:
        with contextlib.suppress(ValueError):
            return MemorySource(record.get("source"))
    return MemorySource.IMPORT


def _parse(line_no: int, line: str, max_chars: int, keep_source: bool = False) -> _Entry | None:
    if len(line) > max_chars * 8 + 20_000:
        raise MemoryInputError(msg.IMPORT_LINE_TOO_LONG)
    try:
        record = json.loads(line)
    except (json.JSONDecodeError, RecursionError) as exc:
        raise MemoryInputError(msg.IMPORT_LINE_NOT_JSON) from exc
    if not isinstance(record, dict):
        raise MemoryInputError(msg.IMPORT_LINE_NOT_OBJECT)
    try:
        status = MemoryStatus(record.get("status", "active"))
    except ValueError as exc:
        shown = repr(record.get("status"))
        raise MemoryInputError(msg.IMPORT_LINE_STATUS.format(status=shown)) from exc
    if status not in _IMPORTABLE:
        return None
    try:
        created = parse_ts(record.get("created_at"))
        expires = parse_ts(record.get("expires_at"))
        last = parse_ts(record.get("last_accessed_at"))
        day_at = parse_ts(record.get("access_day_at"))
    except (TypeError, ValueError) as exc:
        raise MemoryInputError(msg.IMPORT_LINE_DATE) from exc
    kind = record.get("type", MemoryType.FACT.value)
    mem = clean_new_memory(
        NewMemory(
            content=record.get("content"),
            type=kind,
            key=record.get("key"),
            summary=record.get("summary"),
            source=_source(record, keep_source),
            importance=record.get("importance", 0.5),
            confidence=record.get("confidence", 0.8),
            created_at=created,
            expires_at=expires,
            metadata=record.get("metadata") or {},
            owner_id=record.get("owner_id"),
        ),
        max_chars,
    )
    old_id = record.get("id")
    sup = record.get("superseded_by")
    related = record.get("related_ids") or []
    count = record.get("access_count", 0)
    if not isinstance(count, int) or isinstance(count, bool) or count < 0:
        count = 0
    used_days = record.get("access_days")
    if not isinstance(used_days, int) or isinstance(used_days, bool) or used_days < 0:
        # an export made before the day count (or a bad value): what the migration gives
        used_days, day_at = (1, day_at or last) if count > 0 else (0, None)
    used_days = min(used_days, count)   # a day of use is at least one access
    return _Entry(
        line_no=line_no,
        old_id=old_id if isinstance(old_id, int) and not isinstance(old_id, bool) else None,
        memory=mem,
        status=status,
        digest=content_hash(mem.content, mem.key),
        superseded_by=sup if isinstance(sup, int) and not isinstance(sup, bool) else None,
        related=tuple(i for i in related if isinstance(i, int) and not isinstance(i, bool))
        if isinstance(related, list) else (),
        access_count=count,
        last_accessed_at=ts(last),
        access_days=used_days,
        access_day_at=ts(day_at) if used_days else None,
    )


def _without_forgotten_edits(entry: _Entry, gone: set[str]) -> _Entry:
    """Drop pre-edit texts (`edited_from`) the chat has forgotten from an imported memory."""
    meta = entry.memory.metadata or {}
    edits = meta.get("edited_from")
    if not isinstance(edits, list) or not gone:
        return entry
    kept = [t for t in edits
            if not (isinstance(t, str) and content_hash(t, entry.memory.key) in gone)]
    if len(kept) == len(edits):
        return entry
    memory = replace(entry.memory, metadata={**meta, "edited_from": kept})
    return replace(entry, memory=memory)


async def _existing(store: MemoryRows, chat: str) -> dict[tuple[str, str], int]:
    async with store.connection.execute(
        "SELECT content_hash, status, id FROM memories WHERE chat_id = ? AND status != 'deleted'",
        (chat,),
    ) as cur:
        return {(row[0], row[1]): row[2] for row in await cur.fetchall()}


async def import_lines(store: MemoryRows, chat: str, lines: Iterable[str], *,
                       vectors: Mapping[int, np.ndarray] | None = None,
                       keep_source: bool = False) -> ImportReport:
    """Merge `lines` into `chat`. With `vectors` (a migration's, by the lines' ids) the active
    memories get those vectors as they are and nothing is embedded."""
    report = ImportReport()
    entries = parse_lines(lines, store.settings.max_content_chars, report,
                          keep_source=keep_source)
    existing = await _existing(store, chat)
    gone = await editing.forgotten(store, chat, [e.digest for e in entries])
    kept = [e for e in entries if e.digest not in gone]
    report.forgotten = len(entries) - len(kept)
    entries = [_without_forgotten_edits(e, gone) for e in kept]
    id_map: dict[int, int] = {}
    todo = _new_entries(entries, existing, id_map, report)
    active = [n for n, e in enumerate(todo) if e.status == MemoryStatus.ACTIVE]
    if vectors is None:
        contexts = await store.vector_contexts(chat, [todo[n].memory for n in active]) \
            if store.index.can_embed else [""] * len(active)
        matrix = await store.index.embed([
            embedding_text(todo[n].memory.content, todo[n].memory.key, c)
            for n, c in zip(active, contexts, strict=True)])
    else:
        active, matrix = carried_matrix(todo, active, vectors, store.vectors is not None)
    async with store.transaction() as conn:
        new_ids = await _insert_all(store, conn, chat, todo, id_map, report)
        await _link(conn, todo, new_ids, id_map)
        rows = [row for row, n in enumerate(active) if n in new_ids]
        if matrix is not None and rows:
            await store.index.write_vectors([new_ids[active[r]] for r in rows], matrix[rows])
    if matrix is not None and rows:
        await store.index.add(chat, [new_ids[active[r]] for r in rows], matrix[rows])
    report.imported = len(new_ids)
    report.vectors = len(rows) if matrix is not None else 0
    return report


def carried_matrix(todo: list[_Entry], active: list[int], vectors: Mapping[int, np.ndarray],
                   wanted: bool = True) -> tuple[list[int], np.ndarray | None]:
    """The entries among `active` that carry a vector, and those vectors as one matrix."""
    if not wanted:
        return [], None
    have = [n for n in active if todo[n].old_id is not None and todo[n].old_id in vectors]
    if not have:
        return [], None
    return have, np.stack([np.asarray(vectors[todo[n].old_id], dtype=np.float32)  # type: ignore[index]
                           for n in have])


def parse_lines(lines: Iterable[str], max_chars: int, report: ImportReport, *,
                keep_source: bool = False) -> list[_Entry]:
    """Every readable line as an entry; a refused one goes into `report.errors`."""
    entries: list[_Entry] = []
    for n, raw in enumerate(lines, start=1):
        line = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)
        if not line.strip():
            continue
        try:
            entry = _parse(n, line, max_chars, keep_source)
        except MemoryInputError as exc:
            report.errors.append((n, str(exc)))
            continue
        if entry is not None:
            entries.append(entry)
    return entries


def _new_entries(entries: list[_Entry], existing: dict[tuple[str, str], int],
                 id_map: dict[int, int], report: ImportReport) -> list[_Entry]:
    """Entries the chat does not hold yet (same content and status); a duplicate's old id
    maps to the row already here, so links to it still resolve."""
    todo: list[_Entry] = []
    seen: set[tuple[str, str]] = set()
    for entry in entries:
        slot = (entry.digest, entry.status.value)
        if slot in existing or slot in seen:
            report.duplicates += 1
            if entry.old_id is not None and slot in existing:
                id_map[entry.old_id] = existing[slot]
            continue
        seen.add(slot)
        todo.append(entry)
    return todo


async def _insert_all(store: MemoryRows, conn: Any, chat: str, todo: list[_Entry],
                      id_map: dict[int, int], report: ImportReport) -> dict[int, int]:
    """Insert the rows (inside the caller's transaction): entry index → new id."""
    now = utcnow()
    new_ids: dict[int, int] = {}
    for n, entry in enumerate(todo):
        try:
            # Each row goes in with its final status: a superseded "Vive en Lima" must not
            # pass through 'active' while the target chat has "Vive en Lima" active.
            new_id = await store.insert_row(conn, chat, entry.memory, entry.digest, now,
                                            entry.status)
        except sqlite3.IntegrityError:
            # Saved meanwhile (e.g. by the bot between our read and this transaction):
            # a duplicate like any other, never an error for the whole import.
            report.duplicates += 1
            found = await store.active_id(chat, entry.digest)
            if entry.old_id is not None and found is not None:
                id_map[entry.old_id] = found
            continue
        new_ids[n] = new_id
        if entry.old_id is not None:
            id_map[entry.old_id] = new_id
        await conn.execute(
            "UPDATE memories SET access_count = ?, last_accessed_at = ?, access_days = ?, "
            "access_day_at = ? WHERE id = ?",
            (entry.access_count, entry.last_accessed_at, entry.access_days, entry.access_day_at,
             new_id),
        )
    return new_ids


async def _link(conn: Any, todo: list[_Entry], new_ids: dict[int, int],
                id_map: dict[int, int]) -> None:
    """Related and superseded-by ids, translated to this chat's new ids."""
    for n, new_id in new_ids.items():
        entry = todo[n]
        related = [id_map[i] for i in entry.related if i in id_map]
        sup = id_map.get(entry.superseded_by) if entry.superseded_by is not None else None
        await conn.execute(
            "UPDATE memories SET related_ids = ?, superseded_by = ? WHERE id = ?",
            (json.dumps(related), sup, new_id),
        )

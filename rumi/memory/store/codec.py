"""Validation, hashing and row conversion for memories.

Everything a person or the model sends passes through `clean_new_memory` before it reaches
SQLite, so the store can trust its inputs and every rejection carries a user-safe Spanish
message (`MemoryInputError`). Datetimes are stored as fixed-width UTC ISO strings
(`2026-01-02T03:04:05.000000Z`) so they compare correctly as text.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import unicodedata
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any

from rumi import messages as msg
from rumi.base.chats import validate_chat_id
from rumi.memory.store.models import (
    Memory,
    MemoryInputError,
    MemorySource,
    MemoryStatus,
    MemoryType,
    NewMemory,
    RecallRow,
)

SUMMARY_MAX_CHARS = 500
KEY_MAX_CHARS = 100
METADATA_MAX_CHARS = 10_000
_TS_FORMAT = "%Y-%m-%dT%H:%M:%S.%fZ"
_SURROGATES = re.compile(r"[\ud800-\udfff]")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_SPACES = re.compile(r"\s+")


def utcnow() -> datetime:
    return datetime.now(UTC)


def to_utc(value: datetime) -> datetime:
    """Naive datetimes are taken to be UTC already (that is what we write)."""
    if value.tzinfo is UTC:
        return value
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def ts(value: datetime | None) -> str | None:
    return None if value is None else to_utc(value).strftime(_TS_FORMAT)


def parse_ts(value: str | None) -> datetime | None:
    if value is None:
        return None
    return to_utc(datetime.fromisoformat(value))  # reads the trailing "Z" (Python ≥ 3.11)


def clip(text: str, width: int) -> str:
    """`text` on one line, at most `width` characters (an ellipsis marks a cut)."""
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def check_chat_id(chat_id: str) -> str:
    """Chat ids scope every query; a malformed one is refused before it reaches SQL or a path."""
    if not isinstance(chat_id, str):
        raise MemoryInputError("Identificador de chat no válido.")
    try:
        return validate_chat_id(chat_id)
    except ValueError as exc:
        raise MemoryInputError("Identificador de chat no válido.") from exc


def _field(what: str, first: bool = False) -> str:
    """The field's name in the active language ("el recuerdo" / "the memory")."""
    name = msg.INPUT_FIELDS.get(what, what)
    return name[:1].upper() + name[1:] if first else name


def clean_text(value: Any, what: str, max_chars: int, *, required: bool = True) -> str | None:
    """Decode, repair and bound a text field; raise MemoryInputError with a friendly message."""
    if value is None:
        if required:
            raise MemoryInputError(msg.INPUT_MISSING.format(what=_field(what)))
        return None
    if isinstance(value, bytes | bytearray | memoryview):
        try:
            value = bytes(value).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise MemoryInputError(msg.INPUT_NOT_UTF8.format(what=_field(what, True))) from exc
    if not isinstance(value, str):
        raise MemoryInputError(msg.INPUT_NOT_TEXT.format(what=_field(what, True)))
    if len(value) > max_chars * 4:
        raise MemoryInputError(msg.INPUT_TOO_LONG.format(
            what=_field(what, True), length=len(value), max=max_chars))
    if "\x00" in value:
        raise MemoryInputError(msg.INPUT_BINARY.format(what=_field(what, True)))
    controls = len(_CONTROL.findall(value))
    if controls and controls > max(3, len(value) // 10):
        raise MemoryInputError(msg.INPUT_BINARY.format(what=_field(what, True)))
    value = _SURROGATES.sub("\ufffd", value)
    value = _CONTROL.sub("", value)
    value = unicodedata.normalize("NFC", value).strip()
    if not value:
        if required:
            raise MemoryInputError(msg.INPUT_EMPTY.format(what=_field(what, True)))
        return None
    if len(value) > max_chars:
        raise MemoryInputError(msg.INPUT_TOO_LONG.format(
            what=_field(what, True), length=len(value), max=max_chars))
    return value


def clean_unit(value: Any, what: str) -> float:
    """Importance/confidence: a finite number in [0, 1]."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise MemoryInputError(f"{what} debe ser un número entre 0 y 1.")
    number = float(value)
    if not math.isfinite(number) or number < 0 or number > 1:
        raise MemoryInputError(f"{what} debe ser un número entre 0 y 1 (recibido: {value!r}).")
    return number


def clean_type(value: Any) -> MemoryType:
    try:
        return MemoryType(value)
    except ValueError as exc:
        allowed = ", ".join(t.value for t in MemoryType)
        raise MemoryInputError(
            f"Tipo de recuerdo desconocido {value!r} (válidos: {allowed})."
        ) from exc


def clean_status(value: Any) -> MemoryStatus:
    try:
        return MemoryStatus(value)
    except ValueError as exc:
        raise MemoryInputError(f"Estado de recuerdo desconocido {value!r}.") from exc


def clean_key(value: Any) -> str | None:
    key = clean_text(value, "la clave", KEY_MAX_CHARS, required=False)
    return None if key is None else _SPACES.sub(" ", key).casefold()


def clean_metadata(value: Any) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise MemoryInputError("Los metadatos deben ser un objeto JSON.")
    try:
        text = json.dumps(dict(value), ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise MemoryInputError("Los metadatos no se pueden guardar como JSON.") from exc
    if len(text) > METADATA_MAX_CHARS:
        raise MemoryInputError("Los metadatos son demasiado grandes.")
    return json.loads(text)


def clean_ids(value: Any) -> tuple[int, ...]:
    if isinstance(value, int | str):
        value = (value,)
    try:
        items = tuple(value or ())
        if any(isinstance(v, bool) or (isinstance(v, float) and not v.is_integer())
               for v in items):
            raise ValueError("not an id")
        ids = tuple(int(v) for v in items)
    except (TypeError, ValueError) as exc:
        raise MemoryInputError("Los ids de recuerdos deben ser números enteros.") from exc
    return tuple(dict.fromkeys(i for i in ids if i > 0))


def clean_new_memory(new: NewMemory, max_content_chars: int) -> NewMemory:
    """Return a normalised copy of `new` or raise MemoryInputError."""
    if not isinstance(new, NewMemory):
        raise MemoryInputError("Recuerdo mal formado.")
    source = new.source
    try:
        source = MemorySource(source)
    except ValueError as exc:
        raise MemoryInputError(f"Origen desconocido {source!r}.") from exc
    for name in ("created_at", "expires_at"):
        value = getattr(new, name)
        if value is not None and not isinstance(value, datetime):
            raise MemoryInputError(f"{name} debe ser una fecha.")
    summary = clean_text(new.summary, "el resumen", SUMMARY_MAX_CHARS * 4, required=False)
    return replace(
        new,
        content=clean_text(new.content, "el recuerdo", max_content_chars),
        type=clean_type(new.type),
        key=clean_key(new.key),
        summary=summary[:SUMMARY_MAX_CHARS] if summary else None,
        source=source,
        importance=clean_unit(new.importance, "La importancia"),
        confidence=clean_unit(new.confidence, "La confianza"),
        related_ids=clean_ids(new.related_ids),
        created_at=to_utc(new.created_at) if new.created_at else None,
        expires_at=to_utc(new.expires_at) if new.expires_at else None,
        metadata=clean_metadata(new.metadata),
        owner_id=clean_owner(new.owner_id),
    )


def clean_owner(value: Any) -> str | None:
    """A member's id as text (Telegram ids are integers; anything odd is not an owner)."""
    if value is None or isinstance(value, bool):
        return None
    text = str(value).strip()
    return text if text.lstrip("-").isdigit() and len(text) <= 20 else None


def content_hash(content: str, key: str | None) -> str:
    """Identity of a memory inside a chat: key + content, case/space-insensitive.

    Key/value facts therefore upsert on (chat, key, value) as in the Rumi facts seed.
    """
    norm = _SPACES.sub(" ", unicodedata.normalize("NFC", content)).strip().casefold()
    return hashlib.sha256(f"{key or ''}\x00{norm}".encode()).hexdigest()


def embedding_text(content: str, key: str | None, context: str = "") -> str:
    """The text a memory's vector embeds: its own (with its key), after `context` when given
    (`asked_in` of the memory said just before it, with `recall_vector_context`)."""
    own = f"{key}: {content}" if key else content
    return f"{context}\n{own}" if context else own


# A memory's vector context comes from the memory said just before it (the chat's latest of
# the same type), if saved within this many hours (recall_index.NEIGHBOUR_GAP_HOURS' value).
VECTOR_CONTEXT_GAP = timedelta(hours=3)
# Vectors embedded with that context are labelled with the model's name and this recipe, so
# that turning `recall_vector_context` on re-embeds a chat's memories in the background
# exactly as a new model does (and `rumi memory stats` names the recipe).
VECTOR_CONTEXT_RECIPE = "asked-before-1"


def vector_label(model: str, vector_context: bool) -> str:
    """The label of a model's vectors: its name, plus the context recipe when it is on."""
    return f"{model}+{VECTOR_CONTEXT_RECIPE}" if vector_context else model


_LABEL = re.compile(r"[^\s:][^:\n]{0,39}: ")
_SENTENCE_GAP = re.compile(r"(?<=[.!?])\s+")


def asked_in(content: str) -> str:
    """What `content` asks: its sentences that end in "?", after its `Name: ` label when it
    has one ("" when it asks nothing). An answer ("They were awestruck and humbled.") names
    its topic only through the question before it, and the rest of the asking turn is
    usually about something else: embedding the answer with the question alone lifted the
    Spanish and English questions without costing multi-hop ones, where the whole turn
    before did (docs/benchmarks.md, "Step 6")."""
    body = content.strip()
    label = _LABEL.match(body)
    if label is not None:
        body = body[label.end():]
    asked = [s for s in _SENTENCE_GAP.split(body) if s.endswith("?")]
    if not asked:
        return ""
    return (label.group(0) if label is not None else "") + " ".join(asked)


def said_near(content: str, said: datetime | None, when: datetime) -> str | None:
    """`content` if it was said within `VECTOR_CONTEXT_GAP` of `when` (the stores' check on
    the row their `content_before` found)."""
    return content if said is not None and abs(said - when) <= VECTOR_CONTEXT_GAP else None


async def vector_contexts(
    items: Sequence[NewMemory],
    stored_before: Callable[[MemoryType, datetime], Awaitable[str | None]],
    enabled: bool = True,
) -> list[str]:
    """For each of `items` (saved in this order, after what the chat holds), `asked_in` of
    the memory said just before it: the latest earlier item of the same type, or else
    `stored_before(type, when)` — the chat's latest active memory of that type (each store
    asks its own chat only) — when it was said within `VECTOR_CONTEXT_GAP`. Never another
    chat's memory, never a later one. Both stores share this, so their vectors agree. Only
    the latest one is looked at (after a pause, nothing): one indexed row per save, where
    searching back for any memory within the gap walked the whole chat after every pause.
    All "" when not `enabled` (`recall_vector_context` off)."""
    if not enabled:
        return [""] * len(items)
    now = utcnow()
    found: list[str] = []
    latest: dict[MemoryType, NewMemory] = {}   # the batch's latest item of each type so far
    for item in items:
        when = item.created_at or now
        earlier = latest.get(item.type)
        if earlier is not None:
            near = abs((earlier.created_at or now) - when) <= VECTOR_CONTEXT_GAP
            before = earlier.content if near else None
        else:
            before = await stored_before(item.type, when)
        found.append(asked_in(before) if before else "")
        latest[item.type] = item
    return found


def expiry_for(
    kind: MemoryType, ttl_days: Mapping[str, float | None], now: datetime
) -> datetime | None:
    """TTL counts from when Rumi stored the memory, not from the event's own date."""
    days = ttl_days.get(kind.value)
    return None if days is None else now + timedelta(days=float(days))


MEMORY_COLUMNS = (
    "id, chat_id, type, content, summary, key, source, importance, confidence, access_count, "
    "last_accessed_at, created_at, updated_at, expires_at, status, superseded_by, related_ids, "
    "content_hash, embedding_model, metadata, owner_id, access_days, access_day_at"
)
_MEMORY_WIDTH = len(MEMORY_COLUMNS.split(","))


# value → member: the enums' own lookup behind a dict, without `Enum.__call__`'s overhead
# (recall converts ~100 rows per query); an unknown value still raises the enum's error
_TYPES = {m.value: m for m in MemoryType}
_SOURCES = {m.value: m for m in MemorySource}
_STATUSES = {m.value: m for m in MemoryStatus}


def row_to_memory(row: Any) -> Memory:
    """The `Memory` of a row whose first columns are `MEMORY_COLUMNS`, in that order (more
    may follow: recall's rows carry the stored vector after them). Read by position: a
    `sqlite3.Row` looks a name up by comparing it with every column's name in turn, and 23
    look-ups a row were most of the cost of converting recall's ~100 rows per query."""
    (memory_id, chat_id, kind, content, summary, key, source, importance, confidence,
     access_count, last_accessed_at, created_at, updated_at, expires_at, status,
     superseded_by, related_ids, digest, embedding_model, metadata, owner_id, access_days,
     access_day_at) = row[:_MEMORY_WIDTH]
    return _memory(dict(
        id=memory_id,
        chat_id=chat_id,
        type=_TYPES[kind] if kind in _TYPES else MemoryType(kind),
        content=content,
        key=key,
        summary=summary,
        source=_SOURCES[source] if source in _SOURCES else MemorySource(source),
        importance=importance,
        confidence=confidence,
        access_count=access_count,
        last_accessed_at=parse_ts(last_accessed_at),
        created_at=parse_ts(created_at),
        updated_at=parse_ts(updated_at),
        expires_at=parse_ts(expires_at),
        status=_STATUSES[status] if status in _STATUSES else MemoryStatus(status),
        superseded_by=superseded_by,
        related_ids=_json_list(related_ids),
        content_hash=digest,
        embedding_model=embedding_model,
        metadata=_json_dict(metadata),
        owner_id=owner_id,
        access_days=access_days,
        access_day_at=parse_ts(access_day_at),
    ))


def row_to_recall_row(row: Any) -> RecallRow:
    """Recall's view of a row read as `row_to_memory` reads it (the same columns, the same
    values); the whole memory is built from the row only if recall returns it."""
    kind, status, expires = row[2], row[14], row[13]
    # `tuple.__new__`: the named tuple's own `__new__` is one more Python call per candidate
    return _new_tuple(RecallRow, (
        row[0], _TYPES.get(kind) or MemoryType(kind), row[3], row[7],
        to_utc(datetime.fromisoformat(row[11])),
        None if expires is None else to_utc(datetime.fromisoformat(expires)),
        _STATUSES.get(status) or MemoryStatus(status), row[21], row, row_to_memory))


_new_tuple = tuple.__new__


def _memory(values: dict[str, Any]) -> Memory:
    """A `Memory` of every one of its fields, as read from a row (already typed). A frozen
    dataclass's `__init__` sets each of the 23 fields through `object.__setattr__`: ~10 µs
    a row, a millisecond of every recall at 100k memories (it converts ~100 rows), against
    ~1 µs filled this way. The same object (fields, equality, hash, immutability);
    `tests/memory/store/test_codec_rows.py` checks it against the constructor."""
    memory = object.__new__(Memory)
    memory.__dict__.update(values)
    return memory


def _json_list(text: str | None) -> tuple[Any, ...]:
    """Most rows hold "[]": skipping the JSON parser for it is a third of a recall's row
    loading (a recall loads up to ~100 rows)."""
    return tuple(json.loads(text)) if text and text != "[]" else ()


def _json_dict(text: str | None) -> dict[str, Any]:
    return json.loads(text) if text and text != "{}" else {}


@dataclass(frozen=True)
class SaveResult:
    memory: Memory
    created: bool

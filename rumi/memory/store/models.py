"""Value types of long-term memory, shared by the store, recall and the lifecycle jobs."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any, NamedTuple


class MemoryType(StrEnum):
    PREFERENCE = "preference"
    DECISION = "decision"
    FACT = "fact"
    ENTITY = "entity"
    TEMPORAL = "temporal"
    EPISODIC = "episodic"
    SUMMARY = "summary"
    PROFILE = "profile"


class MemoryStatus(StrEnum):
    ACTIVE = "active"
    SUPERSEDED = "superseded"
    EXPIRED = "expired"
    DELETED = "deleted"


class MemorySource(StrEnum):
    AUTO = "auto"
    EXPLICIT = "explicit"
    IMPORT = "import"


class MemoryInputError(ValueError):
    """Content or fields a person or the model sent that cannot be stored (message is user-safe)."""


@dataclass(frozen=True)
class NewMemory:
    """What a caller asks to remember; the store fills in ids, hashes and timestamps."""

    content: str
    type: MemoryType = MemoryType.FACT
    key: str | None = None
    summary: str | None = None
    source: MemorySource = MemorySource.AUTO
    importance: float = 0.5
    confidence: float = 0.8
    related_ids: tuple[int, ...] = ()
    created_at: datetime | None = None
    expires_at: datetime | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    owner_id: str | None = None   # the group member it is about (None: private chat, group)


@dataclass(frozen=True)
class Memory:
    id: int
    chat_id: str
    type: MemoryType
    content: str
    key: str | None
    summary: str | None
    source: MemorySource
    importance: float
    confidence: float
    access_count: int
    last_accessed_at: datetime | None
    created_at: datetime
    updated_at: datetime
    expires_at: datetime | None
    status: MemoryStatus
    superseded_by: int | None
    related_ids: tuple[int, ...]
    content_hash: str
    embedding_model: str | None
    metadata: dict[str, Any] = field(default_factory=dict)
    owner_id: str | None = None
    # the days it was used (uses at least `days.DAY_GAP` apart; the score's frequency reads
    # this, not `access_count`) and the last use counted as one
    access_days: int = 0
    access_day_at: datetime | None = None


class RecallRow(NamedTuple):
    """What recall reads of each of its ~100 candidates per query (liveness, the date, the
    score's inputs), and the whole `Memory` on demand (`memory()`): recall builds that only
    for the few it returns. Building every candidate's `Memory` (23 fields, five timestamps,
    two JSON columns) was the largest share of the event loop's time in a recall at 100k
    memories (docs/benchmarks.md, "Recall latency"). Any other field of `Memory` read here
    is read from the whole memory, so a step that needs more still gets it, only slower."""

    id: int
    type: MemoryType
    content: str
    importance: float
    created_at: datetime
    expires_at: datetime | None
    status: MemoryStatus
    access_days: int
    raw: Any                       # what `build` makes the whole memory of
    build: Callable[[Any], Memory]

    @classmethod
    def of(cls, memory: Memory) -> RecallRow:
        """The row of a memory already built (a store that builds them anyway)."""
        return cls(memory.id, memory.type, memory.content, memory.importance,
                   memory.created_at, memory.expires_at, memory.status, memory.access_days,
                   memory, _itself)

    def memory(self) -> Memory:
        return self.build(self.raw)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self.memory(), name)


def _itself(memory: Memory) -> Memory:
    return memory


@dataclass(frozen=True)
class ScoreParts:
    """Why a memory scored what it did (shown in /status and asserted in tests)."""

    recency: float
    importance: float
    relevance: float
    frequency: float
    total: float
    keyword: float = 0.0
    vector: float = 0.0


@dataclass(frozen=True)
class ScoredMemory:
    memory: Memory
    score: ScoreParts

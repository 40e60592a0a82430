"""Value types of long-term memory, shared by the store, recall and the lifecycle jobs."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any


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

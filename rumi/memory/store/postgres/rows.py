"""Rows of `cto.memory` as Rumi's `Memory`, and who owns a chat's memories.

A chat's memories belong to the chat's owner: in a private chat that is the person (Telegram's
private chat id *is* the user id), so two Rumis on one store see the same person's memories;
a group's belong to the group (negative ids). Every statement filters on both columns.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rumi.memory.store.codec import to_utc
from rumi.memory.store.models import Memory, MemorySource, MemoryStatus, MemoryType

COLUMNS = (
    "id, owner_id, type, content, summary, key, source, importance, confidence, "
    "access_count_v2, last_access, created_at, updated_at, expires_at, status, superseded_by, "
    "related_to, hash, embedding_model, metadata, member_id, access_days, access_day_at"
)
COLUMNS_OF_M = ", ".join(f"m.{name.strip()}" for name in COLUMNS.split(","))


def owner(chat: str) -> tuple[str, str]:
    """(owner_type, owner_id) of a chat's memories."""
    return ("group" if chat.startswith("-") else "user"), chat


def to_memory(row: Mapping[str, Any]) -> Memory:
    return Memory(
        id=int(row["id"]),
        chat_id=row["owner_id"],
        type=MemoryType(row["type"]),
        content=row["content"],
        key=row["key"],
        summary=row["summary"],
        source=MemorySource(row["source"]),
        importance=float(row["importance"]),
        confidence=float(row["confidence"]),
        access_count=int(row["access_count_v2"]),
        last_accessed_at=_utc(row["last_access"]),
        created_at=to_utc(row["created_at"]),
        updated_at=to_utc(row["updated_at"]),
        expires_at=_utc(row["expires_at"]),
        status=MemoryStatus(row["status"]),
        superseded_by=row["superseded_by"],
        related_ids=tuple(int(i) for i in row["related_to"] or ()),
        content_hash=row["hash"],
        embedding_model=row["embedding_model"],
        metadata=dict(row["metadata"] or {}),
        owner_id=row["member_id"],
        access_days=int(row["access_days"]),
        access_day_at=_utc(row["access_day_at"]),
    )


def _utc(value: Any) -> Any:
    return None if value is None else to_utc(value)

"""The data a chat's active session holds (SMMA sections 7–8), as plain dataclasses.

`SessionManager` persists this as `chats/<id>/session.json`; the context engine edits it.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

from rumi.base.chats import Speaker, validate_chat_id

Role = Literal["system", "user", "assistant", "tool"]
ItemKind = Literal["message", "summary", "loaded_file", "recalled", "note"]


def utc_now() -> datetime:
    return datetime.now(UTC)


def iso(dt: datetime) -> str:
    return dt.astimezone(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


@dataclass
class ContextItem:
    """One item of the message list, shown to the model as `[#id]`."""

    id: int
    role: Role
    content: str
    kind: ItemKind = "message"
    tool_calls: list[dict[str, Any]] | None = None
    tool_call_id: str | None = None
    name: str | None = None
    pinned: bool = False
    covers: list[int] = field(default_factory=list)
    token_count: int | None = None
    created_at: str = field(default_factory=lambda: iso(utc_now()))
    channel_message_id: int | None = None
    is_error: bool = False
    speaker_id: str | None = None     # the group member who wrote it (None: private chat)
    speaker_name: str | None = None

    @property
    def speaker(self) -> Speaker | None:
        if self.speaker_id is None:
            return None
        return Speaker(self.speaker_id, self.speaker_name or "?")

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ContextItem:
        known = {f for f in cls.__dataclass_fields__}
        return cls(**{k: v for k, v in data.items() if k in known})


@dataclass
class SessionState:
    chat_id: str
    created_at: str = field(default_factory=lambda: iso(utc_now()))
    last_active: str = field(default_factory=lambda: iso(utc_now()))
    next_id: int = 1
    items: list[ContextItem] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)

    def allocate_id(self) -> int:
        value = self.next_id
        self.next_id += 1
        return value

    def touch(self) -> None:
        self.last_active = iso(utc_now())

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SessionState:
        items = [ContextItem.from_dict(i) for i in data.get("items", [])]
        state = cls(
            chat_id=validate_chat_id(str(data["chat_id"])),
            created_at=data.get("created_at") or iso(utc_now()),
            last_active=data.get("last_active") or iso(utc_now()),
            next_id=int(data.get("next_id", 1)),
            items=items,
            metadata=dict(data.get("metadata") or {}),
        )
        highest = max((i.id for i in items), default=0)
        state.next_id = max(state.next_id, highest + 1)
        return state

"""Where a chat's files live: one directory per chat, so chats can never see each other's data.

Every part that touches a chat's files asks `ChatPaths` instead of joining strings itself;
the chat id is validated here once because it becomes a directory name.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from rumi.sessions.state import validate_chat_id


@dataclass(frozen=True)
class ChatPaths:
    """The layout of `data_dir/chats/<chat_id>/` (see docs/architecture.md)."""

    data_dir: Path
    chat_id: str

    def __post_init__(self) -> None:
        validate_chat_id(self.chat_id)
        object.__setattr__(self, "data_dir", Path(self.data_dir).expanduser())

    @property
    def root(self) -> Path:
        return self.data_dir / "chats" / self.chat_id

    @property
    def session_json(self) -> Path:
        return self.root / "session.json"

    @property
    def smma(self) -> Path:
        return self.root / ".smma"

    @property
    def tape(self) -> Path:
        return self.smma / "session_log.jsonl"

    @property
    def memory_dir(self) -> Path:
        return self.root / "memory"

    @property
    def memory_md(self) -> Path:
        return self.memory_dir / "MEMORY.md"

    @property
    def daily_dir(self) -> Path:
        """Daily logs `YYYY-MM-DD.md` live directly in `memory/` (DESIGN.md layout)."""
        return self.memory_dir

    @property
    def snapshots(self) -> Path:
        return self.memory_dir / "snapshots"

    @property
    def workspace(self) -> Path:
        return self.root / "workspace"


def chats_root(data_dir: Path) -> Path:
    """The directory holding one sub-directory per chat."""
    return Path(data_dir).expanduser() / "chats"


def db_path(data_dir: Path) -> Path:
    return Path(data_dir).expanduser() / "rumi.db"


def vectors_dir(data_dir: Path) -> Path:
    return Path(data_dir).expanduser() / "vectors"

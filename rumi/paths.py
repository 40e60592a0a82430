"""Where a chat's files live: one directory per chat, so chats can never see each other's data.

Every part that touches a chat's files asks `ChatPaths` instead of joining strings itself;
the chat id is validated here once because it becomes a directory name.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from rumi.base.chats import validate_chat_id


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

    def imported_tapes(self) -> list[tuple[str, Path]]:
        """(tag, path) of the tapes `/import` kept beside this chat's own, oldest first
        (blocking: a directory listing)."""
        found = []
        for path in sorted(self.smma.glob(f"{IMPORTED_TAPE_PREFIX}*.jsonl")):
            tag = imported_tape_tag(path.name)
            if tag is not None and path.is_file():
                found.append((tag, path))
        return found

    def imported_tape(self, tag: str) -> Path | None:
        """The imported tape named by `tag` (as `imported_tape_tag` gives it), or None."""
        match = _TAG.fullmatch(tag)
        if match is None:
            return None
        return self.smma / f"{IMPORTED_TAPE_PREFIX}{match.group(1)}.jsonl"

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


# An imported tape's message ids repeat the chat's own (both count from 1), so each imported
# tape has a tag, from its file name, and its messages are named `<tag>:<id>`
# (`imp20261125183500:42`).
IMPORTED_TAPE_PREFIX = "imported_session_log_"
_TAG = re.compile(r"imp([0-9A-Za-z_-]{1,60})")
_REF = re.compile(r"#?\s*(?:(imp[0-9A-Za-z_-]{1,60})\s*[:#]\s*#?)?(\d{1,12})")


def imported_tape_tag(file_name: str) -> str | None:
    """`imported_session_log_20261125183500.jsonl` → `imp20261125183500` (None if not one)."""
    if not (file_name.startswith(IMPORTED_TAPE_PREFIX) and file_name.endswith(".jsonl")):
        return None
    tag = "imp" + file_name[len(IMPORTED_TAPE_PREFIX):-len(".jsonl")]
    return tag if _TAG.fullmatch(tag) else None


def tape_ref(tag: str | None, message_id: object) -> str:
    """How a tape message is named to people and the model: `42`, or `imp…:42` when imported."""
    return f"{tag}:{message_id}" if tag else str(message_id)


def parse_tape_ref(value: int | str) -> tuple[str | None, int] | None:
    """`42`, `"#42"` → (None, 42); `"imp2026…:42"`, `"#imp2026…:42"` → (tag, 42); else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return (None, value) if value >= 0 else None
    match = _REF.fullmatch(str(value).strip())
    if match is None:
        return None
    return match.group(1), int(match.group(2))


def chats_root(data_dir: Path) -> Path:
    """The directory holding one sub-directory per chat."""
    return Path(data_dir).expanduser() / "chats"


def db_path(data_dir: Path) -> Path:
    return Path(data_dir).expanduser() / "rumi.db"


def vectors_dir(data_dir: Path) -> Path:
    return Path(data_dir).expanduser() / "vectors"

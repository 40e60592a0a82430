"""A chat's state outside the session JSON (tape, section files, caches, counters, notices),
and the runaway guard's count of memory system calls made without progress."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from rumi.context.builder import IncrementalRenderer
from rumi.context.sections import SectionFiles
from rumi.context.tape import Tape
from rumi.paths import ChatPaths
from rumi.sessions.state import ContextItem

SYSCALL_NAMES = frozenset({
    "prune_messages", "summarize_range", "recall_original",
    "save_to_disk", "load_from_disk", "edit_section",
})


@dataclass(frozen=True)
class TurnDashboard:
    """The dashboard as drawn for one turn (keyed by the id of the person's message it
    precedes) and what, if it changed, would make it worth drawing again."""

    turn: int
    key: tuple[Any, ...]
    block: str
    tokens: int


@dataclass
class ChatRuntime:
    """Per-chat state that is not part of the session JSON (caches, counters, notices)."""

    paths: ChatPaths
    tape: Tape
    files: SectionFiles
    opened: bool = False
    max_id: int = 0
    system_tokens: int = 0
    tools_tokens: int = 0
    tools_key: tuple[str, ...] = ()
    last_local: int = 0
    last_reported: int | None = None
    last_dash_tokens: int = 0
    turn_dashboard: TurnDashboard | None = None
    recall_query: str | None = None
    recall_text: str = ""
    recall_tokens: int = 0
    syscalls: int = 0
    runaway: bool = False
    compaction_blocked: bool = False
    notices: dict[str, str] = field(default_factory=dict)
    section_tokens: dict[str, int] = field(default_factory=dict)
    renderer: IncrementalRenderer = field(default_factory=IncrementalRenderer)
    imported: dict[str, Tape] = field(default_factory=dict)   # tag -> a tape /import kept

    def track_progress(self, item: ContextItem) -> None:
        """Anything but a memory system call counts as progress for the runaway guard."""
        if item.role == "user":
            self.runaway = False
            self.compaction_blocked = False  # a new turn may try the failed save once more
            self.recall_query = None  # recall once per turn, fresh (memories may have changed)
        progress = (
            item.role == "user"
            or (item.role == "tool" and item.name not in SYSCALL_NAMES)
            or (item.role == "assistant" and not item.tool_calls)
        )
        if progress:
            self.syscalls = 0

"""What the engine's helpers (compaction, disk files, status, system calls) use of the engine
and of a chat's runtime, as Protocols: they take the engine as a parameter without importing
`engine.py`, which imports them (no import cycle, not even under TYPE_CHECKING)."""

from __future__ import annotations

from typing import Any, Protocol

from rumi.config import ContextSettings, Settings
from rumi.context import dashboard as dash
from rumi.context.sections import SectionFiles
from rumi.context.tape import Tape
from rumi.context.tokens import TokenCounter
from rumi.paths import ChatPaths
from rumi.sessions.state import ContextItem, SessionState


class RuntimeView(Protocol):
    """The fields of `runtime.ChatRuntime` (per-chat state outside the session) helpers touch."""

    paths: ChatPaths
    tape: Tape
    files: SectionFiles
    max_id: int
    syscalls: int
    runaway: bool
    compaction_blocked: bool
    last_reported: int | None
    notices: dict[str, str]
    section_tokens: dict[str, int]


class EngineView(Protocol):
    """The part of `engine.ContextEngine` its helper modules call back into."""

    cfg: ContextSettings
    settings: Settings
    tokens: TokenCounter
    model: str
    safe_limit: int

    def runtime(self, session: SessionState) -> RuntimeView: ...
    def item(self, session: SessionState, item_id: int) -> ContextItem | None: ...
    async def original(self, session: SessionState,
                       message_id: int) -> dict[str, Any] | None: ...
    async def imported_original(self, session: SessionState, tag: str,
                                message_id: int) -> dict[str, Any] | None: ...
    def measure(self, session: SessionState) -> int: ...
    def pressure(self, session: SessionState) -> float: ...
    def dashboard_data(self, session: SessionState, rt: RuntimeView, used: int, *,
                       conversation: int | None = None) -> dash.DashboardData: ...
    def measure_parts(self, session: SessionState) -> tuple[int, int]: ...
    def binding_cap(self) -> int | None: ...

"""One way to wire a feature: a `Feature` is set up once, by the composition root, through a
`FeatureHost`; the built-in ones (sandbox, memory, reminders, voice, media) and a third-party
one go through the same door.

Why a Protocol and not pluggy hookspecs: Rumi's features are one list in `rumi/app.py` whose
order matters (the sandbox before memory, which stops sandboxes on /reset). A hookspec would add
a plugin manager, discovery and call-order markers to express that plain list; one `setup(host)`
method gives the one shape, a type checker reads it, and a plugin is one more item in the list.

Features never import each other or the core. What one offers another (the sandbox's "stop the
chat's container", reminders' "the chat's time zone") travels as a `Capability`: a typed key in
this module, offered by one feature and looked up by another at call time, so neither knows the
other exists and a missing one is simply absent.

Doctor checks are the one registration made without `setup`: `rumi doctor` must not start the
app (no database opened, no Groq client), so a feature that can diagnose its host says so with a
`doctor_checks()` method (`Diagnosable`), which the doctor calls on the same feature list.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar, runtime_checkable
from zoneinfo import ZoneInfo

from rumi.base.checks import DoctorCheck
from rumi.base.commands import CommandHandler, Description, GroupAdmin
from rumi.base.replies import Attachment
from rumi.base.tools import Tool
from rumi.config import Settings
from rumi.scheduler import Scheduler

if TYPE_CHECKING:  # the SDK is imported only by whoever builds the client
    import groq

T = TypeVar("T")

Hook = Callable[[], Awaitable[None]]
Job = Callable[[], Awaitable[Any]]
# (chat_id, session) -> a /status line, or None for nothing to say
StatusProvider = Callable[[str, Any], Awaitable["str | None"]]
# a session event (rumi.sessions.events.SessionEvent: .kind, .chat_id, …)
SessionHandler = Callable[[Any], Awaitable[None]]
# (chat_id, audio, duration if the channel knows it) -> (transcript, seconds of audio)
Transcribe = Callable[[str, Attachment, "float | None"], Awaitable[tuple[str, "float | None"]]]
# (chat_id, file, caption) -> the person's message as the conversation should keep it
MediaReader = Callable[[str, Attachment, str], Awaitable[str]]


@dataclass(frozen=True)
class Capability(Generic[T]):
    """A typed name for something one feature offers and others use without importing it."""

    name: str


class SaveFailed(Exception):
    """A file was not saved into the chat's sandbox; `unavailable` when there is none now."""

    def __init__(self, reason: str, *, unavailable: bool = False) -> None:
        super().__init__(reason)
        self.unavailable = unavailable


@dataclass(frozen=True)
class SandboxFiles:
    """Saving a received file into the chat's sandbox (documents use it)."""

    save: Callable[[str, str, str, bytes], Awaitable[str]]  # (chat, dir, name, data) -> path
    available: Callable[[], bool]


STOP_SANDBOX: Capability[Callable[[str], Awaitable[None]]] = Capability("stop_sandbox")
SANDBOX_FILES: Capability[SandboxFiles] = Capability("sandbox_files")
CHAT_TIMEZONE: Capability[Callable[[str], Awaitable[ZoneInfo]]] = Capability("chat_timezone")


class ContextSeams(Protocol):
    """What of the context engine a feature may touch: the recall provider it reads each turn
    (memory sets it), the hooks run before a compaction, and the token counter."""

    recall: Any
    before_compaction: list[Any]
    tokens: Any


class FeatureHost(Protocol):
    """Everything a feature may register and reach. The composition root implements it.

    `register_command`, `add_status_provider` and `chat_language` keep the core's signatures,
    so an object that registers its commands on "an assistant" takes the host unchanged.
    """

    # -- shared services --------------------------------------------------------------------
    @property
    def settings(self) -> Settings: ...
    @property
    def scheduler(self) -> Scheduler: ...
    @property
    def groq(self) -> groq.AsyncGroq:
        """The one Groq SDK client (its pool closes with the app; do not close it)."""
    @property
    def llm(self) -> Any:
        """The answering model's client (rumi.llm.client.LLMClient, a layer above base)."""
    @property
    def sessions(self) -> Any:
        """The session manager (rumi.sessions.manager.SessionManager, a layer above base)."""
    @property
    def context(self) -> ContextSeams: ...
    def count_tokens(self, text: str) -> int: ...
    def chat_language(self, chat_id: str) -> str: ...
    async def tell(self, chat_id: str, text: str,
                   buttons: list[list[tuple[str, str]]] | None = None, *,
                   keep: bool = True) -> bool:
        """An unprompted notice (buttons: rows of (label, command)); `keep=False` when the
        caller retries an undelivered one itself."""
    @property
    def can_tell(self) -> bool:
        """A channel is connected (so a notice can go out now)."""
    async def erased(self, chat_id: str) -> None:
        """Say that words of the chat were erased at the person's request (a redaction), so
        the channels drop their own copies."""
    async def run_turn(self, chat_id: str, user_id: str, text: str) -> str:
        """Answer `text` as a whole turn in the chat (a scheduled task) and return the reply."""

    # -- registration -----------------------------------------------------------------------
    def register_command(self, name: str, handler: CommandHandler, *,
                         description: Description | None = None, needs_session: bool = True,
                         group_admin: GroupAdmin = False) -> None: ...
    def add_tool(self, tool: Tool) -> None: ...
    def add_job(self, name: str, job: Job, *, minutes: float) -> None: ...
    def set_transcriber(self, transcribe: Transcribe) -> None: ...
    def set_media_reader(self, kind: str, reader: MediaReader) -> None: ...
    def add_status_provider(self, provider: StatusProvider, *, detail: bool = False) -> None: ...
    def on_session(self, kind: str, handler: SessionHandler) -> None: ...
    def on_start(self, hook: Hook) -> None: ...
    def on_stop(self, hook: Hook) -> None:
        """Run at exit after running turns are cancelled and before sessions are saved."""
    def on_close(self, hook: Hook) -> None:
        """Run at exit after the scheduler stopped; closers run in reverse order."""
    def expose(self, name: str, part: object) -> None:
        """Make an object reachable as `app.parts[name]` (tests, benchmarks, the CLI)."""

    # -- capabilities -----------------------------------------------------------------------
    def offer(self, capability: Capability[T], value: T) -> None: ...
    def find(self, capability: Capability[T]) -> T | None:
        """What a feature offered under `capability` so far (None if no feature did)."""


class Feature(Protocol):
    """A part of Rumi that plugs into the app; `setup` runs once, in the app's listed order,
    before anything starts (it may open files; it must not reach the network)."""

    name: str

    async def setup(self, host: FeatureHost) -> None: ...


@runtime_checkable
class Diagnosable(Protocol):
    """A feature with `rumi doctor` checks. Optional: a feature without the method has none.
    `doctor_checks` must be cheap and side-effect free; the checks run later, each isolated."""

    name: str

    def doctor_checks(self) -> list[DoctorCheck]: ...


def switched_off(enabled: bool, what: str, setting: str) -> bool:
    """True, after one log line, when the person turned this feature off in the config."""
    if not enabled:
        logging.getLogger("rumi.features").info("%s disabled (%s = false)", what, setting)
    return not enabled

"""Composition root: every long-lived object is built here, once, from `Settings`.

Nothing else constructs services or reads global state; parts get what they need through
their constructors. `App.start()`/`App.stop()` own the order in which things come up and go
down (stop: running turns and jobs cancelled → parts flushed → sessions saved → clients).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeVar

from rumi import messages as msg
from rumi.agent.loop import AgentLoop
from rumi.agent.status import llm_detail_provider, llm_status_provider
from rumi.base.answer_text import AnswerStream
from rumi.base.commands import CommandHandler, Description, GroupAdmin
from rumi.base.feature import (
    Capability,
    Feature,
    Hook,
    Job,
    MediaReader,
    SessionHandler,
    StatusProvider,
    Transcribe,
)
from rumi.base.progress import ToolSteps
from rumi.base.tools import Tool, ToolRegistry
from rumi.chat_language import ChatLanguages, locale_language
from rumi.config import Settings
from rumi.context import ContextEngine, TokenCounter
from rumi.context.status import cap_room_provider
from rumi.core.assistant import Assistant
from rumi.fileio import ensure_private_dir
from rumi.llm.client import LLMClient, groq_client
from rumi.llm.usage_day import FILE_NAME as DAY_USAGE_FILE
from rumi.llm.usage_day import DayUsageFile
from rumi.media.feature import MediaFeature
from rumi.memory.feature import MemoryFeature
from rumi.memory.store.backend import hold_store_name, reminder_rows
from rumi.reminders.feature import ReminderFeature
from rumi.sandbox.feature import SandboxFeature
from rumi.scheduler import Scheduler
from rumi.sessions.events import SessionEvent
from rumi.sessions.manager import SessionManager
from rumi.voice.feature import VoiceFeature

if TYPE_CHECKING:
    import groq

log = logging.getLogger(__name__)

T = TypeVar("T")


def builtin_features() -> list[Feature]:
    """Rumi's own features, in set-up order: the sandbox first (memory stops the chat's
    container on /reset), then memory, reminders (they offer the chat's time zone memory
    reads; their rows on the configured store, from the store wing), voice and media
    (documents are saved into the sandbox)."""
    return [SandboxFeature(), MemoryFeature(), ReminderFeature(rows=reminder_rows),
            VoiceFeature(), MediaFeature()]


@dataclass
class App:
    settings: Settings
    llm: LLMClient
    tokens: TokenCounter
    context: ContextEngine
    tools: ToolRegistry
    sessions: SessionManager
    scheduler: Scheduler
    agent: AgentLoop
    assistant: Assistant
    groq: groq.AsyncGroq | None = None
    parts: dict[str, object] = field(default_factory=dict)
    capabilities: dict[str, object] = field(default_factory=dict)
    starters: list[Hook] = field(default_factory=list)
    stoppers: list[Hook] = field(default_factory=list)
    closers: list[Hook] = field(default_factory=list)
    running: bool = False

    @property
    def steps(self) -> ToolSteps:
        """Tool steps of running turns, for the channels' progress displays."""
        return self.agent.steps

    @property
    def answer_text(self) -> AnswerStream:
        """The answer's text as it is written, for channels that show it growing."""
        return self.agent.text

    async def start(self) -> None:
        """Start background machinery (needs a running event loop)."""
        if self.running:
            return
        ensure_private_dir(self.settings.data_dir)
        for hook in self.starters:
            await hook()
        self.scheduler.start()
        self.running = True
        log.info("rumi started (model %s, %d tools, jobs: %s)", self.llm.model,
                 len(self.tools.names()), ", ".join(self.scheduler.jobs()) or "none")

    async def stop(self) -> None:
        """Stop at once: cancel turns and jobs (never awaiting the model), let parts flush,
        save sessions, close clients."""
        self.llm.stop_retrying()  # a failing model must not hold the exit for its backoffs
        await self.sessions.cancel_all()
        # jobs in flight are cancelled, not awaited: what they cut stays in its queue
        await self.scheduler.shutdown()
        for hook in self.stoppers:
            await _safely(hook, "stopper")
        await _safely(self.sessions.save_all, "saving sessions")
        for hook in reversed(self.closers):
            await _safely(hook, "closer")
        await _safely(self.llm.close, "closing the LLM client")
        self.running = False
        log.info("rumi stopped")


async def _safely(hook: Hook, what: str) -> None:
    try:
        await hook()
    except Exception:
        log.exception("%s failed during shutdown", what)


async def build_app(settings: Settings, *, features: Sequence[Feature] | None = None,
                    extra_features: Sequence[Feature] = ()) -> App:
    """Build the whole application from settings; nothing touches the network yet.

    `features` replaces the built-in list; `extra_features` (a plugin, a test's) are set up
    after it, through the same interface. On a PostgreSQL store this Rumi's `store.name` is
    held first (one running Rumi per name; a taken name raises `ConfigError`, one line) and
    freed last, after every part is closed."""
    name = await hold_store_name(settings)
    try:
        app = await _build(settings, features, extra_features)
    except BaseException:
        if name is not None:
            await name.release()
        raise
    if name is not None:
        app.closers.insert(0, name.release)   # closers run last-in first-out: this one last
    return app


async def _build(settings: Settings, features: Sequence[Feature] | None,
                 extra_features: Sequence[Feature]) -> App:
    client = groq_client(settings.llm)
    llm = LLMClient(settings.llm, client,
                    day_file=DayUsageFile(settings.data_dir / DAY_USAGE_FILE))
    await llm.restore_day()
    tokens = TokenCounter()
    context = ContextEngine(settings, tokens, llm)
    tools = ToolRegistry(settings.agent.tool_result_max_chars)
    for tool in context.tools():
        tools.register(tool)
    sessions = SessionManager(settings.data_dir, settings.sessions)
    scheduler = Scheduler(settings.timezone)
    agent = AgentLoop(llm, context, tools, settings.agent, steps=ToolSteps(),
                      text=AnswerStream())
    languages = ChatLanguages(settings.agent.language, settings.data_dir,
                              default=locale_language())
    await languages.load()
    msg.set_language(languages.default)   # tasks started from here on inherit it
    assistant = Assistant(sessions, context, agent, languages)
    assistant.add_status_provider(llm_status_provider(llm))
    assistant.add_status_provider(llm_detail_provider(llm), detail=True)
    assistant.add_status_provider(cap_room_provider(context))
    app = App(settings, llm, tokens, context, tools, sessions, scheduler, agent, assistant,
              groq=client)

    scheduler.add_interval_job("sessions.cleanup", sessions.expire_idle,
                               minutes=settings.sessions.cleanup_interval_minutes)
    host = AppHost(app)
    listed = builtin_features() if features is None else list(features)
    for feature in [*listed, *extra_features]:
        await feature.setup(host)

    async def forget_runtime(event: SessionEvent) -> None:
        context.forget_chat(event.chat_id)

    # Subscribed last: every other `ended` subscriber still sees the engine's chat state.
    sessions.events.subscribe("ended", forget_runtime)
    return app


class AppHost:
    """The `FeatureHost` the composition root hands each feature: registrations go straight
    to the app's assistant, tool registry, scheduler, session events and hook lists, in the
    order features make them."""

    def __init__(self, app: App) -> None:
        self._app = app

    @property
    def settings(self) -> Settings:
        return self._app.settings

    @property
    def scheduler(self) -> Scheduler:
        return self._app.scheduler

    @property
    def groq(self) -> groq.AsyncGroq:
        assert self._app.groq is not None
        return self._app.groq

    @property
    def llm(self) -> LLMClient:
        return self._app.llm

    @property
    def sessions(self) -> SessionManager:
        return self._app.sessions

    @property
    def context(self) -> ContextEngine:
        return self._app.context

    def count_tokens(self, text: str) -> int:
        return self._app.tokens.count(text)

    def chat_language(self, chat_id: str) -> str:
        return self._app.assistant.chat_language(chat_id)

    async def tell(self, chat_id: str, text: str,
                   buttons: list[list[tuple[str, str]]] | None = None, *,
                   keep: bool = True) -> bool:
        return await self._app.assistant.tell(chat_id, text, buttons, keep=keep)

    @property
    def can_tell(self) -> bool:
        return self._app.assistant.can_tell

    async def erased(self, chat_id: str) -> None:
        await self._app.assistant.erased(chat_id)

    async def run_turn(self, chat_id: str, user_id: str, text: str) -> str:
        reply = await self._app.assistant.handle(chat_id, user_id, text)
        return reply.text

    def register_command(self, name: str, handler: CommandHandler, *,
                         description: Description | None = None, needs_session: bool = True,
                         group_admin: GroupAdmin = False) -> None:
        self._app.assistant.register_command(name, handler, description=description,
                                             needs_session=needs_session,
                                             group_admin=group_admin)

    def add_tool(self, tool: Tool) -> None:
        self._app.tools.register(tool)

    def add_job(self, name: str, job: Job, *, minutes: float) -> None:
        self._app.scheduler.add_interval_job(name, job, minutes=minutes)

    def set_transcriber(self, transcribe: Transcribe) -> None:
        self._app.assistant.set_transcriber(transcribe)

    def set_media_reader(self, kind: str, reader: MediaReader) -> None:
        self._app.assistant.set_media_reader(kind, reader)

    def add_status_provider(self, provider: StatusProvider, *, detail: bool = False) -> None:
        self._app.assistant.add_status_provider(provider, detail=detail)

    def on_session(self, kind: str, handler: SessionHandler) -> None:
        self._app.sessions.events.subscribe(kind, handler)

    def on_start(self, hook: Hook) -> None:
        self._app.starters.append(hook)

    def on_stop(self, hook: Hook) -> None:
        self._app.stoppers.append(hook)

    def on_close(self, hook: Hook) -> None:
        self._app.closers.append(hook)

    def expose(self, name: str, part: object) -> None:
        self._app.parts[name] = part

    def offer(self, capability: Capability[T], value: T) -> None:
        self._app.capabilities[capability.name] = value

    def find(self, capability: Capability[T]) -> T | None:
        return self._app.capabilities.get(capability.name)  # type: ignore[return-value]

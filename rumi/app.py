"""Composition root: every long-lived object is built here, once, from `Settings`.

Nothing else constructs services or reads global state; parts get what they need through
their constructors. `App.start()`/`App.stop()` own the order in which things come up and go
down (stop: running turns cancelled → parts flushed → sessions saved → scheduler → clients).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING
from zoneinfo import ZoneInfo

from rumi import messages as msg
from rumi.agent.loop import AgentLoop
from rumi.agent.status import llm_detail_provider, llm_status_provider
from rumi.base.progress import ToolSteps
from rumi.base.tools import ToolRegistry
from rumi.chat_language import ChatLanguages, locale_language
from rumi.config import Settings
from rumi.context import ContextEngine, TokenCounter
from rumi.context.status import cap_room_provider
from rumi.core import Assistant
from rumi.fileio import ensure_private_dir
from rumi.llm.client import LLMClient
from rumi.scheduler import Scheduler
from rumi.sessions.events import SessionEvent
from rumi.sessions.manager import SessionManager

if TYPE_CHECKING:  # the sandbox (and the docker SDK) is imported only when enabled
    from rumi.sandbox.manager import SandboxManager

log = logging.getLogger(__name__)

Hook = Callable[[], Awaitable[None]]


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
    parts: dict[str, object] = field(default_factory=dict)
    starters: list[Hook] = field(default_factory=list)
    stoppers: list[Hook] = field(default_factory=list)
    closers: list[Hook] = field(default_factory=list)
    running: bool = False

    @property
    def steps(self) -> ToolSteps:
        """Tool steps of running turns, for the channels' progress displays."""
        return self.agent.steps

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
        """Stop cleanly: cancel turns, let parts flush, save sessions, close clients."""
        self.llm.stop_retrying()  # a failing model must not hold the exit for its backoffs
        await self.sessions.cancel_all()
        for hook in self.stoppers:
            await _safely(hook, "stopper")
        await _safely(self.sessions.save_all, "saving sessions")
        await self.scheduler.shutdown()
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


async def build_app(settings: Settings) -> App:
    """Build the whole application from settings; nothing touches the network yet."""
    llm = LLMClient(settings.llm)
    tokens = TokenCounter()
    context = ContextEngine(settings, tokens, llm)
    tools = ToolRegistry(settings.agent.tool_result_max_chars)
    for tool in context.tools():
        tools.register(tool)
    sessions = SessionManager(settings.data_dir, settings.sessions)
    scheduler = Scheduler(settings.timezone)
    agent = AgentLoop(llm, context, tools, settings.agent, steps=ToolSteps())
    languages = ChatLanguages(settings.agent.language, settings.data_dir,
                              default=locale_language())
    await languages.load()
    msg.set_language(languages.default)   # tasks started from here on inherit it
    assistant = Assistant(sessions, context, agent, languages)
    assistant.add_status_provider(llm_status_provider(llm))
    assistant.add_status_provider(cap_room_provider(context))
    assistant.add_status_provider(llm_detail_provider(llm), detail=True)
    app = App(settings, llm, tokens, context, tools, sessions, scheduler, agent, assistant)

    scheduler.add_interval_job("sessions.cleanup", sessions.expire_idle,
                               minutes=settings.sessions.cleanup_interval_minutes)
    await _wire_optional_parts(app)

    async def forget_runtime(event: SessionEvent) -> None:
        context.forget_chat(event.chat_id)

    # Subscribed last: every other `ended` subscriber still sees the engine's chat state.
    sessions.events.subscribe("ended", forget_runtime)
    return app


async def _wire_optional_parts(app: App) -> None:
    """The per-chat sandbox, then long-term memory (which stops sandboxes on /reset), then
    reminders."""
    _wire_sandbox(app)
    await _wire_memory(app)
    _wire_reminders(app)
    _wire_voice(app)
    _wire_media(app)


def _wire_media(app: App) -> None:
    """Photos described by a vision model; documents saved into the chat's sandbox."""
    from rumi.media.install import install_media

    app.closers.extend(install_media(app.settings, assistant=app.assistant,
                                     sandbox=app.parts.get("sandbox")))


def _wire_voice(app: App) -> None:
    """Speech-to-text for voice notes (`Assistant.handle_voice`), and its /status line."""
    if not app.settings.voice.enabled:
        log.info("voice notes disabled (voice.enabled = false)")
        return
    from rumi.voice.service import VoiceService
    from rumi.voice.transcriber import Transcriber

    transcriber = Transcriber(app.settings.llm, app.settings.voice.model)
    service = VoiceService(transcriber, app.settings.voice, app.settings.agent.language)
    app.parts["voice"] = service
    app.assistant.set_transcriber(service.transcribe)
    app.assistant.add_status_provider(service.status_line)
    app.closers.append(transcriber.close)


def _wire_reminders(app: App) -> None:
    if not app.settings.reminders.enabled:
        log.info("reminders disabled (reminders.enabled = false)")
        return
    from rumi.reminders.install import install_reminders

    service = install_reminders(app.settings, assistant=app.assistant,
                                scheduler=app.scheduler, tools=app.tools)
    app.parts["reminders"] = service
    app.starters.append(service.start)
    app.stoppers.append(service.stop)
    app.closers.append(service.store.close)


def _wire_sandbox(app: App) -> None:
    """Sandbox tools in the registry; the chat's container goes when its session ends."""
    settings = app.settings.sandbox
    if not settings.enabled:
        log.info("sandbox disabled (sandbox.enabled = false): no command tools")
        return
    from rumi.sandbox.manager import SandboxError, SandboxManager
    from rumi.sandbox.tools import sandbox_tools

    manager = SandboxManager(settings, app.settings.data_dir)
    app.parts["sandbox"] = manager
    for tool in sandbox_tools(manager):
        app.tools.register(tool)

    async def stop_sandbox(chat_id: str) -> None:
        try:
            await manager.remove(chat_id)
        except SandboxError as exc:
            log.warning("could not remove the sandbox of chat %s: %s", chat_id, exc)

    async def on_ended(event: SessionEvent) -> None:
        await stop_sandbox(event.chat_id)

    async def start() -> None:
        # Orphans of a previous run go now, or when the engine first answers (manager.start).
        available, reason = await manager.start()
        if not available:
            log.warning("sandbox unavailable: %s", reason)

    async def status_line(chat_id: str, session: object) -> str:
        state = manager.last_status
        if state is None:
            state = await manager.status()
        if not state[0]:
            return msg.STATUS_SANDBOX_DOWN.format(reason=_sandbox_problem(manager))
        if manager.has_container(chat_id):
            return msg.STATUS_SANDBOX_RUNNING
        return msg.STATUS_SANDBOX_OK

    app.parts["stop_sandbox"] = stop_sandbox
    app.sessions.events.subscribe("ended", on_ended)
    app.assistant.add_status_provider(status_line)
    app.scheduler.add_interval_job("sandbox.prune_idle", manager.prune_idle,
                                   minutes=min(5.0, settings.idle_prune_minutes))
    async def stop_all() -> None:
        removed = await manager.remove_all()
        if removed:
            log.info("stopped %d sandbox container(s) on exit", len(removed))

    app.starters.append(start)
    app.stoppers.append(stop_all)
    app.closers.append(manager.aclose)


def _sandbox_problem(manager: SandboxManager) -> str:
    """Why the sandbox is down, in the chat's language (the English reason is in the log)."""
    from rumi.sandbox.manager import PROBLEM_DISABLED, PROBLEM_ENGINE, PROBLEM_IMAGE

    problem = manager.last_problem
    if problem == PROBLEM_ENGINE:
        return msg.SANDBOX_PROBLEM_ENGINE
    if problem == PROBLEM_IMAGE:
        return msg.SANDBOX_PROBLEM_IMAGE.format(image=manager.settings.image)
    if problem == PROBLEM_DISABLED:
        return msg.SANDBOX_PROBLEM_DISABLED
    return msg.SANDBOX_PROBLEM_UNKNOWN


async def _wire_memory(app: App) -> None:
    from rumi.memory.factory import open_memory_store
    from rumi.memory.install import install_memory_lifecycle
    from rumi.memory.recall.retrieval import MemoryRecall
    from rumi.memory.status import memory_count_provider, memory_status_provider

    settings = app.settings
    ensure_private_dir(settings.data_dir)
    # the factory honours memory.vector_save_interval_seconds and builds the embedder off-loop
    store = await open_memory_store(settings)
    app.closers.append(store.close)
    app.parts["memory_store"] = store

    async def chat_timezone(chat_id: str) -> ZoneInfo:
        """The chat's zone (/timezone, kept by reminders) or the configured one: recall and
        /search resolve "ayer" or "last week" in it."""
        reminders = app.parts.get("reminders")
        if reminders is not None:
            try:
                return await reminders.timezone(chat_id)  # type: ignore[attr-defined]
            except Exception:  # a recall must not fail over the zone: use the configured one
                log.warning("timezone of chat %s unavailable", chat_id, exc_info=True)
        return ZoneInfo(settings.timezone)

    recall = MemoryRecall(store, settings.memory, count_tokens=app.tokens.count,
                          timezone=chat_timezone)
    app.context.recall = recall
    app.assistant.add_status_provider(memory_count_provider(store))
    app.assistant.add_status_provider(memory_status_provider(store, recall), detail=True)
    stop_sandbox = app.parts.get("stop_sandbox")
    runtime = await install_memory_lifecycle(
        settings, llm=app.llm, store=store, context=app.context, sessions=app.sessions,
        assistant=app.assistant, scheduler=app.scheduler, tools=app.tools,
        stop_sandbox=stop_sandbox,  # type: ignore[arg-type]
        notify=app.assistant.tell, timezone=chat_timezone,
    )
    app.parts["memory"] = runtime
    app.starters.append(runtime.start)
    app.stoppers.append(runtime.stop)

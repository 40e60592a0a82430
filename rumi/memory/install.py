"""One call wires the memory lifecycle into an already-built app (used by `rumi/app.py`).

`install_memory_lifecycle` takes the objects the composition root built and registers the
compaction hook, the session-end subscriber, the commands, the agent tools, the scheduler jobs
and the MEMORY.md watcher. The returned `MemoryRuntime` owns start/stop of the watcher.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from rumi.config import Settings
from rumi.memory.backup import make_backup, prune_backups
from rumi.memory.commands import MemoryCommands
from rumi.memory.consolidation import Consolidator, store_neighbours
from rumi.memory.extraction import Extractor
from rumi.memory.healing import notices
from rumi.memory.journal import Journal, utc_now
from rumi.memory.lifecycle import MemoryLifecycle
from rumi.memory.markdown_sync import MarkdownSync

log = logging.getLogger(__name__)

Notice = Callable[[str, str], Awaitable[None]]


class DailyLogRecall:
    """Wraps the engine's RecallProvider: today's and yesterday's logs join recalled memories.

    The engine gives one budget for the recall block; the logs take at most `daily_budget`
    tokens (and at most half of it), the memories get the rest.
    """

    def __init__(self, inner: Any, journal: Journal, daily_budget: int,
                 count_tokens: Callable[[str], int] | None = None) -> None:
        self.inner = inner
        self.journal = journal
        self.daily_budget = daily_budget
        self.count_tokens = count_tokens

    async def recall_block(self, chat_id: str, query: str, budget_tokens: int) -> str:
        share = min(self.daily_budget, budget_tokens // 2)
        logs = await self.journal.recent_block(chat_id, share, count_tokens=self.count_tokens)
        used = (self.count_tokens or (lambda s: len(s) // 4 + 1))(logs) if logs else 0
        memories = ""
        if self.inner is not None:
            memories = await self.inner.recall_block(chat_id, query, budget_tokens - used)
        parts = [memories.strip()] if memories and memories.strip() else []
        if logs:
            parts.append("Registro de hoy y ayer:\n" + logs)
        return "\n\n".join(parts)


@dataclass
class MemoryRuntime:
    lifecycle: MemoryLifecycle
    commands: MemoryCommands
    journal: Journal
    sync: MarkdownSync | None
    watch: bool

    async def start(self) -> None:
        if self.sync is not None and self.watch:
            await self.sync.start()

    async def stop(self) -> None:
        """Learn from open sessions, then stop the watcher (call before sessions are saved)."""
        try:
            await self.lifecycle.shutdown()
        finally:
            if self.sync is not None:
                await self.sync.stop()


def daily_backup(settings: Settings) -> Callable[[], Awaitable[None]]:
    """The `memory.backup` job: one archive a day, the ones older than the setting removed."""
    folder = settings.memory.backup_dir or settings.data_dir / "backups"

    async def run() -> None:
        info = await asyncio.to_thread(make_backup, settings.data_dir, folder)
        removed = await asyncio.to_thread(prune_backups, folder, settings.memory.backup_keep_days)
        log.info("daily backup %s (%d files, %d bytes); %d old ones removed",
                 info.path.name, info.files, info.size, len(removed))

    return run


def _markdown_status(sync: MarkdownSync) -> Callable[[str, Any], Awaitable[str | None]]:
    """A /status line when a MEMORY.md edit is held or was kept aside (else nothing)."""

    async def provide(chat_id: str, session: Any) -> str | None:
        return "\n".join(await sync.status_lines(chat_id)) or None

    return provide


async def install_memory_lifecycle(
    settings: Settings,
    *,
    llm: Any,
    store: Any,
    context: Any = None,
    sessions: Any = None,
    assistant: Any = None,
    scheduler: Any = None,
    tools: Any = None,
    stop_sandbox: Callable[[str], Awaitable[Any]] | None = None,
    notify: Notice | None = None,
    clock: Callable[[], datetime] = utc_now,
) -> MemoryRuntime:
    """Build the lifecycle parts and hook them into the app; call `start()` when running."""
    mem = settings.memory
    journal = Journal(settings.data_dir, settings.timezone, clock=clock, llm=llm)
    # "auto" names no language: memories then default to Rumi's reference one
    language = settings.agent.language
    extractor = Extractor(llm, language="es" if language == "auto" else language)
    consolidator = Consolidator(store, llm, neighbours=store_neighbours(store))
    sync = MarkdownSync(settings.data_dir, store, on_notice=notify,
                        language_of=assistant.chat_language if assistant is not None else None,
                        confirm_forget_count=mem.md_confirm_forget_count,
                        confirm_forget_share=mem.md_confirm_forget_share)
    lifecycle = MemoryLifecycle(
        settings.data_dir, store=store, extractor=extractor, consolidator=consolidator,
        journal=journal, sync=sync, context=context, sessions=sessions,
        optimize_threshold=settings.context.optimize_threshold, clock=clock,
    )
    commands = MemoryCommands(settings.data_dir, store=store, lifecycle=lifecycle,
                              journal=journal, sessions=sessions, stop_sandbox=stop_sandbox)
    if context is not None:
        context.before_compaction.append(lifecycle.before_compaction)
        budget = settings.context.section_budgets.get("daily_logs", 1_500)
        counter = getattr(getattr(context, "tokens", None), "count", None)
        context.recall = DailyLogRecall(context.recall, journal, budget, counter)
    if sessions is not None:
        sessions.events.subscribe("ended", lifecycle.on_session_ended)
    if assistant is not None:
        commands.register(assistant)
        assistant.add_status_provider(_markdown_status(sync))
    recovery = getattr(store, "recovery", None)
    if recovery is not None and notify is not None:
        language_of = assistant.chat_language if assistant is not None else None
        for chat_id, text in notices(recovery, language_of):   # queued until a channel is up
            await notify(chat_id, text)
    if tools is not None:
        for tool in commands.tools():
            tools.register(tool)
    if scheduler is not None:
        scheduler.add_interval_job("memory.flush", lifecycle.flush_pressure,
                                   minutes=mem.flush_interval_minutes)
        scheduler.add_interval_job("memory.consolidate", lifecycle.consolidate,
                                   minutes=mem.consolidation_interval_minutes)
        scheduler.add_interval_job("memory.purge", lifecycle.purge,
                                   minutes=mem.purge_interval_minutes)
        scheduler.add_interval_job("memory.daily_rollover", lifecycle.daily_rollover,
                                   minutes=mem.rollover_check_minutes)
        scheduler.add_interval_job("memory.retry_pending", lifecycle.retry_pending,
                                   minutes=mem.retry_pending_minutes)
        if mem.backup_keep_days > 0:
            scheduler.add_interval_job("memory.backup", daily_backup(settings),
                                       minutes=24 * 60)
    return MemoryRuntime(lifecycle, commands, journal, sync, mem.watch_memory_md)

"""One call wires the memory lifecycle into an already-built app (used by `rumi/app.py`).

`install_memory_lifecycle` takes the objects the composition root built and registers the
compaction hook, the session-end subscriber, the commands, the agent tools, the scheduler jobs
and the MEMORY.md watcher. The returned `MemoryRuntime` owns start/stop of the watcher.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from rumi import messages as msg
from rumi.config import Settings
from rumi.memory.archive.backup import make_backup, prune_backups
from rumi.memory.commands import MemoryCommands
from rumi.memory.files.healing import cross_check, notices
from rumi.memory.files.journal import Journal, utc_now
from rumi.memory.files.markdown_sync import MarkdownSync
from rumi.memory.learning.consolidation import Consolidator, store_neighbours
from rumi.memory.learning.extraction import Extractor
from rumi.memory.learning.lifecycle import MemoryLifecycle
from rumi.memory.recall import relative_time
from rumi.memory.recall.memory_translation import MemoryTranslator
from rumi.memory.redaction.command import RedactCommand
from rumi.memory.redaction.redactor import Redactor
from rumi.memory.store.switch import MemorySwitch
from rumi.memory.store.tape_index import TapeIndex
from rumi.paths import ChatPaths

log = logging.getLogger(__name__)

Notice = Callable[[str, str], Awaitable[None]]


WARM_QUERY = "¿Qué recuerdas de mí? What do you remember?"  # the model's first query, at start
EMBED_BATCH = 64  # memories embedded per step after a rebuild (one step blocks a recall)
MAX_ASKED_DAYS = 31  # daily logs read for one relative expression ("el mes pasado")


class DailyLogRecall:
    """Wraps the engine's RecallProvider: today's and yesterday's logs join recalled memories,
    and so do the logs of the days a message names relatively ("¿qué hice el lunes?").

    The engine gives one budget for the recall block; the logs take at most `daily_budget`
    tokens (and at most half of it; the named days first), the memories get the rest.
    """

    def __init__(self, inner: Any, journal: Journal, daily_budget: int,
                 count_tokens: Callable[[str], int] | None = None,
                 switch: MemorySwitch | None = None,
                 timezone: Callable[[str], Awaitable[ZoneInfo]] | None = None) -> None:
        self.inner = inner
        self.journal = journal
        self.daily_budget = daily_budget
        self.count_tokens = count_tokens
        self.switch = switch
        self.timezone = timezone
        self._prefetches: set[asyncio.Task[None]] = set()

    def prefetch(self, chat_id: str, query: str) -> Awaitable[object] | None:
        """Hand the message to the memories' recall early (it embeds the query), unless the
        chat has memory off: then its recall never runs and the embedding would be waste.
        Returns what finishes with the head start (the switch checked, the inner prefetch
        done), or None when there is none; it never raises."""
        start = getattr(self.inner, "prefetch", None)
        if start is None:
            return None
        if self.switch is None:
            return start(chat_id, query)

        async def when_on(switch: MemorySwitch) -> None:
            try:
                if await switch.enabled(chat_id):
                    inner = start(chat_id, query)
                    if inner is not None:
                        await inner
            except Exception:  # noqa: BLE001 - only a head start: the recall does it anyway
                log.debug("recall prefetch skipped for chat %s", chat_id, exc_info=True)

        task = asyncio.ensure_future(when_on(self.switch))
        self._prefetches.add(task)
        task.add_done_callback(self._prefetches.discard)
        return task

    async def recall_block(self, chat_id: str, query: str, budget_tokens: int) -> str:
        if self.switch is not None and not await self.switch.enabled(chat_id):
            return ""   # `/memory off`: nothing long-term reaches the prompt
        share = min(self.daily_budget, budget_tokens // 2)
        count = self.count_tokens or (lambda s: len(s) // 4 + 1)
        asked = ""
        days = await self.asked_days(chat_id, query)
        if days:
            asked = await self.journal.days_block(chat_id, days, share, count_tokens=count)
        used = count(asked) if asked else 0
        logs = await self.journal.recent_block(chat_id, share - used, count_tokens=count)
        used += count(logs) if logs else 0
        memories = ""
        if self.inner is not None:
            memories = await self.inner.recall_block(chat_id, query, budget_tokens - used)
        parts = [memories.strip()] if memories and memories.strip() else []
        if asked:
            parts.append(msg.RECALL_ASKED_DAYS_LOG + "\n" + asked)
        if logs:
            parts.append(msg.RECALL_RECENT_LOG + "\n" + logs)
        return "\n\n".join(parts)

    async def asked_days(self, chat_id: str, text: str) -> list[date]:
        """Days (the journal's dates) that relative expressions in `text` name, oldest first,
        without today and yesterday (always shown); none when there is no expression."""
        if not relative_time.mentions(text):
            return []
        zone = await self.timezone(chat_id) if self.timezone is not None else self.journal.tz
        now = self.journal.clock()
        spans = await asyncio.to_thread(relative_time.resolve, text, now, zone)
        today = self.journal.today(now)
        recent = {today, today - timedelta(days=1)}
        days: set[date] = set()
        for span in spans:
            day = span.start.astimezone(self.journal.tz).date()
            last = (span.end.astimezone(self.journal.tz) - timedelta(microseconds=1)).date()
            while day <= last and day <= today:
                if day not in recent:
                    days.add(day)
                day += timedelta(days=1)
        return sorted(days)[-MAX_ASKED_DAYS:]


@dataclass
class MemoryRuntime:
    lifecycle: MemoryLifecycle
    commands: MemoryCommands
    journal: Journal
    sync: MarkdownSync | None
    watch: bool
    tape_index: TapeIndex | None = None
    db_path: Path | None = None
    redactor: Redactor | None = None
    store: Any = None
    preload: bool = False
    translator: MemoryTranslator | None = None
    _embedding: asyncio.Task[None] | None = field(default=None, init=False, repr=False)
    _catch_up: asyncio.Task[int] | None = field(default=None, init=False, repr=False)

    async def start(self) -> None:
        self.preload_model()
        if self.redactor is not None:
            await self.redactor.resume()   # a redaction a crash interrupted is finished first
        if self.sync is not None and self.watch:
            await self.sync.start()
        if self.store is not None:
            await self.store.watch(self.changed_elsewhere)
        await self.check()
        recovery = getattr(self.store, "recovery", None)
        rebuilt = sorted(chat for chat, n in (recovery.rebuilt if recovery else {}).items() if n)
        self._embedding = asyncio.create_task(self.embed_in_background(rebuilt),
                                              name="rumi-embed-missing")
        # what the last stop left in the pending file (never awaited then) is learned now,
        # in the background: the first answer does not wait for it
        self._catch_up = asyncio.create_task(self.retry_left(), name="rumi-memory-catch-up")
        if self.translator is not None:   # memories translated when saved, in the background
            try:
                await self.translator.start()
            except Exception:   # recall works without: the translations' search finds nothing
                log.exception("starting the memories' translator failed")

    async def changed_elsewhere(self, chat_id: str) -> None:
        """Another Rumi sharing the store changed this chat's memories (a /forget, a
        /remember, an edit of its MEMORY.md): this Rumi's MEMORY.md of the chat, if it has
        one, shows the store again."""
        if self.sync is None:
            return
        try:
            path = ChatPaths(self.sync.data_dir, chat_id).memory_md
        except ValueError:
            return
        if await asyncio.to_thread(path.is_file):
            await self.sync.write(chat_id)

    async def retry_left(self) -> int:
        try:
            return await self.lifecycle.retry_pending()
        except Exception:   # the retry job tries again at its next tick
            log.exception("learning what the last stop left failed")
            return 0

    def preload_model(self) -> None:
        """Start loading the embedding model now, in its own thread: the first answer after a
        start then finds it loaded instead of waiting for it (5 s offline, more on a Pi);
        until it is in, recall uses keywords. `memory.embedding_preload = false` keeps an idle
        bot ~60 MiB lighter and loads it on first use instead."""
        embedder = getattr(self.store, "embedder", None)
        if self.preload and embedder is not None and embedder.available:
            embedder.start_loading()

    async def embed_in_background(self, rebuilt: list[str]) -> int:
        """After the bot is up: vectors for memories rebuilt from MEMORY.md, and for every
        chat whose memories have none of the current model — after an upgrade changed the
        default model, existing chats are re-embedded here while recall keeps working on
        keywords (and on whatever is already re-embedded)."""
        chats = list(rebuilt)
        finder = getattr(self.store, "chats_missing_vectors", None)
        if finder is not None and self.preload:   # without preload the model loads on use
            if getattr(self.store, "embedder", None) is not None:
                await self.store.embedder.warm_up()   # loading in its thread; wait for it
            try:
                chats += [c for c in await finder() if c not in chats]
            except Exception:   # each chat's first use backfills instead
                log.exception("listing chats without vectors failed")
        done = await self.embed_rebuilt(chats) if chats else 0
        await self.warm_recall()
        return done

    async def warm_recall(self) -> int:
        """With `memory.embedding_preload` (eager, like the model): load and verify every
        chat's vector index now, after the start, and run one query through the model, so a
        chat's first message after a restart waits for neither (an index check takes seconds
        for a 100k-memory chat; the default model's first query maps its weights in, ~2 s on
        a loaded machine against ~0.2 s for the next: docs/benchmarks.md "Recall latency").
        Without preload each index is loaded by its chat's first recall, keeping an idle bot
        lighter (a chat's index takes ~1.7 KB per memory in RAM). Returns how many chats
        have a usable index."""
        prepare = getattr(self.store, "prepare_vectors", None)
        if not self.preload or prepare is None or not getattr(self.store, "has_vectors", False):
            return 0
        ready = 0
        try:
            chats = await self.store.chats()
        except Exception:   # each chat's first recall loads its index instead
            log.exception("listing chats to load their vector indexes failed")
            return 0
        keywords = self.store.keyword_index   # SQLite's arrays (recall_keyword_engine)
        for chat_id in chats:
            try:
                ready += bool(await prepare(chat_id))
            except Exception:   # prepare_vectors degrades by itself; this is only a head start
                log.exception("loading the vector index of chat %s failed", chat_id)
            try:
                await keywords.prepare(chat_id)
            except Exception:   # the chat's first recall reads them (FTS5 ranks meanwhile)
                log.exception("reading the keyword arrays of chat %s failed", chat_id)
        try:
            embedder = getattr(self.store, "embedder", None)
            if embedder is not None and await embedder.warm_up():   # loading: wait for it
                await self.store.embed_query(WARM_QUERY)
        except Exception:   # the first recall's query pays for it instead
            log.exception("the model's first query failed")
        return ready

    async def embed_rebuilt(self, chats: list[str]) -> int:
        """Vectors for memories a rebuild read back from MEMORY.md, after the bot is up: one
        batch at a time, so a turn's recall waits for one batch at most (keyword recall
        works meanwhile). On a Pi, embedding thousands of memories takes minutes."""
        done = 0
        for chat_id in chats:
            try:
                while (added := await self.store.embed_missing(chat_id, EMBED_BATCH)):
                    done += added
            except Exception:   # the first use of the chat's index tries again
                log.exception("embedding the rebuilt memories of chat %s failed", chat_id)
        if done:
            log.info("embedded %d memories rebuilt from MEMORY.md", done)
        return done

    async def check(self) -> None:
        """Start-up cross-check: the tape index caught up (a replaced or lost tape indexed
        again), then each MEMORY.md against the database, a mismatch logged with its fix."""
        if self.tape_index is not None:
            try:
                added = await self.tape_index.sync_all()
            except Exception:   # only /search is slower until the next catch-up
                log.exception("catching up the tape index at start failed")
                added = {}
            if any(added.values()):
                log.info("tape index: %d messages indexed in %d chats",
                         sum(added.values()), sum(1 for n in added.values() if n))
        if self.db_path is not None and self.db_path.exists():
            data_dir = self.db_path.parent
            try:
                mismatches = await asyncio.to_thread(cross_check, self.db_path, data_dir)
            except Exception:
                log.exception("the start-up MEMORY.md cross-check failed")
                mismatches = []
            for line in mismatches:
                log.warning("%s; open MEMORY.md or /memory in that chat to see which side is "
                            "right (an edit of the file is merged into the database)", line)

    async def stop(self) -> None:
        """Stop background learning (what it cut stays pending), keep what open sessions
        have not learned for the next start, stop the watcher (before sessions are saved)."""
        for task in (self._embedding, self._catch_up):
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        if self.translator is not None:
            await self.translator.close()
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


def _redaction_status(redactor: Redactor) -> Callable[[str, Any], Awaitable[str | None]]:
    """A /status line once the person had something erased from the conversation."""

    async def provide(chat_id: str, session: Any) -> str | None:
        done, messages = await redactor.count(chat_id)
        if not done:
            return None
        return msg.REDACTIONS_COUNT.format(count=msg.format_number(done),
                                           messages=msg.count_of(messages, "MESSAGES"))

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
    timezone: Callable[[str], Awaitable[ZoneInfo]] | None = None,
) -> MemoryRuntime:
    """Build the lifecycle parts and hook them into the app; call `start()` when running.

    `timezone` gives a chat's zone, in which /search resolves "ayer" or "last week"."""
    mem = settings.memory
    switch = MemorySwitch(store)
    if timezone is None:
        timezone = _configured_zone(settings.timezone)
    journal = Journal(settings.data_dir, settings.timezone, clock=clock, llm=llm)
    sync = _markdown_sync(settings, store, notify, assistant)
    lifecycle = _lifecycle(settings, llm, store, journal, sync, switch, context, sessions, clock)
    tape_index = TapeIndex(settings.data_dir, store.tape_db)
    redactor = Redactor(settings.data_dir, store=store, lifecycle=lifecycle, sessions=sessions,
                        context=context, tape_index=tape_index)
    redact = RedactCommand(redactor)
    commands = MemoryCommands(settings.data_dir, store=store, lifecycle=lifecycle,
                              journal=journal, sessions=sessions, stop_sandbox=stop_sandbox,
                              switch=switch, tape_index=tape_index, timezone=timezone,
                              clock=clock, redact=redact)
    if context is not None:
        _wire_context(context, settings, lifecycle, journal, switch, timezone)
    if sessions is not None:
        sessions.events.subscribe("ended", lifecycle.on_session_ended)
    if assistant is not None:
        _wire_assistant(assistant, commands, redact, sync, redactor)
    await _tell_recovery(store, notify, assistant)
    if tools is not None:
        for tool in commands.tools():
            tools.register(tool)
    if scheduler is not None:
        _add_jobs(scheduler, settings, lifecycle)
    db_path = getattr(store, "db_path", None)
    translator = MemoryTranslator.of(store, mem)
    if translator is not None:
        store.written.append(translator.wake)
    return MemoryRuntime(lifecycle, commands, journal, sync, mem.watch_memory_md, tape_index,
                         Path(db_path) if db_path is not None else None, redactor, store,
                         mem.embedding_preload, translator)


def _configured_zone(name: str) -> Callable[[str], Awaitable[ZoneInfo]]:
    """Every chat in the configured zone (when the app gives no per-chat one)."""
    configured = ZoneInfo(name)

    async def timezone(chat_id: str) -> ZoneInfo:
        return configured

    return timezone


def _markdown_sync(settings: Settings, store: Any, notify: Notice | None,
                   assistant: Any) -> MarkdownSync:
    """MEMORY.md kept in step with the store, its notices in the chat's language."""
    mem = settings.memory
    return MarkdownSync(settings.data_dir, store, on_notice=notify,
                        language_of=assistant.chat_language if assistant is not None else None,
                        confirm_forget_count=mem.md_confirm_forget_count,
                        confirm_forget_share=mem.md_confirm_forget_share)


def _wire_assistant(assistant: Any, commands: MemoryCommands, redact: RedactCommand,
                    sync: MarkdownSync, redactor: Redactor) -> None:
    """The memory commands and `/redact`, and their `/status` lines."""
    commands.register(assistant)
    redact.register(assistant)
    assistant.add_status_provider(_markdown_status(sync))
    assistant.add_status_provider(commands.switch_status)
    assistant.add_status_provider(_redaction_status(redactor))


def _lifecycle(settings: Settings, llm: Any, store: Any, journal: Journal, sync: MarkdownSync,
               switch: MemorySwitch, context: Any, sessions: Any,
               clock: Callable[[], datetime]) -> MemoryLifecycle:
    """The learning side: extraction and consolidation around the store."""
    # "auto" names no language: memories then default to Rumi's reference one
    language = settings.agent.language
    extractor = Extractor(llm, language="es" if language == "auto" else language)
    consolidator = Consolidator(store, llm, neighbours=store_neighbours(store))
    return MemoryLifecycle(
        settings.data_dir, store=store, extractor=extractor, consolidator=consolidator,
        journal=journal, sync=sync, context=context, sessions=sessions,
        optimize_threshold=settings.context.optimize_threshold, clock=clock, switch=switch,
    )


def _wire_context(context: Any, settings: Settings, lifecycle: MemoryLifecycle,
                  journal: Journal, switch: MemorySwitch,
                  timezone: Callable[[str], Awaitable[ZoneInfo]]) -> None:
    """Memories saved before a compaction; daily logs and memories in every prompt."""
    context.before_compaction.append(lifecycle.before_compaction)
    budget = settings.context.section_budgets.get("daily_logs", 1_500)
    counter = getattr(getattr(context, "tokens", None), "count", None)
    context.recall = DailyLogRecall(context.recall, journal, budget, counter, switch, timezone)


async def _tell_recovery(store: Any, notify: Notice | None, assistant: Any) -> None:
    """Each chat whose memories a start-up repair rebuilt is told (queued until a channel
    is up)."""
    recovery = getattr(store, "recovery", None)
    if recovery is not None and notify is not None:
        language_of = assistant.chat_language if assistant is not None else None
        for chat_id, text in notices(recovery, language_of):   # queued until a channel is up
            await notify(chat_id, text)


def _add_jobs(scheduler: Any, settings: Settings, lifecycle: MemoryLifecycle) -> None:
    """The periodic jobs: flush under pressure, consolidate, purge, roll the daily log over,
    retry what failed, and the daily backup when kept."""
    mem = settings.memory
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
        scheduler.add_interval_job("memory.backup", daily_backup(settings), minutes=24 * 60)

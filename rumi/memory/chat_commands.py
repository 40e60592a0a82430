"""The chat-wide memory commands: /clear /reset /export /import /memory /memorymd.

They act through the `MemoryCommands` that owns them (`core`): its store, lifecycle and
sessions, read at call time, so what install wires later is what they use.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any, Protocol

from rumi import messages as msg
from rumi.base.commands import CommandRequest
from rumi.base.replies import Reply, ReplyDocument
from rumi.memory.archive.chat_archive import export_chat, import_archive
from rumi.memory.archive.safety import ArchiveRejected
from rumi.memory.lines import memory_line
from rumi.memory.store.models import MemoryInputError
from rumi.paths import ChatPaths

log = logging.getLogger(__name__)

MD_YES = frozenset({"si", "sí", "s", "y", "yes"})
MD_NO = frozenset({"no", "n"})


class CommandsCore(Protocol):
    """What these commands use of `MemoryCommands`."""

    data_dir: Path
    store: Any
    lifecycle: Any
    sessions: Any
    stop_sandbox: Any
    switch: Any
    redact: Any

    async def enabled(self, chat_id: str) -> bool: ...

    async def after_change(self, chat_id: str) -> None: ...


class ChatCommands:
    """Handlers for the commands that act on the whole chat's memory or conversation."""

    def __init__(self, core: CommandsCore) -> None:
        self.core = core

    async def cmd_clear(self, request: CommandRequest) -> Reply:
        assert request.session is not None
        snapshot, result, removed = await self.core.lifecycle.clear(request.session)
        if self.core.sessions is not None:
            from rumi.sessions.events import SessionEvent

            await self.core.sessions.emit(SessionEvent("cleared", request.chat_id, request.session,
                                                  reason="clear", data={"removed": removed}))
        parts = [msg.CLEARED.format(count=msg.count_of(len(removed), "ITEMS"))]
        if snapshot is not None:
            parts.append(msg.CLEARED_SNAPSHOT.format(name=snapshot.name))
        if result.saved:
            parts.append(msg.CLEARED_LEARNED.format(
                things=msg.count_of(result.saved, "NEW_THINGS")))
        if result.pending:
            parts.append(msg.CLEARED_PENDING)
        parts.append(msg.CLEARED_MEMORY_INTACT)
        return Reply(" ".join(parts), markdown=False)

    async def cmd_reset(self, request: CommandRequest) -> Reply:
        """Learn, end the session (fires `reset`/`ended`), stop the sandbox, start fresh."""
        chat_id = request.chat_id
        self.core.sessions.stop(chat_id)
        session = await self.core.sessions.acquire(chat_id, wait=True)
        try:
            result = await self.core.lifecycle.learn(chat_id, session.items, reason="reset",
                                                session=session)
            await self.core.sessions.end(chat_id, "reset")
        finally:
            await self.core.sessions.release(chat_id, save=False)
        if self.core.stop_sandbox is not None:
            try:
                await self.core.stop_sandbox(chat_id)
            except Exception:
                log.exception("stopping the sandbox of chat %s failed", chat_id)
        text = msg.RESET_FRESH
        if result.saved:
            text += msg.RESET_LEARNED.format(things=msg.count_of(result.saved, "THINGS"))
        return Reply(text + msg.RESET_MEMORY_KEPT, markdown=False)

    async def cmd_export(self, request: CommandRequest) -> Reply:
        await self.core.lifecycle.write_markdown(request.chat_id)
        name, data = await export_chat(self.core.data_dir, request.chat_id, self.core.store)
        return Reply(msg.EXPORT_READY, document=ReplyDocument(name, data, caption=name),
                     markdown=False)

    async def cmd_import(self, request: CommandRequest) -> Reply:
        if request.attachment is None:
            return Reply(msg.IMPORT_USAGE, markdown=False)
        try:
            report = await import_archive(self.core.data_dir, request.chat_id,
                                          request.attachment.data, self.core.store)
        except ArchiveRejected as exc:
            return Reply(msg.IMPORT_REJECTED.format(reason=exc), markdown=False, is_error=True)
        except MemoryInputError as exc:
            return Reply(msg.IMPORT_REJECTED.format(reason=exc), markdown=False, is_error=True)
        await self.core.after_change(request.chat_id)
        text = msg.IMPORTED.format(added=report.memories_added,
                                   written=len(report.files_written),
                                   merged=len(report.files_merged))
        if report.memories_forgotten:
            skipped = report.memories_forgotten
            text += (msg.IMPORT_SKIPPED_FORGOTTEN_ONE if skipped == 1
                     else msg.IMPORT_SKIPPED_FORGOTTEN.format(count=msg.format_number(skipped)))
        if report.files_kept:
            text += msg.IMPORT_KEPT.format(files=", ".join(report.files_kept))
        if report.memory_errors:
            shown = "; ".join(msg.IMPORT_ERROR_LINE.format(line=n, reason=why)
                              for n, why in report.memory_errors[:3])
            more = "…" if len(report.memory_errors) > 3 else ""
            text += msg.IMPORT_INVALID.format(count=len(report.memory_errors),
                                              shown=shown + more)
        return Reply(text, markdown=False)

    async def cmd_memory_switch(self, request: CommandRequest) -> Reply:
        """`/memory off|on`: in a group only an admin may, as it decides for everyone."""
        choice = request.args.strip().casefold()
        if choice not in ("on", "off") or self.core.switch is None:
            return Reply(msg.MEMORY_SWITCH_USAGE, markdown=False)
        if not await request.is_admin():
            return Reply(msg.MEMORY_SWITCH_ADMIN_ONLY, markdown=False)
        on = choice == "on"
        changed = await self.core.switch.set(request.chat_id, on, by=str(request.user_id))
        if on:
            return Reply(msg.MEMORY_ON_DONE if changed else msg.MEMORY_ALREADY_ON,
                         markdown=False)
        return Reply(msg.MEMORY_OFF_DONE if changed else msg.MEMORY_ALREADY_OFF, markdown=False)

    async def cmd_memory(self, request: CommandRequest) -> Reply:
        chat_id = request.chat_id
        if request.args.strip():
            return await self.cmd_memory_switch(request)
        stats = await self.core.store.stats(chat_id)
        by_type = stats.get("by_type", {})
        lines = [msg.MEMORY_ACTIVE.format(count=stats.get("active", 0)),
                 msg.MEMORY_STATE_ON if await self.core.enabled(chat_id) else msg.MEMORY_STATE_OFF]
        if by_type:
            labels = msg.MEMORY_TYPE_LABELS
            lines.append(", ".join(f"{labels.get(t, t)}: {n}"
                                   for t, n in sorted(by_type.items())))
        recent = sorted(await self.core.store.list(chat_id, limit=200),
                        key=lambda m: (m.created_at, m.id), reverse=True)[:5]
        if recent:
            lines.append(msg.MEMORY_RECENT)
            lines += [f"- {m.created_at:%Y-%m-%d} {memory_line(m)}" for m in recent]
        md = ChatPaths(self.core.data_dir, chat_id).memory_md
        size = await asyncio.to_thread(lambda: md.stat().st_size if md.exists() else None)
        lines.append(msg.MEMORY_MD_SIZE.format(size=size) if size is not None
                     else msg.MEMORY_MD_MISSING)
        pending = await self.core.lifecycle.pending(chat_id)
        if pending:
            lines.append(msg.MEMORY_PENDING.format(count=len(pending)))
        if self.core.lifecycle.sync is not None:
            lines += await self.core.lifecycle.sync.status_lines(chat_id)
        if self.core.redact is not None:
            done, messages = await self.core.redact.redactor.count(chat_id)
            lines.append(msg.REDACTIONS_COUNT.format(
                count=msg.format_number(done), messages=msg.count_of(messages, "MESSAGES")))
        return Reply("\n".join(lines), markdown=False)

    async def cmd_memorymd(self, request: CommandRequest) -> Reply:
        """The answer to a held MEMORY.md edit (the buttons send `/memorymd si|no`)."""
        choice = request.args.strip().casefold()
        assert self.core.lifecycle.sync is not None
        if choice in MD_YES:
            text = await self.core.lifecycle.sync.confirm(request.chat_id, True)
        elif choice in MD_NO:
            text = await self.core.lifecycle.sync.confirm(request.chat_id, False)
        else:
            text = msg.MD_CONFIRM_USAGE
        return Reply(text, markdown=False)


def answers_md_question(request: CommandRequest) -> bool:
    """`/memorymd si|no` decides a MEMORY.md change for everyone; the usage line does not."""
    return request.args.strip().casefold() in MD_YES | MD_NO

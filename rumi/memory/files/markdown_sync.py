"""MEMORY.md: the chat's long-term memory as a Markdown file a person can read and fix.

Store → file: `write(chat_id)` renders the active facts/preferences/decisions grouped by type
in a stable order, with a version comment. File → store: a `watchfiles` watcher on the chats
directory (so editors that save by atomic rename are seen) parses the file and applies what the
person changed, by a three-way merge against the write their copy started from
(`markdown_merge`): edited lines update the memory in place (earlier texts kept in
`metadata["edited_from"]`), removed lines are forgotten, new lines (or a copied line repeating
an id) are new explicit memories, and lines Rumi added or changed since the copy are kept.
A sidecar state file keeps the sha256 of what Rumi last wrote (anti-loop guard) and its last
writes. Nothing is ever dropped silently: an edit that would forget many memories at once is
kept aside until the person confirms in chat, a file that cannot be read is moved aside
(`MEMORY.md.rejected-<time>`), and in both cases MEMORY.md is rewritten from the database so
syncing goes on. Memories tagged `metadata["category"] == "self_correction"` are never shown.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rumi import messages as msg
from rumi.fileio import UnreadableFile, atomic_write_bytes
from rumi.memory.files.markdown_disk import is_blank, read_bytes, replace_if_unchanged, sha
from rumi.memory.files.markdown_format import (
    RENDERED_TYPES,
    MalformedMemoryFile,
    is_rendered,
    parse,
    render,
)
from rumi.memory.files.markdown_merge import (
    HISTORY_WRITES,
    digests,
    file_version,
    needs_confirmation,
    snapshot_record,
    snapshots,
)
from rumi.memory.files.markdown_plan import Plan, apply_step, line_of, plan_edit
from rumi.memory.files.markdown_watch import MemoryFileWatcher
from rumi.memory.store.models import Memory, MemoryInputError
from rumi.paths import ChatPaths

log = logging.getLogger(__name__)

STATE_NAME = ".memory_md_state.json"
PENDING_PREFIX = "MEMORY.md.pending-"
REJECTED_PREFIX = "MEMORY.md.rejected-"
CONFIRM_COMMAND = "memorymd"


Notice = Callable[..., Awaitable[Any]]


@dataclass
class SyncReport:
    added: int = 0
    changed: int = 0
    removed: int = 0
    ignored_own_write: bool = False
    error: str | None = None
    rejected: str | None = None   # the name the unreadable file was kept under
    pending: bool = False         # a mass-forget edit waits for the person's confirmation


class MarkdownSync:
    """Two-way sync of every chat's MEMORY.md with the store, plus the watcher task.

    `confirm_forget_count` / `confirm_forget_share`: an edit forgetting more memories than
    that (or all of them) waits for the person's yes. `empty_grace_s`: how long an empty file
    is given to fill up (editors that truncate, then write) before it counts as a save.
    """

    def __init__(
        self,
        data_dir: Path,
        store: Any,
        *,
        on_notice: Notice | None = None,
        debounce_ms: int = 400,
        force_polling: bool | None = None,
        rescan_ms: int = 30_000,
        confirm_forget_count: int = 10,
        confirm_forget_share: float = 0.2,
        empty_grace_s: float = 1.5,
        language_of: Callable[[str], str] | None = None,
    ) -> None:
        self.data_dir = Path(data_dir)
        self.language_of = language_of   # chat id -> the language of its notices
        self.store = store
        self.on_notice = on_notice
        self.debounce_ms = debounce_ms
        self.force_polling = force_polling
        self.rescan_ms = rescan_ms
        self.confirm_forget_count = confirm_forget_count
        self.confirm_forget_share = confirm_forget_share
        self.empty_grace_s = empty_grace_s
        self.problems: dict[str, str] = {}
        self.applied_edits = 0
        self.ignored_own_writes = 0
        self._locks: dict[str, asyncio.Lock] = {}
        self.watcher = MemoryFileWatcher(self)

    def _lock(self, chat_id: str) -> asyncio.Lock:
        return self._locks.setdefault(chat_id, asyncio.Lock())

    def _state_path(self, chat_id: str) -> Path:
        return ChatPaths(self.data_dir, chat_id).memory_dir / STATE_NAME

    async def _read_state(self, chat_id: str) -> dict[str, Any]:
        path = self._state_path(chat_id)
        try:
            raw = await asyncio.to_thread(path.read_text, encoding="utf-8")
            data = json.loads(raw)
            return data if isinstance(data, dict) else {}
        except (FileNotFoundError, json.JSONDecodeError):
            return {}

    async def _save_state(self, chat_id: str, state: dict[str, Any]) -> None:
        await asyncio.to_thread(atomic_write_bytes, self._state_path(chat_id),
                                json.dumps(state, ensure_ascii=False).encode("utf-8"))

    async def _rendered_memories(self, chat_id: str) -> list[Memory]:
        memories = await self.store.list(chat_id, types=list(RENDERED_TYPES), limit=10_000)
        return [m for m in memories if is_rendered(m)]

    async def write(self, chat_id: str) -> bool:
        """Store → MEMORY.md. A pending human edit is merged first; one that cannot be
        applied is kept aside (never overwritten unseen) and the file rewritten."""
        async with self._lock(chat_id):
            path = ChatPaths(self.data_dir, chat_id).memory_md
            try:
                current = await asyncio.to_thread(read_bytes, path)
            except UnreadableFile as exc:
                await self._report_problem(chat_id, str(exc))
                return False
            state = await self._read_state(chat_id)
            if current is None:
                self.problems.pop(chat_id, None)  # no file, nothing of the person's to keep
            if current is not None and sha(current) != state.get("sha256"):
                current = await self._settle(path, current)
                if current is not None:
                    await self._apply(chat_id, current, state)
            await self._write_locked(chat_id, state, expect=current)
            return True

    async def _settle(self, path: Path, data: bytes) -> bytes | None:
        """An empty file may be an editor between truncating and writing: look again after
        `empty_grace_s` (rewriting it now would send the editor's bytes to a deleted inode)."""
        if not is_blank(data) or self.empty_grace_s <= 0:
            return data
        await asyncio.sleep(self.empty_grace_s)
        try:
            return await asyncio.to_thread(read_bytes, path)
        except UnreadableFile:
            return None  # swapped for something unreadable meanwhile: left alone

    async def _write_locked(self, chat_id: str, state: dict[str, Any],
                            expect: bytes | None) -> None:
        """Render and write, unless the file no longer holds `expect` (None: no file): then the
        person saved again meanwhile, the watcher brings that newer edit, and overwriting it
        would lose it. `state` is the one the caller read under the chat's lock, still current."""
        memories = await self._rendered_memories(chat_id)
        lines = {m.id: line_of(m) for m in memories}
        records = [r for r in state.get("history", []) if isinstance(r, dict)]
        last = snapshots({"history": records[-1:]})
        version = int(state.get("version", 0) or 0)
        if not last or last[0].lines != digests(lines) or last[0].version != version:
            version += 1
            records = [*records, snapshot_record(version, lines)][-HISTORY_WRITES:]
        data = render(memories, version).encode("utf-8")
        paths = ChatPaths(self.data_dir, chat_id)
        if not await asyncio.to_thread(replace_if_unchanged, paths.memory_md, data, expect):
            log.info("MEMORY.md of chat %s changed again while syncing; not overwriting", chat_id)
            return
        new_state = {k: v for k, v in state.items() if k != "ids"}
        new_state.update(sha256=sha(data), version=version, history=records)
        state.clear()
        state.update(new_state)
        await self._save_state(chat_id, state)
        self.watcher.new_chat(chat_id)

    async def sync_from_file(self, chat_id: str) -> SyncReport:
        """MEMORY.md → store, if the file changed since Rumi last wrote it."""
        if self.language_of is not None:
            msg.set_language(self.language_of(chat_id))
        async with self._lock(chat_id):
            path = ChatPaths(self.data_dir, chat_id).memory_md
            try:
                current = await asyncio.to_thread(read_bytes, path)
            except UnreadableFile as exc:
                return await self._report_problem(chat_id, str(exc))
            if current is None:
                return SyncReport()
            state = await self._read_state(chat_id)
            if sha(current) == state.get("sha256"):
                self.ignored_own_writes += 1
                return SyncReport(ignored_own_write=True)
            current = await self._settle(path, current)
            if current is None:
                return SyncReport()
            report = await self._apply(chat_id, current, state)
            await self._write_locked(chat_id, state, expect=current)
            return report

    async def _apply(self, chat_id: str, data: bytes, state: dict[str, Any], *,
                     confirmed: list[int] | None = None) -> SyncReport:
        """Plan the whole edit, validating every line, then apply it. A file that cannot be
        read is kept aside; one that forgets too much at once waits for a confirmation.
        `confirmed`: the ids the person agreed to forget (exactly those, however many writes
        Rumi made since it asked)."""
        try:
            text = data.decode("utf-8")
            entries = parse(text)
            plan = await plan_edit(self.store, chat_id, entries, state, file_version(text),
                               {m.id: m for m in await self._rendered_memories(chat_id)})
        except UnicodeDecodeError:
            return await self._reject(chat_id, data, state, msg.MD_NOT_UTF8)
        except MalformedMemoryFile as exc:
            return await self._reject(chat_id, data, state, str(exc))
        if confirmed is not None:
            shown = {m.id for m in await self._rendered_memories(chat_id)}
            plan.removed = [i for i in confirmed if i in shown]
        elif needs_confirmation(plan.intent, self.confirm_forget_count,
                                self.confirm_forget_share):
            return await self._hold(chat_id, data, state, plan)
        report = SyncReport()
        for step in plan.steps:
            try:
                if await apply_step(self.store, chat_id, step):
                    report.added += 1
                else:
                    report.changed += 1
            except MemoryInputError as exc:
                # changed under us (e.g. forgotten by a command mid-edit): every step is
                # idempotent and the person's file is kept aside, so nothing is lost
                return await self._reject(chat_id, data, state,
                                          msg.MD_LINE.format(line=step.entry.line,
                                                             reason=exc))
        for memory_id in plan.removed:
            await self.store.forget(chat_id, memory_id=memory_id)
            report.removed += 1
        self.problems.pop(chat_id, None)
        state.pop("rejected", None)
        self.applied_edits += 1
        log.info("MEMORY.md edit in chat %s: +%d ~%d -%d", chat_id, report.added,
                 report.changed, report.removed)
        return report

    async def _keep_aside(self, chat_id: str, prefix: str, data: bytes) -> str:
        """Save the person's file next to MEMORY.md under a new, dated name; returns it."""
        folder = ChatPaths(self.data_dir, chat_id).memory_dir
        stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())

        def save() -> str:
            for n in range(1, 1000):
                name = f"{prefix}{stamp}" + (f"-{n}" if n > 1 else "")
                if not (folder / name).exists():
                    atomic_write_bytes(folder / name, data, sync_dir=True)
                    return name
            raise OSError("too many kept-aside MEMORY.md copies in one second")

        return await asyncio.to_thread(save)

    async def _report_problem(self, chat_id: str, reason: str) -> SyncReport:
        """MEMORY.md is not a file Rumi can read (a FIFO, a device, far too big): nothing of it
        can be kept aside, so it is left alone, and the person is told once per reason."""
        first = self.problems.get(chat_id) != reason
        self.problems[chat_id] = reason
        log.warning("MEMORY.md of chat %s cannot be read: %s", chat_id, reason)
        if first:
            await self._notify(chat_id, msg.MD_UNREADABLE.format(reason=reason))
        return SyncReport(error=reason)

    async def _reject(self, chat_id: str, data: bytes, state: dict[str, Any],
                      reason: str) -> SyncReport:
        """The edit cannot be used: keep it aside, say why and where, let syncing go on."""
        name = await self._keep_aside(chat_id, REJECTED_PREFIX, data)
        self.problems[chat_id] = reason
        state["rejected"] = {"file": name, "reason": reason, "at": time.time()}
        await self._save_state(chat_id, state)
        log.warning("MEMORY.md of chat %s could not be applied (%s); kept as %s",
                    chat_id, reason, name)
        await self._notify(chat_id, msg.MD_REJECTED.format(reason=reason, file=name))
        return SyncReport(error=reason, rejected=name)

    async def _hold(self, chat_id: str, data: bytes, state: dict[str, Any],
                    plan: Plan) -> SyncReport:
        """Too much forgotten at once: keep the edit aside until the person says yes."""
        name = await self._keep_aside(chat_id, PENDING_PREFIX, data)
        count, shown = len(plan.removed), plan.intent.shown
        state["pending"] = {"file": name, "forget": count, "shown": shown, "at": time.time(),
                            "ids": list(plan.removed)}
        await self._save_state(chat_id, state)
        log.warning("MEMORY.md edit in chat %s would forget %d of %d memories; held as %s",
                    chat_id, count, shown, name)
        await self._notify(
            chat_id, msg.MD_CONFIRM_FORGET.format(count=count, shown=shown, file=name),
            buttons=[[(msg.MD_CONFIRM_YES_BUTTON.format(count=count),
                       f"/{CONFIRM_COMMAND} si"),
                      (msg.MD_CONFIRM_NO_BUTTON, f"/{CONFIRM_COMMAND} no")]])
        return SyncReport(pending=True)

    async def confirm(self, chat_id: str, yes: bool) -> str:
        """The person's answer to a held edit; returns the reply (Spanish)."""
        async with self._lock(chat_id):
            state = await self._read_state(chat_id)
            pending = state.get("pending")
            if not isinstance(pending, dict):
                return msg.MD_NOTHING_PENDING
            folder = ChatPaths(self.data_dir, chat_id).memory_dir
            name = str(pending.get("file", ""))
            if not yes:
                state.pop("pending", None)
                await self._save_state(chat_id, state)
                return msg.MD_PENDING_DECLINED.format(file=name)
            path = folder / ChatPaths(self.data_dir, chat_id).memory_md.name
            current = await asyncio.to_thread(read_bytes, path)
            if current is not None and sha(current) != state.get("sha256"):
                return msg.MD_PENDING_FILE_CHANGED
            data = await asyncio.to_thread(read_bytes, folder / name) if name else None
            state.pop("pending", None)
            if data is None:
                await self._save_state(chat_id, state)
                return msg.MD_PENDING_MISSING.format(file=name)
            ids = [i for i in pending.get("ids", []) if isinstance(i, int)]
            report = await self._apply(chat_id, data, state, confirmed=ids)
            await self._write_locked(chat_id, state, expect=current)
            if report.error is not None:
                return msg.MD_PENDING_FAILED.format(reason=report.error)
            await asyncio.to_thread((folder / name).unlink, missing_ok=True)
            return msg.MD_PENDING_APPLIED.format(removed=report.removed, added=report.added,
                                                 changed=report.changed)

    async def adopt(self, chat_id: str, expect: bytes) -> None:
        """After the database was rebuilt from this file: rewrite it with the new ids and
        forget the old write history (its ids named rows of the lost database)."""
        async with self._lock(chat_id):
            old = await self._read_state(chat_id)
            state: dict[str, Any] = {"version": int(old.get("version", 0) or 0)}
            await self._write_locked(chat_id, state, expect=expect)

    async def set_aside(self, chat_id: str, data: bytes, reason: str) -> None:
        """A file that cannot be read back (e.g. while rebuilding): keep it, tell, rewrite."""
        async with self._lock(chat_id):
            state = await self._read_state(chat_id)
            await self._reject(chat_id, data, state, reason)
            await self._write_locked(chat_id, state, expect=data)

    async def status_lines(self, chat_id: str) -> list[str]:
        """What /memory and /status say about MEMORY.md: a held edit, a file kept aside."""
        state = await self._read_state(chat_id)
        lines = []
        pending = state.get("pending")
        if isinstance(pending, dict):
            lines.append(msg.MD_STATUS_PENDING.format(
                count=pending.get("forget", "?"), file=pending.get("file", "?")))
        rejected = state.get("rejected")
        if isinstance(rejected, dict):
            lines.append(msg.MD_STATUS_REJECTED.format(
                reason=rejected.get("reason", "?"), file=rejected.get("file", "?")))
        if isinstance(back := state.get("restored"), dict):   # files/reconcile.py
            lines.append(msg.MD_STATUS_RESTORED.format(**{k: back.get(k, "?") for k in
                                                          ("count", "dropped", "file")}))
        return lines

    async def _notify(self, chat_id: str, text: str,
                      buttons: list[list[tuple[str, str]]] | None = None) -> None:
        if self.on_notice is None:
            return
        try:
            if buttons:
                await self.on_notice(chat_id, text, buttons=buttons)
            else:
                await self.on_notice(chat_id, text)
        except Exception:
            log.exception("could not deliver MEMORY.md notice to chat %s", chat_id)

    # --- watcher (files/markdown_watch.py) -----------------------------------------------

    async def start(self) -> None:
        """Start the watcher, then apply edits made while Rumi was not running."""
        await self.watcher.start()

    async def catch_up(self) -> None:
        """Apply edits made while Rumi was not running."""
        await self.watcher.catch_up()

    async def stop(self) -> None:
        await self.watcher.stop()

__all__ = ["MarkdownSync", "SyncReport"]

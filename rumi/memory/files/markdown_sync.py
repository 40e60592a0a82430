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
import hashlib
import json
import logging
import re
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rumi import messages as msg
from rumi.fileio import UnreadableFile, atomic_write_bytes, read_bounded
from rumi.memory.files.markdown_merge import (
    HISTORY_WRITES,
    Intent,
    Item,
    Line,
    choose_base,
    classify,
    digests,
    file_version,
    needs_confirmation,
    snapshot_record,
    snapshots,
)
from rumi.memory.store.codec import clean_key, clean_text, content_hash
from rumi.memory.store.models import Memory, MemoryInputError, MemorySource, MemoryType, NewMemory
from rumi.paths import ChatPaths, chats_root

log = logging.getLogger(__name__)

SECTIONS: tuple[tuple[MemoryType, str], ...] = (
    (MemoryType.PROFILE, "Perfil"),
    (MemoryType.FACT, "Hechos"),
    (MemoryType.ENTITY, "Personas y cosas"),
    (MemoryType.PREFERENCE, "Preferencias"),
    (MemoryType.DECISION, "Decisiones"),
)
TITLE_TO_TYPE = {title.casefold(): mtype for mtype, title in SECTIONS}
RENDERED_TYPES = tuple(t for t, _ in SECTIONS)
HEADER = """# Memoria de Rumi

> Rumi mantiene este archivo y tú puedes editarlo. Cada línea «- …» es un recuerdo:
> bórrala para olvidarlo, cámbiala para corregirlo o añade una línea nueva (sin [#número],
> o copiando otra y cambiándola) en la sección que corresponda.
> Formato: `- [#id] **clave**: texto` (la clave es opcional).
"""
VERSION_LINE = "<!-- rumi:v{version} · no borres esta línea: así sé desde qué copia editas -->\n"
ITEM = re.compile(r"^[-*]\s+(?:\[#(\d+)\]\s*)?(?:\*\*([^*]+?)\*\*\s*:\s*)?(.*)$")
STATE_NAME = ".memory_md_state.json"
PROBE_NAME = ".rumi-watch-probe"
PENDING_PREFIX = "MEMORY.md.pending-"
REJECTED_PREFIX = "MEMORY.md.rejected-"
CONFIRM_COMMAND = "memorymd"
MAX_FILE_BYTES = 4 * 1024 * 1024  # far above any real MEMORY.md; a bigger one is refused, not read

Notice = Callable[..., Awaitable[Any]]
Entry = Item


class MalformedMemoryFile(ValueError):
    """The person's edit cannot be understood; the message says where (Spanish, user-facing)."""


@dataclass
class SyncReport:
    added: int = 0
    changed: int = 0
    removed: int = 0
    ignored_own_write: bool = False
    error: str | None = None
    rejected: str | None = None   # the name the unreadable file was kept under
    pending: bool = False         # a mass-forget edit waits for the person's confirmation


def is_rendered(memory: Memory) -> bool:
    return (memory.type in RENDERED_TYPES
            and (memory.metadata or {}).get("category") != "self_correction")


def render(memories: Sequence[Memory], version: int | None = None) -> str:
    """Stable Markdown: fixed section order, then by key (keyless last), then by id."""
    out = [HEADER]
    if version is not None:
        out.append(VERSION_LINE.format(version=version))
    for mtype, title in SECTIONS:
        chosen = [m for m in memories if m.type == mtype and is_rendered(m)]
        chosen.sort(key=lambda m: (m.key is None, m.key or "", m.id))
        out.append(f"\n## {title}\n")
        if chosen:
            out.append("\n")
        for memory in chosen:
            text = " ".join(memory.content.split())
            key = f"**{memory.key}**: " if memory.key else ""
            out.append(f"- [#{memory.id}] {key}{text}\n")
    return "".join(out)


def parse(text: str) -> list[Entry]:
    """Read a MEMORY.md back (BOM and CRLF accepted); MalformedMemoryFile names the first line
    that is not understood. Repeated ids are allowed: the three-way merge decides which copy is
    the original."""
    entries: list[Entry] = []
    current: MemoryType | None = None
    for number, raw in enumerate(text.removeprefix("\ufeff").splitlines(), start=1):
        raw = raw.removeprefix("\ufeff")
        line = raw.rstrip()
        stripped = line.strip()
        if not stripped or stripped.startswith(">") or stripped.startswith("<!--"):
            continue
        if line.startswith("# "):
            continue
        if line.startswith("## "):
            title = line[3:].strip().casefold()
            if title not in TITLE_TO_TYPE:
                known = ", ".join(t for _, t in SECTIONS)
                raise MalformedMemoryFile(msg.MD_LINE.format(
                    line=number, reason=msg.MD_UNKNOWN_SECTION.format(title=line[3:].strip(),
                                                                      known=known)))
            current = TITLE_TO_TYPE[title]
            continue
        if raw.startswith(("  ", "\t")) and entries and not stripped.startswith(("-", "*")):
            last = entries[-1]
            entries[-1] = Entry(last.type, f"{last.content} {stripped}", last.key,
                                last.memory_id, last.line)
            continue
        match = ITEM.match(stripped)
        if match is None:
            raise MalformedMemoryFile(msg.MD_LINE.format(line=number,
                                                         reason=msg.MD_NOT_AN_ITEM))
        if current is None:
            raise MalformedMemoryFile(msg.MD_LINE.format(line=number,
                                                         reason=msg.MD_OUTSIDE_SECTION))
        raw_id, key, content = match.groups()
        content = content.strip()
        if not content:
            raise MalformedMemoryFile(msg.MD_LINE.format(line=number,
                                                         reason=msg.MD_EMPTY_ITEM))
        memory_id = int(raw_id) if raw_id else None
        key = "_".join(key.strip().split()) if key and key.strip() else None
        entries.append(Entry(current, content, key, memory_id, number))
    return entries


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _blank(data: bytes | None) -> bool:
    return data is not None and not data.removeprefix(b"\xef\xbb\xbf").strip()


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
        self._task: asyncio.Task[None] | None = None
        self._stop: asyncio.Event | None = None
        self._ready: asyncio.Event = asyncio.Event()
        self._restart: asyncio.Event = asyncio.Event()
        self._watched: set[str] = set()
        self._confirm: asyncio.Task[None] | None = None

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
                current = await asyncio.to_thread(_read_bytes, path)
            except UnreadableFile as exc:
                await self._report_problem(chat_id, str(exc))
                return False
            state = await self._read_state(chat_id)
            if current is None:
                self.problems.pop(chat_id, None)  # no file, nothing of the person's to keep
            if current is not None and _sha(current) != state.get("sha256"):
                current = await self._settle(path, current)
                if current is not None:
                    await self._apply(chat_id, current, state)
            await self._write_locked(chat_id, state, expect=current)
            return True

    async def _settle(self, path: Path, data: bytes) -> bytes | None:
        """An empty file may be an editor between truncating and writing: look again after
        `empty_grace_s` (rewriting it now would send the editor's bytes to a deleted inode)."""
        if not _blank(data) or self.empty_grace_s <= 0:
            return data
        await asyncio.sleep(self.empty_grace_s)
        try:
            return await asyncio.to_thread(_read_bytes, path)
        except UnreadableFile:
            return None  # swapped for something unreadable meanwhile: left alone

    async def _write_locked(self, chat_id: str, state: dict[str, Any],
                            expect: bytes | None) -> None:
        """Render and write, unless the file no longer holds `expect` (None: no file): then the
        person saved again meanwhile, the watcher brings that newer edit, and overwriting it
        would lose it. `state` is the one the caller read under the chat's lock, still current."""
        memories = await self._rendered_memories(chat_id)
        lines = {m.id: _line_of(m) for m in memories}
        records = [r for r in state.get("history", []) if isinstance(r, dict)]
        last = snapshots({"history": records[-1:]})
        version = int(state.get("version", 0) or 0)
        if not last or last[0].lines != digests(lines) or last[0].version != version:
            version += 1
            records = [*records, snapshot_record(version, lines)][-HISTORY_WRITES:]
        data = render(memories, version).encode("utf-8")
        paths = ChatPaths(self.data_dir, chat_id)
        if not await asyncio.to_thread(_replace_if_unchanged, paths.memory_md, data, expect):
            log.info("MEMORY.md of chat %s changed again while syncing; not overwriting", chat_id)
            return
        new_state = {k: v for k, v in state.items() if k != "ids"}
        new_state.update(sha256=_sha(data), version=version, history=records)
        state.clear()
        state.update(new_state)
        await self._save_state(chat_id, state)
        if self._task is not None and chat_id not in self._watched:
            self._restart.set()

    async def sync_from_file(self, chat_id: str) -> SyncReport:
        """MEMORY.md → store, if the file changed since Rumi last wrote it."""
        if self.language_of is not None:
            msg.set_language(self.language_of(chat_id))
        async with self._lock(chat_id):
            path = ChatPaths(self.data_dir, chat_id).memory_md
            try:
                current = await asyncio.to_thread(_read_bytes, path)
            except UnreadableFile as exc:
                return await self._report_problem(chat_id, str(exc))
            if current is None:
                return SyncReport()
            state = await self._read_state(chat_id)
            if _sha(current) == state.get("sha256"):
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
            plan = await self._plan(chat_id, entries, state, file_version(text))
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
                await self._apply_step(chat_id, step, report)
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

    async def _plan(self, chat_id: str, entries: Sequence[Entry], state: dict[str, Any],
                    version: int | None) -> _Plan:
        """Decide what every line means before touching the store.

        A line whose text fails the store's checks (too long, binary, bad key) is an error;
        the rest is the three-way merge of `markdown_merge.classify`; an edit that makes a
        memory equal to another active one merges into that one.
        """
        max_chars = int(getattr(getattr(self.store, "settings", None), "max_content_chars",
                                20_000))
        items: list[Item] = []
        for entry in entries:
            try:
                content = clean_text(entry.content, "el recuerdo", max_chars)
                key = clean_key(entry.key)
            except MemoryInputError as exc:
                raise MalformedMemoryFile(msg.MD_LINE.format(line=entry.line,
                                                             reason=exc)) from exc
            assert content is not None
            items.append(Item(entry.type, content, key, entry.memory_id, entry.line))
        known = {m.id: m for m in await self._rendered_memories(chat_id)}
        current = {i: _line_of(m) for i, m in known.items()}
        in_file = {i.memory_id for i in items if i.memory_id is not None}
        base, removable = choose_base(snapshots(state), version, in_file)
        base_lines = base.lines if base is not None and base.lines is not None else {}
        earlier: dict[int, Line] = {}
        for memory_id in sorted(in_file - set(current) - set(base_lines)):
            gone = await self.store.get(chat_id, memory_id)
            if gone is not None:
                earlier[memory_id] = _line_of(gone)
        intent = classify(items, base, current, earlier, removable)
        active = await self.store.list(chat_id, limit=100_000)
        taken = {m.content_hash: m.id for m in active}
        plan = _Plan(intent=intent, removed=list(intent.removed))
        for item in intent.adds:
            taken.setdefault(content_hash(item.content, item.key), -item.line)
            plan.steps.append(_Step("add", item))
        for item in intent.updates:
            assert item.memory_id is not None
            old = known[item.memory_id]
            digest = content_hash(item.content, item.key)
            twin = taken.get(digest)
            if twin is not None and twin != old.id:
                plan.steps.append(_Step("merge", item, old))
                continue
            taken.pop(old.content_hash, None)
            taken[digest] = old.id
            plan.steps.append(_Step("update", item, old))
        return plan

    async def _apply_step(self, chat_id: str, step: _Step, report: SyncReport) -> None:
        entry, old = step.entry, step.old
        if step.action == "add":
            await self.store.save(chat_id, NewMemory(
                content=entry.content, type=entry.type, key=entry.key,
                source=MemorySource.EXPLICIT, importance=0.8, confidence=1.0,
                metadata={"origin": "MEMORY.md"}))
            report.added += 1
            return
        assert old is not None
        if step.action == "merge":   # now says exactly what another memory says
            await self.store.forget(chat_id, memory_id=old.id)
            report.changed += 1
            return
        history = [*(old.metadata or {}).get("edited_from", []), old.content][-5:]
        await self.store.update(
            chat_id, old.id, content=entry.content, key=entry.key, type=entry.type,
            importance=max(old.importance, 0.7), confidence=1.0,
            metadata={**(old.metadata or {}), "origin": "MEMORY.md", "edited_from": history})
        report.changed += 1

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
                    plan: _Plan) -> SyncReport:
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
            current = await asyncio.to_thread(_read_bytes, path)
            if current is not None and _sha(current) != state.get("sha256"):
                return msg.MD_PENDING_FILE_CHANGED
            data = await asyncio.to_thread(_read_bytes, folder / name) if name else None
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

    # --- watcher -------------------------------------------------------------------------

    async def start(self) -> None:
        """Start the watcher (directory watches, so atomic-rename saves are seen)."""
        if self._task is not None:
            return
        root = chats_root(self.data_dir)
        await asyncio.to_thread(root.mkdir, parents=True, exist_ok=True)
        self._stop = asyncio.Event()
        self._ready = asyncio.Event()
        self._task = asyncio.create_task(self._watch(root), name="memory-md-watcher")
        await self._wait_until_watching(root)
        await self.catch_up()

    async def _wait_until_watching(self, root: Path) -> None:
        """Touch a probe file until the watcher reports it, so no edit after start is missed."""
        probe = root / PROBE_NAME
        for _ in range(100):
            await asyncio.to_thread(probe.write_text, "probe", encoding="utf-8")
            try:
                await asyncio.wait_for(asyncio.shield(self._ready.wait()), timeout=0.2)
                break
            except TimeoutError:
                continue
        else:
            log.warning("MEMORY.md watcher did not confirm it is running")
        await asyncio.to_thread(probe.unlink, missing_ok=True)

    async def catch_up(self) -> None:
        """Apply edits made while Rumi was not running."""
        root = chats_root(self.data_dir)
        names = await asyncio.to_thread(
            lambda: [p.parent.parent.name for p in root.glob("*/memory/MEMORY.md")])
        for chat_id in names:
            try:
                await self.sync_from_file(chat_id)
            except Exception:
                log.exception("MEMORY.md catch-up failed for chat %s", chat_id)

    async def stop(self) -> None:
        if self._task is None:
            return
        assert self._stop is not None
        self._stop.set()
        self._restart.set()
        if self._confirm is not None:
            self._confirm.cancel()
            await asyncio.gather(self._confirm, return_exceptions=True)
            self._confirm = None
        try:
            await asyncio.wait_for(self._task, timeout=5)
        except (TimeoutError, asyncio.CancelledError):
            self._task.cancel()
        self._task = None

    async def _confirm_and_catch_up(self, root: Path) -> None:
        """After a restart: once the new watch is confirmed live, apply what changed meanwhile."""
        await self._wait_until_watching(root)
        await self.catch_up()

    def _memory_dirs(self, root: Path) -> list[Path]:
        return sorted(p for p in root.glob("*/memory") if p.is_dir() and not p.is_symlink())

    async def _watch(self, root: Path) -> None:
        """Watch `chats/` and each `chats/<id>/memory/` non-recursively.

        Only those directories, so a chat's workspace (maybe thousands of files) never costs
        inotify watches; a chat that gets its first MEMORY.md (or any new memory/ directory,
        found by a rescan every `rescan_ms`) triggers a restart that adds it.
        """
        from watchfiles import awatch

        def only_memory_md(_change: Any, path: str) -> bool:
            return Path(path).name in ("MEMORY.md", PROBE_NAME)

        assert self._stop is not None
        first = True
        while not self._stop.is_set():
            self._restart = asyncio.Event()
            dirs = await asyncio.to_thread(self._memory_dirs, root)
            self._watched = {d.parent.name for d in dirs}
            if not first:
                self._ready = asyncio.Event()
                self._confirm = asyncio.create_task(self._confirm_and_catch_up(root))
            first = False
            try:
                async for changes in awatch(
                    root, *dirs, watch_filter=only_memory_md, stop_event=self._restart,
                    debounce=self.debounce_ms, step=50, force_polling=self.force_polling,
                    recursive=False, rust_timeout=self.rescan_ms, yield_on_timeout=True,
                ):
                    if not changes:
                        now = await asyncio.to_thread(self._memory_dirs, root)
                        if {d.parent.name for d in now} != self._watched:
                            self._restart.set()  # a chat got a memory/ dir: watch it too
                        continue
                    if any(Path(p).name == PROBE_NAME for _, p in changes):
                        self._ready.set()
                    chats = {Path(p).parent.parent.name for _, p in changes
                             if Path(p).name == "MEMORY.md"}
                    for chat_id in sorted(chats):
                        await self._handle_change(chat_id)
            except Exception:
                log.exception("MEMORY.md watcher failed; restarting in 2s")
                try:
                    await asyncio.wait_for(self._stop.wait(), timeout=2)
                except TimeoutError:
                    continue

    async def _handle_change(self, chat_id: str) -> None:
        try:
            ChatPaths(self.data_dir, chat_id)
        except ValueError:
            return
        try:
            await self.sync_from_file(chat_id)
        except Exception:
            log.exception("applying MEMORY.md edit failed for chat %s", chat_id)


@dataclass(frozen=True)
class _Step:
    action: str          # "add" | "update" | "merge"
    entry: Item
    old: Memory | None = None


@dataclass
class _Plan:
    intent: Intent
    steps: list[_Step] = field(default_factory=list)
    removed: list[int] = field(default_factory=list)


def _line_of(memory: Memory) -> Line:
    """What a memory looks like as a MEMORY.md line (content, key, type) for comparisons."""
    return " ".join(memory.content.split()), memory.key, memory.type


def _read_bytes(path: Path) -> bytes | None:
    """The file's bytes, None if absent; UnreadableFile for a FIFO/device or an oversize file
    (a FIFO used to hang /remember, and Ctrl-C with it)."""
    try:
        data, size = read_bounded(path, MAX_FILE_BYTES)
    except FileNotFoundError:
        return None
    if size > MAX_FILE_BYTES:
        raise UnreadableFile(msg.MD_TOO_LARGE.format(size=size, max=MAX_FILE_BYTES))
    return data


def _replace_if_unchanged(path: Path, data: bytes, expect: bytes | None) -> bool:
    """Atomically replace `path` with `data` only if it still holds `expect` (None: absent).

    Not a write after a separate check: the new file is written and fsynced first, so a save
    can only slip in between one read and one rename, never during an fsync or an event-loop
    turn (a save landing there used to be overwritten and lost). `path` is never absent, so
    readers (export, editors) always find a whole file.
    """
    def unchanged() -> bool:
        try:
            return _read_bytes(path) == expect
        except UnreadableFile:
            return False

    return atomic_write_bytes(path, data, only_if=unchanged)


__all__ = ["Entry", "MalformedMemoryFile", "MarkdownSync", "SyncReport", "parse", "render"]

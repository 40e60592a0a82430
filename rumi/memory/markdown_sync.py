"""MEMORY.md: the chat's long-term memory as a Markdown file a person can read and fix.

Store → file: `write(chat_id)` renders the active facts/preferences/decisions grouped by type
in a stable order. File → store: a `watchfiles` watcher on the chats directory (so editors
that save by atomic rename are seen) parses the file and applies the difference: edited lines
update the memory in place (same id, earlier texts kept in `metadata["edited_from"]`, so a
file that still shows old ids stays valid), removed lines are forgotten, lines without an id are
new explicit memories. A sidecar state file keeps the sha256 of what Rumi last wrote and the
ids of its last writes: a change whose hash equals it is our own write (anti-loop guard), and
only ids Rumi wrote can be "removed". A malformed edit is reported and the file is not
overwritten until it is fixed.
Memories tagged `metadata["category"] == "self_correction"` are never written to the file.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rumi.fileio import UnreadableFile, atomic_write_bytes, read_bounded
from rumi.memory.codec import clean_key, clean_text, content_hash
from rumi.memory.models import Memory, MemoryInputError, MemorySource, MemoryType, NewMemory
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
> bórrala para olvidarlo, cámbiala para corregirlo o añade una línea nueva (sin [#número])
> en la sección que corresponda. Formato: `- [#id] **clave**: texto` (la clave es opcional).
"""
ITEM = re.compile(r"^[-*]\s+(?:\[#(\d+)\]\s*)?(?:\*\*([^*]+?)\*\*\s*:\s*)?(.*)$")
STATE_NAME = ".memory_md_state.json"
PROBE_NAME = ".rumi-watch-probe"
MAX_FILE_BYTES = 4 * 1024 * 1024  # far above any real MEMORY.md; a bigger one is refused, not read
HISTORY_WRITES = 10   # id sets of Rumi's last writes, to know which one a stale edit is based on

Notice = Callable[[str, str], Awaitable[None]]


class MalformedMemoryFile(ValueError):
    """The person's edit cannot be understood; the message says where (Spanish, user-facing)."""


@dataclass(frozen=True)
class Entry:
    type: MemoryType
    content: str
    key: str | None = None
    memory_id: int | None = None
    line: int = 0


@dataclass
class SyncReport:
    added: int = 0
    changed: int = 0
    removed: int = 0
    ignored_own_write: bool = False
    error: str | None = None


def is_rendered(memory: Memory) -> bool:
    return (memory.type in RENDERED_TYPES
            and (memory.metadata or {}).get("category") != "self_correction")


def render(memories: Sequence[Memory]) -> str:
    """Stable Markdown: fixed section order, then by key (keyless last), then by id."""
    out = [HEADER]
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
    """Read a MEMORY.md back; MalformedMemoryFile names the first line that is not understood."""
    entries: list[Entry] = []
    current: MemoryType | None = None
    seen: set[int] = set()
    for number, raw in enumerate(text.splitlines(), start=1):
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
                raise MalformedMemoryFile(
                    f"línea {number}: sección desconocida «{line[3:].strip()}» (usa: {known})")
            current = TITLE_TO_TYPE[title]
            continue
        if raw.startswith(("  ", "\t")) and entries and not stripped.startswith(("-", "*")):
            last = entries[-1]
            entries[-1] = Entry(last.type, f"{last.content} {stripped}", last.key,
                                last.memory_id, last.line)
            continue
        match = ITEM.match(stripped)
        if match is None:
            raise MalformedMemoryFile(
                f"línea {number}: no es un recuerdo; cada recuerdo empieza con «- »")
        if current is None:
            raise MalformedMemoryFile(
                f"línea {number}: el recuerdo está fuera de una sección «## …»")
        raw_id, key, content = match.groups()
        content = content.strip()
        if not content:
            raise MalformedMemoryFile(f"línea {number}: el recuerdo está vacío")
        memory_id = int(raw_id) if raw_id else None
        if memory_id is not None:
            if memory_id in seen:
                raise MalformedMemoryFile(f"línea {number}: el número #{memory_id} está repetido")
            seen.add(memory_id)
        key = "_".join(key.strip().split()) if key and key.strip() else None
        entries.append(Entry(current, content, key, memory_id, number))
    return entries


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class MarkdownSync:
    """Two-way sync of every chat's MEMORY.md with the store, plus the watcher task."""

    def __init__(
        self,
        data_dir: Path,
        store: Any,
        *,
        on_notice: Notice | None = None,
        debounce_ms: int = 400,
        force_polling: bool | None = None,
        rescan_ms: int = 30_000,
    ) -> None:
        self.data_dir = Path(data_dir)
        self.store = store
        self.on_notice = on_notice
        self.debounce_ms = debounce_ms
        self.force_polling = force_polling
        self.rescan_ms = rescan_ms
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

    async def _rendered_memories(self, chat_id: str) -> list[Memory]:
        memories = await self.store.list(chat_id, types=list(RENDERED_TYPES), limit=10_000)
        return [m for m in memories if is_rendered(m)]

    async def write(self, chat_id: str) -> bool:
        """Store → MEMORY.md. Pending human edits are applied first; a broken file is kept."""
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
                report = await self._apply(chat_id, current, state)
                if report.error:
                    return False
            elif chat_id in self.problems:
                return False
            await self._write_locked(chat_id, state, expect=current)
            return True

    async def _write_locked(self, chat_id: str, state: dict[str, Any],
                            expect: bytes | None) -> None:
        """Render and write, unless the file no longer holds `expect` (None: no file): then the
        person saved again meanwhile, the watcher brings that newer edit, and overwriting it
        would lose it. `state` is the one the caller read under the chat's lock, still current."""
        memories = await self._rendered_memories(chat_id)
        data = render(memories).encode("utf-8")
        paths = ChatPaths(self.data_dir, chat_id)
        if not await asyncio.to_thread(_replace_if_unchanged, paths.memory_md, data, expect):
            log.info("MEMORY.md of chat %s changed again while syncing; not overwriting", chat_id)
            return
        history = _next_history(state, sorted(m.id for m in memories))
        await asyncio.to_thread(atomic_write_bytes, self._state_path(chat_id), json.dumps(
            {"sha256": _sha(data), "history": history}).encode("utf-8"))
        if self._task is not None and chat_id not in self._watched:
            self._restart.set()

    async def sync_from_file(self, chat_id: str) -> SyncReport:
        """MEMORY.md → store, if the file changed since Rumi last wrote it."""
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
                self.problems.pop(chat_id, None)
                self.ignored_own_writes += 1
                return SyncReport(ignored_own_write=True)
            report = await self._apply(chat_id, current, state)
            if report.error is None:
                await self._write_locked(chat_id, state, expect=current)
            return report

    async def _apply(self, chat_id: str, data: bytes, state: dict[str, Any]) -> SyncReport:
        """Plan the whole edit, validating every line, then apply it; a problem anywhere
        applies nothing and is reported naming the line (the file is then left alone)."""
        try:
            entries = parse(data.decode("utf-8"))
            plan = await self._plan(chat_id, entries, state)
        except UnicodeDecodeError:
            return await self._report_problem(chat_id, "el archivo no es texto UTF-8")
        except MalformedMemoryFile as exc:
            return await self._report_problem(chat_id, str(exc))
        report = SyncReport()
        for step in plan.steps:
            try:
                await self._apply_step(chat_id, step, report)
            except MemoryInputError as exc:
                # changed under us (e.g. forgotten by a command mid-edit): re-applying later
                # is harmless, every step is idempotent
                return await self._report_problem(chat_id, f"línea {step.entry.line}: {exc}")
        for memory_id in plan.removed:
            await self.store.forget(chat_id, memory_id=memory_id)
            report.removed += 1
        if chat_id in self.problems:
            del self.problems[chat_id]
            await self._notify(chat_id, "✅ MEMORY.md vuelve a estar bien; cambios aplicados.")
        self.applied_edits += 1
        log.info("MEMORY.md edit in chat %s: +%d ~%d -%d", chat_id, report.added,
                 report.changed, report.removed)
        return report

    async def _plan(self, chat_id: str, entries: Sequence[Entry], state: dict[str, Any]
                    ) -> _Plan:
        """Decide what every line means before touching the store.

        - a line whose text fails the store's checks (too long, binary, bad key) is an error;
        - a line whose id is a memory of this chat that is no longer shown (superseded,
          forgotten or expired while an editor held an older copy of the file) is dropped if
          unchanged, or saved as a new explicit memory if the person changed it — a stale
          buffer must not wedge the sync (ids that never existed are still an error);
        - an edit that makes a memory equal to another active one merges into that one.
        """
        max_chars = int(getattr(getattr(self.store, "settings", None), "max_content_chars",
                                20_000))
        known = {m.id: m for m in await self._rendered_memories(chat_id)}
        active = await self.store.list(chat_id, limit=100_000)
        taken = {m.content_hash: m.id for m in active}
        plan = _Plan()
        in_file: set[int] = set()
        for entry in entries:
            try:
                content = clean_text(entry.content, "el recuerdo", max_chars)
                key = clean_key(entry.key)
            except MemoryInputError as exc:
                raise MalformedMemoryFile(f"línea {entry.line}: {exc}") from exc
            assert content is not None
            entry = Entry(entry.type, content, key, entry.memory_id, entry.line)
            if entry.memory_id is None:
                taken.setdefault(content_hash(entry.content, entry.key), -entry.line)
                plan.steps.append(_Step("add", entry))
                continue
            old = known.get(entry.memory_id)
            if old is None:
                gone = await self.store.get(chat_id, entry.memory_id)
                if gone is None:
                    raise MalformedMemoryFile(
                        f"línea {entry.line}: el recuerdo #{entry.memory_id} no existe; "
                        "quita el número para añadirlo como nuevo")
                if _line_of(gone) != (entry.content, entry.key, entry.type):
                    taken.setdefault(content_hash(entry.content, entry.key), -entry.line)
                    plan.steps.append(_Step("add", entry))
                continue   # unchanged stale line: the memory was replaced or forgotten
            in_file.add(old.id)
            if _line_of(old) == (entry.content, entry.key, entry.type):
                continue
            digest = content_hash(entry.content, entry.key)
            twin = taken.get(digest)
            if twin is not None and twin != old.id:
                plan.steps.append(_Step("merge", entry, old))
                continue
            taken.pop(old.content_hash, None)
            taken[digest] = old.id
            plan.steps.append(_Step("update", entry, old))
        base = _base_ids(state, {e.memory_id for e in entries if e.memory_id is not None})
        plan.removed = [i for i in sorted(base) if i in known and i not in in_file]
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

    async def _report_problem(self, chat_id: str, reason: str) -> SyncReport:
        first = self.problems.get(chat_id) != reason
        self.problems[chat_id] = reason
        log.warning("MEMORY.md of chat %s is malformed: %s", chat_id, reason)
        if first:
            await self._notify(chat_id, (
                f"⚠️ No pude leer tu edición de MEMORY.md ({reason}). "
                "No tocaré el archivo hasta que lo corrijas."))
        return SyncReport(error=reason)

    async def _notify(self, chat_id: str, text: str) -> None:
        if self.on_notice is None:
            return
        try:
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
    entry: Entry
    old: Memory | None = None


@dataclass
class _Plan:
    steps: list[_Step] = field(default_factory=list)
    removed: list[int] = field(default_factory=list)


def _history(state: dict[str, Any]) -> list[list[int]]:
    """The id sets of Rumi's last writes, oldest first. A state file from before `history`
    existed holds only `ids`, the ids of its last write."""
    writes = [h for h in state.get("history", []) if isinstance(h, list)]
    if not writes and isinstance(state.get("ids"), list):
        writes = [state["ids"]]
    return [[i for i in ids if isinstance(i, int)] for ids in writes]


def _next_history(state: dict[str, Any], ids: list[int]) -> list[list[int]]:
    """The history after a write showing `ids`; its last entry is always that write."""
    history = _history(state)
    if not history or history[-1] != ids:
        history = [*history, ids][-HISTORY_WRITES:]
    return history


def _base_ids(state: dict[str, Any], in_file: set[int]) -> set[int]:
    """The ids of the Rumi write this edit started from: the newest one that shows every id
    still in the file. A line is "removed" only if that write showed it; otherwise an editor
    holding an older copy would forget memories Rumi added after the copy was taken."""
    writes = _history(state)
    for ids in reversed(writes):
        if in_file <= set(ids):
            return set(ids)
    return set(writes[-1]) if writes else set()


def _line_of(memory: Memory) -> tuple[str, str | None, MemoryType]:
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
        raise UnreadableFile(f"MEMORY.md ocupa {size:,} bytes; el máximo es {MAX_FILE_BYTES:,}")
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

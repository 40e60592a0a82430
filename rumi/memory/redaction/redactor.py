"""Redaction: removing what was *said*, not only what was learned (docs/memory.md,
"Redaction").

`/forget` erases memories; the words of the conversation stay in the tape, the active context,
daily logs, snapshots and pending extractions. A redaction finds a text in all of them and
replaces it with a tombstone that keeps each message's id, time and role, and erases the
memories that hold it. Every file is replaced atomically (old or new, never half), and a crash
between files is finished on the next start: the intent (the texts, which only that file
holds, and only until the redaction is done) is written first and removed last. What stays is
the record that a redaction happened: which ids, when, never what.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import secrets
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rumi.fileio import atomic_write_bytes, fsync_dir, unused_path
from rumi.memory.files.journal import DAILY_NAME
from rumi.memory.redaction.text import (
    DAILY_PREFIX,
    SNAPSHOT_PREFIX,
    Needles,
    fingerprint,
    forget_known,
    redact_lines,
    redact_record,
    scrub,
    tombstone,
    tombstone_known,
    whole_message,
)
from rumi.paths import ChatPaths, chats_root
from rumi.sessions.state import SessionState

log = logging.getLogger(__name__)

INTENT_NAME = "redaction_intent.json"
LOG_NAME = "redactions.jsonl"
IMPORTED_TAPES = "imported_session_log_*.jsonl"
MEMORY_SCAN_LIMIT = 100_000


@dataclass
class Report:
    """What a redaction changed (or, from `survey`, would change), by place; never the text."""

    message_ids: list[int] = field(default_factory=list)
    tape_lines: int = 0
    context_items: int = 0
    daily_lines: int = 0
    snapshot_lines: int = 0
    snapshot_names: int = 0
    pending: int = 0
    sections: int = 0
    memory_ids: list[int] = field(default_factory=list)
    history: int = 0
    hashes: set[str] = field(default_factory=set)   # fingerprints of what was redacted
    renamed: dict[str, str] = field(default_factory=dict)   # old name's fingerprint -> new

    @property
    def mentions(self) -> int:
        """Places in the conversation's files that held the text (the context repeats the
        tape, so it is not counted twice)."""
        return (self.tape_lines + self.daily_lines + self.snapshot_lines + self.pending
                + self.sections)

    def __bool__(self) -> bool:
        return bool(self.mentions or self.memory_ids or self.context_items
                    or self.snapshot_names)


class Redactor:
    """Finds and removes texts from one chat's conversation files, context and memory.

    Collaborators come from the composition root: the store (memories holding the text), the
    lifecycle (pending extractions, MEMORY.md), the session manager (a fresh session snapshot,
    no journal line keeping the old text) and the context engine (records the redaction on
    the tape and drops its cached copy of the chat).
    """

    def __init__(self, data_dir: Path, *, store: Any, lifecycle: Any, sessions: Any = None,
                 context: Any = None, tape_index: Any = None) -> None:
        self.data_dir = Path(data_dir)
        self.store = store
        self.lifecycle = lifecycle
        self.sessions = sessions
        self.context = context
        self.tape_index = tape_index   # the conversation search index, rebuilt from the tapes

    # --- what a redaction would touch --------------------------------------------------

    async def survey(self, chat_id: str, texts: Sequence[str],
                     session: SessionState | None = None) -> Report:
        """Count what `redact` would change, writing nothing."""
        needles = Needles(texts)
        tomb = tombstone()
        report = Report()
        await asyncio.to_thread(self._files, ChatPaths(self.data_dir, chat_id), needles, tomb,
                                report, False)
        report.pending = len(await self._pending_hits(chat_id, needles, tomb, write=False))
        if session is None and self.sessions is not None:
            session = await self.sessions.get(chat_id)
        if session is not None:
            report.context_items = _redact_session(session, needles, tomb, write=False)
        report.memory_ids = [m.id for m in await self._memories(chat_id, needles)]
        return report

    # --- doing it ----------------------------------------------------------------------

    async def redact(self, chat_id: str, texts: Sequence[str],
                     session: SessionState | None) -> Report:
        """Remove `texts` everywhere in the chat. The caller holds the chat's session lock
        (`session`), so no turn writes to the tape meanwhile."""
        needles = Needles(texts)
        planned = await self.survey(chat_id, texts, session)
        token = secrets.token_hex(8)
        paths = ChatPaths(self.data_dir, chat_id)
        # the fingerprints go in the intent too: after a crash, files already rewritten no
        # longer show what they held, and an import must still recognise it
        intent = {"token": token, "texts": needles.texts, "ids": planned.message_ids,
                  "hashes": sorted(planned.hashes), "renamed": planned.renamed,
                  "tombstone": tombstone(), "at": _now()}
        await asyncio.to_thread(_write_json, paths.smma / INTENT_NAME, intent)
        return await self._finish(chat_id, intent, session)

    async def _finish(self, chat_id: str, intent: dict[str, Any],
                      session: SessionState | None) -> Report:
        paths = ChatPaths(self.data_dir, chat_id)
        token, ids = str(intent["token"]), [int(i) for i in intent.get("ids", [])]
        if session is not None and self.context is not None and \
                not await asyncio.to_thread(_tape_has, paths.tape, token):
            await self.context.note_redaction(session, ids, token)
        needles = Needles(intent["texts"])
        tomb = str(intent.get("tombstone") or tombstone())
        report = Report()
        async with self.lifecycle.pending_lock:
            await asyncio.to_thread(self._files, paths, needles, tomb, report, True)
            report.pending = len(await self._pending_hits(chat_id, needles, tomb, write=True))
        if self.context is not None:
            self.context.forget_chat(chat_id)
        if session is not None:
            report.context_items = _redact_session(session, needles, tomb, write=True)
            if self.sessions is not None:
                await self.sessions.rewrite(session)
        if self.tape_index is not None:
            await self.tape_index.rebuild(chat_id)
        memories = await self._memories(chat_id, needles)
        if memories:
            report.memory_ids = [m.id for m in memories]
            report.history = await self.store.erase(chat_id, report.memory_ids)
            await self.lifecycle.write_markdown(chat_id)
        report.message_ids = sorted(set(ids) | set(report.message_ids))
        report.hashes.update(h for h in intent.get("hashes") or [] if isinstance(h, str))
        report.renamed = {**(intent.get("renamed") or {}), **report.renamed}
        await asyncio.to_thread(_log_once, paths.smma / LOG_NAME, token, intent["at"], report)
        await asyncio.to_thread(_remove, paths.smma / INTENT_NAME)
        log.info("chat %s: redaction %s done (%d messages, %d other places, %d memories)",
                 chat_id, token, len(report.message_ids), report.mentions - report.tape_lines,
                 len(report.memory_ids))
        return report

    async def resume(self) -> int:
        """At start: finish every redaction a crash interrupted (its intent file is still
        there). Returns how many were finished."""
        root = chats_root(self.data_dir)
        found = await asyncio.to_thread(
            lambda: sorted(p.parent.parent.name for p in root.glob(f"*/.smma/{INTENT_NAME}")))
        done = 0
        for chat_id in found:
            path = ChatPaths(self.data_dir, chat_id).smma / INTENT_NAME
            try:
                intent = json.loads(await asyncio.to_thread(path.read_bytes))
                Needles(intent["texts"])
            except (OSError, ValueError, KeyError, TypeError) as exc:
                log.error("chat %s: unreadable redaction intent (%s); left for a person",
                          chat_id, exc)
                continue
            session = None
            if self.sessions is not None:
                session = await self.sessions.acquire(chat_id, wait=True)
            try:
                await self._finish(chat_id, intent, session)
                done += 1
            except Exception:
                log.exception("chat %s: finishing an interrupted redaction failed", chat_id)
            finally:
                if self.sessions is not None:
                    await self.sessions.release(chat_id)
        return done

    async def count(self, chat_id: str) -> tuple[int, int]:
        """(redactions done in this chat, messages they tombstoned), for /memory and /status."""
        path = ChatPaths(self.data_dir, chat_id).smma / LOG_NAME
        return await asyncio.to_thread(_count_log, path)

    # --- the parts -----------------------------------------------------------------------

    def _files(self, paths: ChatPaths, needles: Needles, tomb: str, report: Report,
               write: bool) -> None:
        """Tapes, daily logs, snapshots (and their names) and profile sections. Blocking."""
        tapes = [paths.tape, *sorted(paths.smma.glob(IMPORTED_TAPES))]
        for tape in tapes:
            _tape(tape, needles, tomb, report, write)
        if paths.daily_dir.is_dir():
            for entry in sorted(paths.daily_dir.iterdir()):
                if DAILY_NAME.match(entry.name) and entry.is_file():
                    report.daily_lines += _text_file(entry, needles, tomb, DAILY_PREFIX, write,
                                                     report.hashes)
        if paths.snapshots.is_dir():
            for entry in sorted(paths.snapshots.glob("*.md")):
                if entry.is_file():
                    report.snapshot_lines += _snapshot(entry, needles, tomb, report, write)
        if paths.smma.is_dir():
            for entry in sorted(paths.smma.glob("*.md")):
                if entry.is_file():
                    report.sections += _text_file(entry, needles, tomb, None, write,
                                                  report.hashes)

    async def _pending_hits(self, chat_id: str, needles: Needles, tomb: str, *,
                            write: bool) -> list[int]:
        """Deferred extractions whose transcript held the text (rewritten when `write`)."""
        hits: list[int] = []

        def change(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
            """A transcript loses the lines that said it (it is a work queue, not a record:
            nothing is left to extract from a tombstone); an emptied one is dropped."""
            kept = []
            for n, record in enumerate(records):
                text = record.get("transcript")
                if isinstance(text, str) and needles.found(text):
                    hits.append(n)
                    lines = [line for line in text.splitlines() if not needles.found(line)]
                    record["transcript"] = needles.replace("\n".join(lines), tomb)
                rest, hit = scrub({k: v for k, v in record.items() if k != "transcript"},
                                  needles, tomb)
                if hit:
                    record.update(rest)
                    if n not in hits:
                        hits.append(n)
                if str(record.get("transcript", "")).strip():
                    kept.append(record)
            return kept

        if write:
            await self.lifecycle.rewrite_pending(chat_id, change)
        else:
            change(await self.lifecycle.pending(chat_id))
        return hits

    async def _memories(self, chat_id: str, needles: Needles) -> list[Any]:
        """Every stored memory (any status) whose text, key or pre-edit texts hold it."""
        rows = await self.store.list(chat_id, status=None, limit=MEMORY_SCAN_LIMIT)
        return [m for m in rows
                if needles.found(m.content) or (m.key and needles.found(m.key))
                or needles.found(json.dumps(m.metadata or {}, ensure_ascii=False))]


def _redact_session(session: SessionState, needles: Needles, tomb: str, *, write: bool) -> int:
    """Items of the active context that held the text (changed in place when `write`)."""
    changed = 0
    for item in session.items:
        hit = False
        if needles.found(item.content or ""):
            hit = True
            if write:
                whole = whole_message(item.role, item.kind, False)
                item.content = tomb if whole else needles.replace(item.content, tomb)
        for name in ("tool_calls", "name", "tool_call_id"):
            new, found = scrub(getattr(item, name), needles, tomb)
            if found:
                hit = True
                if write:
                    setattr(item, name, new)
        if hit:
            changed += 1
            if write:
                item.token_count = None
    metadata, found = scrub(session.metadata, needles, tomb)
    if found and write:
        session.metadata.clear()
        session.metadata.update(metadata)
    return changed


def _tape(path: Path, needles: Needles, tomb: str, report: Report, write: bool) -> None:
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return
    out: list[bytes] = []
    changed = False
    for raw in data.splitlines(keepends=True):
        ending = raw[len(raw.rstrip(b"\r\n")):]
        body = raw[: len(raw) - len(ending)]
        text = body.decode("utf-8", errors="replace")
        if not needles.found(text) and not _escaped_hit(text, needles):
            out.append(raw)
            continue
        try:
            record = json.loads(body)
        except ValueError:
            record = None
        if isinstance(record, dict) and redact_record(record, needles, tomb, report.hashes):
            body = json.dumps(record, ensure_ascii=False, separators=(",", ":")).encode()
            if isinstance(record.get("id"), int) and "event" not in record:
                report.message_ids.append(record["id"])
        else:   # a torn or foreign line: only the span goes
            body = needles.replace(text, tomb).encode()
        report.tape_lines += 1
        changed = True
        out.append(body + ending)
    if changed and write:
        atomic_write_bytes(path, b"".join(out), sync_dir=True)


def _escaped_hit(line: str, needles: Needles) -> bool:
    """A text with quotes, backslashes or non-ASCII may be escaped inside the JSON line."""
    if "\\" not in line:
        return False
    try:
        value = json.loads(line)
    except ValueError:
        return False
    return needles.found(json.dumps(value, ensure_ascii=False))


def _text_file(path: Path, needles: Needles, tomb: str, keep: Any, write: bool,
               seen: set[str] | None = None) -> int:
    text = path.read_text(encoding="utf-8", errors="replace")
    new, count = redact_lines(text, needles, tomb, keep, seen)
    if count and write:
        atomic_write_bytes(path, new.encode("utf-8"), sync_dir=True)
    return count


def _snapshot(path: Path, needles: Needles, tomb: str, report: Report, write: bool) -> int:
    """A snapshot's lines, its title line and its file name (an LLM wrote both)."""
    text = path.read_text(encoding="utf-8", errors="replace")
    new, count = redact_lines(text, needles, tomb, SNAPSHOT_PREFIX, report.hashes)
    lines = new.split("\n", 1)
    if lines[0].startswith("# ") and needles.slug_found(lines[0]):
        old = lines[0]
        lines[0] = needles.replace_slug(lines[0])
        report.renamed[fingerprint(old)] = lines[0]
        new = "\n".join(lines)
        count += 1
    renamed = needles.slug_found(path.stem)
    target = path
    if renamed:
        report.snapshot_names += 1
        target = path.with_name(needles.replace_slug(path.stem) + path.suffix)
        if write:
            target = unused_path(target)
        report.renamed[fingerprint(path.name)] = target.name
    if not write or not (count or renamed):
        return count
    atomic_write_bytes(target, new.encode("utf-8"), sync_dir=True)
    if target != path:
        path.unlink()
        fsync_dir(path.parent)
    return count


def _tape_has(path: Path, token: str) -> bool:
    try:
        return token.encode() in path.read_bytes()
    except FileNotFoundError:
        return False


def _write_json(path: Path, value: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(path, json.dumps(value, ensure_ascii=False).encode("utf-8"),
                       sync_dir=True)


def _remove(path: Path) -> None:
    path.unlink(missing_ok=True)
    fsync_dir(path.parent)


def _log_once(path: Path, token: str, at: str, report: Report) -> None:
    """One line per redaction (ids and counts, never text); a resumed one is not logged twice."""
    try:
        if token.encode() in path.read_bytes():
            return
    except FileNotFoundError:
        pass
    line = json.dumps({
        "token": token, "at": at, "done": _now(), "ids": report.message_ids,
        "tape_lines": report.tape_lines, "context_items": report.context_items,
        "daily_lines": report.daily_lines, "snapshot_lines": report.snapshot_lines,
        "snapshot_names": report.snapshot_names, "pending": report.pending,
        "sections": report.sections, "memories": report.memory_ids,
        "hashes": sorted(report.hashes), "renamed": report.renamed,
    }) + "\n"
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(line)
        fh.flush()
        os.fsync(fh.fileno())


def _count_log(path: Path) -> tuple[int, int]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return 0, 0
    done = messages = 0
    for line in text.splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict):
            done += 1
            messages += len(record.get("ids") or [])
    return done, messages


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def redacted_before(smma: Path) -> tuple[set[str], dict[str, str]]:
    """Fingerprints of everything this chat had redacted, and what replaced a snapshot's name
    or title (by the old one's fingerprint). Blocking."""
    hashes: set[str] = set()
    renamed: dict[str, str] = {}
    try:
        text = (smma / LOG_NAME).read_text(encoding="utf-8")
    except FileNotFoundError:
        return hashes, renamed
    for line in text.splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict):
            hashes.update(h for h in record.get("hashes") or [] if isinstance(h, str))
            names = record.get("renamed")
            if isinstance(names, dict):
                renamed.update({k: v for k, v in names.items() if isinstance(v, str)})
    return hashes, renamed


def keep_redacted(known: tuple[set[str], dict[str, str]], name: str, data: bytes,
                  tomb: str) -> tuple[str, bytes]:
    """An archive member as this chat may import it: what the chat had redacted (`known`,
    from `redacted_before`) reads the tombstone again, and a snapshot renamed by a redaction
    takes its new name and title."""
    hashes, renamed = known
    if not hashes and not renamed:
        return name, data
    text = data.decode("utf-8", errors="replace")
    if name.endswith(".jsonl"):
        lines = []
        for raw in text.splitlines(keepends=True):
            try:
                record = json.loads(raw)
            except ValueError:
                lines.append(raw)
                continue
            new, hit = forget_known(record, hashes, tomb)
            if hit:
                ending = raw[len(raw.rstrip("\r\n")):]
                raw = json.dumps(new, ensure_ascii=False, separators=(",", ":")) + ending
            lines.append(raw)
        return name, "".join(lines).encode("utf-8")
    if "/snapshots/" in name:
        folder, _, base = name.rpartition("/")
        new_base = renamed.get(fingerprint(base), base)
        return f"{folder}/{new_base}", tombstone_known(text, hashes, tomb, SNAPSHOT_PREFIX,
                                                        renamed).encode("utf-8")
    if name.startswith(".smma/") and name.endswith(".md"):
        return name, tombstone_known(text, hashes, tomb, None).encode("utf-8")
    if DAILY_NAME.match(name.rpartition("/")[2]):
        return name, tombstone_known(text, hashes, tomb, DAILY_PREFIX).encode("utf-8")
    return name, data

"""Redaction file by file: the active context, a tape, a daily log, a snapshot (and its name).

Each function finds the text and, when `write`, replaces the file atomically; counts go into
the `Report` either way, so a survey and a redaction share one path.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rumi.fileio import atomic_write_bytes, fsync_dir, unused_path
from rumi.memory.redaction.record import Report
from rumi.memory.redaction.text import (
    SNAPSHOT_PREFIX,
    Needles,
    fingerprint,
    redact_lines,
    redact_record,
    scrub,
    whole_message,
)
from rumi.sessions.state import SessionState


def redact_session(session: SessionState, needles: Needles, tomb: str, *, write: bool) -> int:
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


def redact_tape(path: Path, needles: Needles, tomb: str, report: Report, write: bool) -> None:
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


def redact_text_file(path: Path, needles: Needles, tomb: str, keep: Any, write: bool,
               seen: set[str] | None = None) -> int:
    text = path.read_text(encoding="utf-8", errors="replace")
    new, count = redact_lines(text, needles, tomb, keep, seen)
    if count and write:
        atomic_write_bytes(path, new.encode("utf-8"), sync_dir=True)
    return count


def redact_snapshot(path: Path, needles: Needles, tomb: str, report: Report, write: bool) -> int:
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


def tape_has(path: Path, token: str) -> bool:
    try:
        return token.encode() in path.read_bytes()
    except FileNotFoundError:
        return False

"""The three-way merge behind MEMORY.md edits: what did the *person* change?

An editor's buffer is a copy of one file Rumi wrote (the base). Comparing the saved file with
the database alone cannot tell "the person deleted this line" from "Rumi added this line after
the copy was taken", nor "the person changed this" from "Rumi changed this meanwhile". So every
write Rumi makes is remembered (ids and lines, last `HISTORY_WRITES`) and carries its version
in a comment line; a saved file is diffed against the write it started from, and only the lines
that differ from that base count as the person's intent. Pure functions: no I/O here.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from rumi.memory.store.models import MemoryType

HISTORY_WRITES = 20
VERSION_MARK = re.compile(r"<!--\s*rumi:v(\d+)\b")

Line = tuple[str, str | None, MemoryType]   # (content, key, type) as shown in the file
DIGEST_CHARS = 16   # a line is remembered by this much of its sha256: equality is all we need


@dataclass(frozen=True)
class Snapshot:
    """One write Rumi made: its version and the digest of each line it showed (None: an old
    state file that kept only the ids)."""

    version: int | None
    ids: frozenset[int]
    lines: dict[int, str] | None


@dataclass(frozen=True)
class Item:
    """A memory line of the saved file (already cleaned)."""

    type: MemoryType
    content: str
    key: str | None = None
    memory_id: int | None = None
    line: int = 0

    @property
    def shown(self) -> Line:
        return self.content, self.key, self.type


@dataclass
class Intent:
    """What the person meant: new lines, changed memories, and memories they deleted."""

    adds: list[Item] = field(default_factory=list)
    updates: list[Item] = field(default_factory=list)   # memory_id names the memory to change
    removed: list[int] = field(default_factory=list)
    shown: int = 0   # how many memories the person's copy showed that still exist


def file_version(text: str) -> int | None:
    match = VERSION_MARK.search(text)
    return int(match.group(1)) if match else None


def digest(line: Line | None) -> str | None:
    """A short, stable fingerprint of a line (so the state file stays small)."""
    if line is None:
        return None
    raw = json.dumps([line[0], line[1], line[2].value], ensure_ascii=False)
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()[:DIGEST_CHARS]


def snapshots(state: dict[str, Any]) -> list[Snapshot]:
    """Rumi's remembered writes, oldest first. Older state files hold id lists only."""
    out: list[Snapshot] = []
    raw_history = state.get("history", [])
    if not raw_history and isinstance(state.get("ids"), list):
        raw_history = [state["ids"]]
    for raw in raw_history if isinstance(raw_history, list) else []:
        if isinstance(raw, list):
            out.append(Snapshot(None, frozenset(i for i in raw if isinstance(i, int)), None))
        elif isinstance(raw, dict) and isinstance(raw.get("lines"), dict):
            lines = {int(k): v for k, v in raw["lines"].items()
                     if str(k).isdigit() and isinstance(v, str)}
            version = raw.get("version")
            out.append(Snapshot(version if isinstance(version, int) else None,
                                frozenset(lines), lines))
    return out


def snapshot_record(version: int, lines: dict[int, Line]) -> dict[str, Any]:
    return {"version": version, "lines": {str(i): digest(v) for i, v in lines.items()}}


def digests(lines: dict[int, Line]) -> dict[int, str]:
    return {i: d for i, line in lines.items() if (d := digest(line)) is not None}


def choose_base(history: Sequence[Snapshot], version: int | None,
                in_file: set[int]) -> tuple[Snapshot | None, frozenset[int] | None]:
    """The write the saved file started from, and which of its ids the person may have
    deleted (None: any).

    The version comment names it. A version older than every remembered write (an editor that
    kept saving one buffer for a long time) gives no base at all: lines are compared with the
    database and nothing is taken as deleted, since any memory may have come after that copy.
    Without a version line (removed, or a file written anew), the write whose ids differ least
    from the file's is the base (the newest on a tie), and only memories already in the oldest
    remembered write can count as deleted, so a memory Rumi added recently is never forgotten
    by a guess. A file naming no id at all is based on the newest write (then the forget
    confirmation applies).
    """
    if not history:
        return None, None
    if version is not None:
        for snap in reversed(history):
            if snap.version == version:
                return snap, None
        if version < max(s.version or 0 for s in history):
            return None, None
    if not in_file:   # emptied: held for confirmation anyway when it forgets that much
        return history[-1], None
    best: Snapshot | None = None
    best_distance = -1
    for snap in reversed(history):
        distance = len(snap.ids ^ in_file)
        if best is None or distance < best_distance:
            best, best_distance = snap, distance
    return best, history[0].ids


def classify(items: Sequence[Item], base: Snapshot | None, current: dict[int, Line],
             earlier: dict[int, Line], removable: frozenset[int] | None = None) -> Intent:
    """Split the saved file into the person's intent.

    `current` are the lines the database would show now, `earlier` the last text of memories
    that are no longer shown (forgotten or superseded) and that the file still names. A line is
    compared with what the person's copy showed (the base, else the database); equal means
    untouched, whatever Rumi did to that memory since. A copied line that repeats an id is a new
    memory (the copy that still matches the base keeps the id). Only base lines missing from the
    file (and in `removable`, when given) are removals; memories Rumi added after the copy was
    taken are never forgotten.
    """
    intent = Intent()
    base_lines = base.lines if base is not None and base.lines is not None else {}
    by_id: dict[int, list[Item]] = {}
    for item in items:
        if item.memory_id is None:
            intent.adds.append(item)
        else:
            by_id.setdefault(item.memory_id, []).append(item)
    for memory_id, copies in by_id.items():
        reference = (base_lines.get(memory_id) or digest(current.get(memory_id))
                     or digest(earlier.get(memory_id)))
        original = next((c for c in copies if digest(c.shown) == reference), copies[0])
        for copy in copies:
            if copy is not original:
                intent.adds.append(copy)
        if digest(original.shown) == reference:
            continue
        if memory_id in current:
            intent.updates.append(original)
        else:   # unknown, or gone since the copy was taken: the person's text is kept as new
            intent.adds.append(original)
    intent.adds.sort(key=lambda item: item.line)
    intent.updates.sort(key=lambda item: item.line)
    if base is not None:
        shown = base.ids & set(current)
        intent.shown = len(shown)
        gone = shown - set(by_id)
        intent.removed = sorted(gone if removable is None else gone & removable)
    return intent


def needs_confirmation(intent: Intent, max_count: int, max_share: float) -> bool:
    """Forgetting everything shown, more than `max_count`, or (two or more) more than
    `max_share` of what was shown is held until the person confirms: an empty or truncated
    save must never forget silently."""
    removed = len(intent.removed)
    if removed == 0:
        return False
    if removed >= intent.shown or removed > max_count:
        return True
    return removed >= 2 and removed / max(intent.shown, 1) > max_share

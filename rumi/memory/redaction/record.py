"""What stays of a redaction: its report, the log line (ids and counts, never text), and
what an archive import must keep redacted.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rumi.fileio import atomic_write_bytes, fsync_dir, read_json_lines
from rumi.memory.files.journal import DAILY_NAME
from rumi.memory.redaction.text import (
    DAILY_PREFIX,
    SNAPSHOT_PREFIX,
    fingerprint,
    forget_known,
    tombstone_known,
)

INTENT_NAME = "redaction_intent.json"
LOG_NAME = "redactions.jsonl"


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


def write_json(path: Path, value: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(path, json.dumps(value, ensure_ascii=False).encode("utf-8"),
                       sync_dir=True)


def remove_synced(path: Path) -> None:
    path.unlink(missing_ok=True)
    fsync_dir(path.parent)


def log_once(path: Path, token: str, at: str, report: Report) -> None:
    """One line per redaction (ids and counts, never text); a resumed one is not logged twice."""
    try:
        if token.encode() in path.read_bytes():
            return
    except FileNotFoundError:
        pass
    line = json.dumps({
        "token": token, "at": at, "done": now_iso(), "ids": report.message_ids,
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


def count_log(path: Path) -> tuple[int, int]:
    records = read_json_lines(path)
    return len(records), sum(len(record.get("ids") or []) for record in records)


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def redacted_before(smma: Path) -> tuple[set[str], dict[str, str]]:
    """Fingerprints of everything this chat had redacted, and what replaced a snapshot's name
    or title (by the old one's fingerprint). Blocking."""
    hashes: set[str] = set()
    renamed: dict[str, str] = {}
    for record in read_json_lines(smma / LOG_NAME):
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

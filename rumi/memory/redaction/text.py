"""The text side of redaction: which words to find, and what a redacted line or record becomes.

Pure functions, no I/O, so every file kind (tape, session, daily log, snapshot, pending
extraction, profile section) is changed by the same rules and a survey can count exactly what
the redaction will then change. A message that said the words becomes a tombstone as a whole
(the words around a secret often give it away: "mi DNI es …"); a summary, an event or a
profile line keeps its other words and loses only the span.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from typing import Any

from rumi import messages as msg
from rumi.memory.files.journal import FALLBACK_SLUG, slugify

MIN_CHARS = 4
"""Shorter texts would match inside ordinary words and tombstone half a conversation."""

TOMBSTONE_NAME = "REDACTED_TOMBSTONE"
SLUG_REPLACEMENT = "borrado"
WHOLE_ROLES = ("user", "assistant", "tool")

DAILY_PREFIX = re.compile(r"^- \d{1,2}:\d{2} ")
SNAPSHOT_PREFIX = re.compile(r"^\*\*[^*\n]{1,40}\*\* \[#\d+\]: ")


def tombstone() -> str:
    """The tombstone in the active language (the chat's)."""
    return str(msg.text(TOMBSTONE_NAME))


def is_tombstone(text: str | None) -> bool:
    """True for a message a redaction emptied, whatever language it was redacted in."""
    value = (text or "").strip()
    return bool(value) and value in {str(msg.text(TOMBSTONE_NAME, code))
                                     for code in msg.SUPPORTED_LANGUAGES}


def fingerprint(text: str) -> str:
    """A digest of a whole redacted line or message (spaces and case folded), so an import of
    an older export can recognise it without Rumi keeping the words."""
    return hashlib.sha256(" ".join(text.split()).casefold().encode("utf-8")).hexdigest()[:32]


def holds_tombstone(text: str | None) -> bool:
    """True when a text carries a tombstone: a memory extracted from a summary with a
    redacted span would learn the gap ("su pasaporte es [borrado…]"), never worth keeping."""
    value = text or ""
    return any(str(msg.text(TOMBSTONE_NAME, code)) in value for code in msg.SUPPORTED_LANGUAGES)


class Needles:
    """The texts to remove: case-insensitive, any run of whitespace between their words."""

    def __init__(self, texts: Sequence[str]) -> None:
        cleaned = sorted({" ".join(t.split()) for t in texts
                          if len(" ".join(t.split())) >= MIN_CHARS}, key=len, reverse=True)
        if not cleaned:
            raise ValueError(f"text shorter than {MIN_CHARS} characters")
        self.texts = cleaned
        self.pattern = re.compile(
            "|".join(r"\s+".join(re.escape(w) for w in t.split()) for t in cleaned),
            re.IGNORECASE)
        if any(self.found(str(msg.text(TOMBSTONE_NAME, code)))
               for code in msg.SUPPORTED_LANGUAGES):
            raise ValueError("text that is part of the tombstone itself")
        self.slugs = sorted({s for t in cleaned
                             if (s := slugify(t)) != FALLBACK_SLUG and len(s) >= MIN_CHARS},
                            key=len, reverse=True)

    def found(self, text: str) -> bool:
        return self.pattern.search(text) is not None

    def replace(self, text: str, tomb: str) -> str:
        return self.pattern.sub(lambda _: tomb, text)

    def slug_found(self, name: str) -> bool:
        folded = name.casefold()
        return any(slug in folded for slug in self.slugs)

    def replace_slug(self, name: str) -> str:
        for slug in self.slugs:
            name = re.sub(re.escape(slug), SLUG_REPLACEMENT, name, flags=re.IGNORECASE)
        return name


def scrub(value: Any, needles: Needles, tomb: str,
          seen: set[str] | None = None) -> tuple[Any, bool]:
    """`value` (any JSON value) with every matching span replaced; and whether it changed.
    `seen` collects the fingerprints of the strings changed."""
    if isinstance(value, str):
        if needles.found(value):
            if seen is not None:
                seen.add(fingerprint(value))
            return needles.replace(value, tomb), True
        return value, False
    if isinstance(value, list):
        changed = False
        out = []
        for element in value:
            new, hit = scrub(element, needles, tomb, seen)
            out.append(new)
            changed = changed or hit
        return (out, True) if changed else (value, False)
    if isinstance(value, dict):
        changed = False
        result: dict[Any, Any] = {}
        for key, element in value.items():
            new, hit = scrub(element, needles, tomb, seen)
            result[key] = new
            changed = changed or hit
        return (result, True) if changed else (value, False)
    return value, False


def whole_message(role: Any, kind: Any, is_event: bool) -> bool:
    """Messages (user, assistant, tool output) are tombstoned whole; summaries and events are
    not: a summary covers many messages, and losing all of it for one secret costs too much."""
    return not is_event and role in WHOLE_ROLES and kind in (None, "message")


def redact_record(record: dict[str, Any], needles: Needles, tomb: str,
                  seen: set[str] | None = None) -> bool:
    """Redact one tape (or session) record in place; True when it changed. Its id, time,
    role and kind stay, so the tape still has every id in order."""
    changed = False
    content = record.get("content")
    if isinstance(content, str) and needles.found(content):
        whole = whole_message(record.get("role"), record.get("kind"), "event" in record)
        record["content"] = tomb if whole else needles.replace(content, tomb)
        changed = True
        if seen is not None:
            seen.add(fingerprint(content))
    for key in list(record):
        if key == "content":
            continue
        new, hit = scrub(record[key], needles, tomb, seen)
        if hit:
            record[key] = new
            changed = True
    return changed


def redact_lines(text: str, needles: Needles, tomb: str,
                 keep: re.Pattern[str] | None = None,
                 seen: set[str] | None = None) -> tuple[str, int]:
    """Each line holding the text becomes its kept prefix (a time, a speaker and id) plus the
    tombstone; `keep=None` replaces only the span. Returns the new text and lines changed.
    A text spread over two lines is caught by a last pass over the whole text. `seen`
    collects the fingerprints of the lines changed."""
    out: list[str] = []
    count = 0
    for line in text.splitlines(keepends=True):
        if needles.found(line):
            count += 1
            if seen is not None:
                seen.add(fingerprint(line))
            ending = line[len(line.rstrip("\r\n")):]
            if keep is None:
                line = needles.replace(line, tomb)
            else:
                match = keep.match(line)
                prefix = match.group(0) if match and not needles.found(match.group(0)) else ""
                line = prefix + tomb + ending
        out.append(line)
    result = "".join(out)
    if needles.found(result):
        count += 1
        result = needles.replace(result, tomb)
    return result, count


def forget_known(value: Any, known: set[str], tomb: str) -> tuple[Any, bool]:
    """`value` with every string whose fingerprint is in `known` replaced by the tombstone."""
    if isinstance(value, str):
        if value.strip() and fingerprint(value) in known:
            return tomb, True
        return value, False
    if isinstance(value, list):
        pairs = [forget_known(v, known, tomb) for v in value]
        return ([p[0] for p in pairs], True) if any(p[1] for p in pairs) else (value, False)
    if isinstance(value, dict):
        items = {k: forget_known(v, known, tomb) for k, v in value.items()}
        if any(hit for _, hit in items.values()):
            return {k: new for k, (new, _) in items.items()}, True
        return value, False
    return value, False


def tombstone_known(text: str, known: set[str], tomb: str,
                    keep: re.Pattern[str] | None,
                    replaced: dict[str, str] | None = None) -> str:
    """Lines whose fingerprint is in `known` (redacted before) read the tombstone again, with
    their kept prefix, and lines in `replaced` (a snapshot title) take their replacement: how
    an imported daily log or snapshot loses what was redacted."""
    out = []
    for line in text.splitlines(keepends=True):
        if not line.strip():
            out.append(line)
            continue
        digest = fingerprint(line)
        ending = line[len(line.rstrip("\r\n")):]
        if replaced and digest in replaced:
            line = replaced[digest] + ending
        elif digest in known:
            match = keep.match(line) if keep is not None else None
            line = (match.group(0) if match else "") + tomb + ending
        out.append(line)
    return "".join(out)

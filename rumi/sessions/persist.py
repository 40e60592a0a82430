"""A chat's session on disk: `session.json` (a snapshot) + `session.journal.jsonl` (changes).

Why not just rewrite `session.json` after every message: it grows with the session, so at 50
messages per chat each message rewrote ~26 KB — above issue 6's 20 KB per message of SD-card
wear, and growing. Instead:

- `session.json` is a compact snapshot written atomically (temp + fsync + rename + directory
  fsync). It carries a random `journal` token.
- Each later save appends ONE JSON line to the journal, tagged with that token, then fsyncs it:
  new items in full, only the changed fields of existing items, removed ids, changed top-level
  fields and metadata keys, and the item order when it is not "old order, minus removed, plus
  added".
- Small sessions (snapshot under `SMALL_SNAPSHOT` bytes) are simply rewritten, and once the
  journal outgrows the snapshot the snapshot is rewritten with a new token and the journal
  deleted: each message costs about twice its change, and loading replays at most about
  twice the snapshot.

Crash safety: an append is either complete (newline-terminated, fsynced) or a torn last line
that loading drops, so a crash leaves the state of the last or the previous save, never a mix.
A new snapshot gets a new token before the old journal is deleted, so a crash in between
leaves a journal whose lines no longer match and are ignored. Loading writes nothing: after a
cleanly replayed journal the next save appends to it; after a torn, damaged or stale line the
next save writes a fresh snapshot instead, so appends never follow such a line. The tape
(`.smma/session_log.jsonl`) remains the append-only record of every message.
"""

from __future__ import annotations

import json
import logging
import os
import secrets
from dataclasses import MISSING, asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from rumi.fileio import atomic_write_bytes, fsync_dir
from rumi.sessions.state import ContextItem, SessionState

log = logging.getLogger(__name__)

JOURNAL_NAME = "session.journal.jsonl"
SMALL_SNAPSHOT = 4096
"""Below this many bytes a snapshot is rewritten instead of journalled (one 4 KiB page)."""

_TOP = ("chat_id", "created_at", "last_active", "next_id")
_UNSET = "-"  # key of a patch listing fields back at their default (never a field name)
_ALWAYS = {"id", "role", "content", "created_at"}
_DEFAULTS: dict[str, Any] = {}
for _f in fields(ContextItem):
    if _f.name in _ALWAYS:
        continue
    if _f.default is not MISSING:
        _DEFAULTS[_f.name] = _f.default
    elif _f.default_factory is not MISSING:
        _DEFAULTS[_f.name] = _f.default_factory()


def journal_path(session_json: Path) -> Path:
    return session_json.with_name(JOURNAL_NAME)


def encode_item(item: ContextItem) -> dict[str, Any]:
    """The item as a dict without fields at their default (most items set only a few)."""
    data = asdict(item)
    return {k: v for k, v in data.items() if k in _ALWAYS or _DEFAULTS.get(k, MISSING) != v}


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


@dataclass
class Image:
    """What the files on disk say the session is, to diff the next save against."""

    token: str
    top: dict[str, Any]
    metadata: dict[str, str]  # key -> JSON text (a deep copy that compares cheaply)
    items: dict[int, dict[str, Any]]  # insertion order is the item order
    snapshot_bytes: int = 0
    journal_bytes: int = 0
    broken: bool = field(default=False)


Captured = tuple[dict[str, Any], dict[str, str], dict[int, dict[str, Any]]]
"""Top-level fields, metadata as JSON text, encoded items by id (see `capture`)."""


def capture(session: SessionState) -> Captured:
    """A copy of the session's persistent state (taken on the event loop, written off it)."""
    top = {name: getattr(session, name) for name in _TOP}
    metadata = {key: _dumps(value) for key, value in session.metadata.items()}
    items = {item.id: encode_item(item) for item in session.items}
    return top, metadata, items


def _snapshot_text(top: dict[str, Any], metadata: dict[str, str],
                   items: dict[int, dict[str, Any]], token: str) -> str:
    meta = "{" + ",".join(f"{_dumps(k)}:{v}" for k, v in metadata.items()) + "}"
    body = ",".join(f"{_dumps(k)}:{_dumps(v)}" for k, v in top.items())
    rows = ",".join(_dumps(item) for item in items.values())
    return f'{{{body},"journal":{_dumps(token)},"metadata":{meta},"items":[{rows}]}}'


def diff(image: Image, top: dict[str, Any], metadata: dict[str, str],
         items: dict[int, dict[str, Any]]) -> dict[str, Any]:
    """The journal line that turns `image` into the captured state (empty: nothing changed)."""
    delta: dict[str, Any] = {}
    changed_top = {k: v for k, v in top.items() if image.top.get(k) != v}
    if changed_top:
        delta["set"] = changed_top
    meta = {k: json.loads(v) for k, v in metadata.items() if image.metadata.get(k) != v}
    if meta:
        delta["meta"] = meta
    meta_gone = [k for k in image.metadata if k not in metadata]
    if meta_gone:
        delta["meta_del"] = meta_gone
    removed = [i for i in image.items if i not in items]
    added = [i for i in items if i not in image.items]
    patches = []
    for item_id, new in items.items():
        old = image.items.get(item_id)
        if old is None or old == new:
            continue
        patch: dict[str, Any] = {k: v for k, v in new.items() if old.get(k, MISSING) != v}
        gone = [k for k in old if k not in new]
        if gone:
            patch[_UNSET] = gone
        patch["id"] = item_id
        patches.append(patch)
    if removed:
        delta["del"] = removed
    if patches:
        delta["patch"] = patches
    if added:
        delta["put"] = [items[i] for i in added]
    dropped = set(removed)
    expected = [i for i in image.items if i not in dropped] + added
    if list(items) != expected:
        delta["order"] = list(items)
    return delta


def apply(state: dict[str, Any], delta: dict[str, Any]) -> None:
    """Replay one journal line onto a snapshot dict: all of it, or (ValueError) none of it."""
    try:
        top = {k: v for k, v in dict(delta.get("set", {})).items() if k in _TOP}
        metadata = {**dict(state.get("metadata") or {}), **dict(delta.get("meta", {}))}
        for key in delta.get("meta_del", []):
            metadata.pop(key, None)
        items = {int(i["id"]): i for i in state.get("items", [])}
        for item_id in delta.get("del", []):
            items.pop(int(item_id), None)
        for patch in delta.get("patch", []):
            target = dict(items[int(patch["id"])])  # a copy: the snapshot dict stays intact
            for key in patch.get(_UNSET, []):
                target.pop(key, None)
            target.update({k: v for k, v in patch.items() if k != _UNSET})
            items[int(patch["id"])] = target
        for item in delta.get("put", []):
            items[int(item["id"])] = dict(item)
        if "order" in delta:
            items = {int(i): items[int(i)] for i in delta["order"]}
    except (KeyError, TypeError, AttributeError, ValueError) as exc:
        raise ValueError(f"journal line does not apply: {type(exc).__name__}: {exc}") from exc
    state.update(top)
    state["metadata"] = metadata
    state["items"] = list(items.values())


@dataclass
class Loaded:
    """A session read from disk, and what the files looked like (to pick the next write)."""

    session: SessionState
    token: str | None
    snapshot_bytes: int
    journal_bytes: int
    appendable: bool
    """Every journal line applied and ended in a newline, so a new line may follow them."""


def read_session(path: Path, chat_id: str) -> Loaded | None:
    """Snapshot + its journal lines replayed; None when there is no snapshot.

    Raises ValueError/TypeError/KeyError/AttributeError (or UnicodeDecodeError) for a corrupt
    snapshot; the caller moves it aside. A damaged journal line stops the replay with a
    warning (the state of the save before it is kept).
    """
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None
    state = json.loads(raw.decode("utf-8"))
    if not isinstance(state, dict):
        raise ValueError("session file is not a JSON object")
    token = state.get("journal")
    token = token if isinstance(token, str) else None
    try:
        journal = journal_path(path).read_bytes()
    except FileNotFoundError:
        journal = b""
    clean = _replay(state, token, journal, chat_id)
    session = SessionState.from_dict(state)
    if session.chat_id != chat_id:
        raise ValueError(f"session file belongs to chat {session.chat_id!r}")
    return Loaded(session, token, len(raw), len(journal), appendable=clean)


def _replay(state: dict[str, Any], token: str | None, journal: bytes, chat_id: str) -> bool:
    """Apply the journal lines tagged with `token`. True only if every line applied and the
    last one ended in a newline: then a new line may safely follow them."""
    if token is None:  # a snapshot from before journals: no line can belong to it
        return not journal
    lines = journal.split(b"\n")
    clean = True
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            delta = json.loads(line.decode("utf-8"))
            if not isinstance(delta, dict):
                raise ValueError("not an object")
            if delta.get("j") != token:
                clean = False
                continue  # left by an older snapshot: already folded into this one
            apply(state, delta)
        except ValueError as exc:
            torn = number == len(lines)  # no newline after it: a crash mid-append
            (log.info if torn else log.warning)(
                "session journal of chat %s: line %d %s (%s); keeping the state before it",
                chat_id, number, "torn" if torn else "damaged", exc)
            return False
    return clean and (not journal or journal.endswith(b"\n"))


def image_after_load(loaded: Loaded) -> Image | None:
    """Where the next save starts from; loading itself writes nothing (a session loaded only
    to be ended, or never changed, costs no snapshot). After a torn, damaged or stale line,
    or a snapshot without a token (an older Rumi's), None: the next save writes a fresh
    snapshot, since a line appended there would follow one the next load stops at or skips.
    """
    if not loaded.appendable or loaded.token is None:
        return None
    return Image(loaded.token, *capture(loaded.session), snapshot_bytes=loaded.snapshot_bytes,
                 journal_bytes=loaded.journal_bytes)


def write_snapshot(path: Path, top: dict[str, Any], metadata: dict[str, str],
                   items: dict[int, dict[str, Any]]) -> Image:
    """Atomic snapshot with a fresh token, then the old journal goes (in that order)."""
    token = secrets.token_hex(6)
    text = _snapshot_text(top, metadata, items, token).encode("utf-8")
    atomic_write_bytes(path, text, sync_dir=True)
    journal_path(path).unlink(missing_ok=True)
    return Image(token, dict(top), dict(metadata), dict(items), snapshot_bytes=len(text))


def save(path: Path, image: Image | None, top: dict[str, Any], metadata: dict[str, str],
         items: dict[int, dict[str, Any]]) -> Image:
    """Persist the captured state; returns the new image. Runs in a worker thread.

    If writing fails, the image is marked broken: the files may no longer match it (a new
    snapshot renamed into place but not yet synced, a journal truncated back), so the next
    save writes a whole snapshot rather than a line that might not apply.
    """
    if image is None or image.broken:
        return write_snapshot(path, top, metadata, items)
    delta = diff(image, top, metadata, items)
    if not delta:
        return image
    delta["j"] = image.token
    line = (_dumps(delta) + "\n").encode("utf-8")
    grown = image.journal_bytes + len(line)
    try:
        if image.snapshot_bytes + len(line) <= SMALL_SNAPSHOT or grown > image.snapshot_bytes:
            return write_snapshot(path, top, metadata, items)
        _append(journal_path(path), line, new_file=image.journal_bytes == 0)
    except BaseException:
        image.broken = True
        raise
    return Image(image.token, dict(top), dict(metadata), dict(items),
                 snapshot_bytes=image.snapshot_bytes, journal_bytes=grown)


def remove(path: Path) -> None:
    """Delete the snapshot first: a journal without a snapshot is never read."""
    path.unlink(missing_ok=True)
    journal_path(path).unlink(missing_ok=True)


def _append(path: Path, data: bytes, *, new_file: bool) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        start = os.fstat(fd).st_size
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            os.fsync(fd)
        except BaseException:
            os.ftruncate(fd, start)  # never leave a partial line for the next append
            raise
    finally:
        os.close(fd)
    if new_file:
        fsync_dir(path.parent)

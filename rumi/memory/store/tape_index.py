"""A keyword index of the conversation tapes, kept by the memory store and rebuilt from the tapes.

`/search` and the `search_memory` tool used to read every tape line on every search (a
year-old chat: ~35 MB of JSON per query on a Pi). Here each tape — the chat's own and the ones
`/import` kept beside it — is indexed once, from where the last catch-up stopped
(`tape_sources.indexed_bytes`), so a search reads only what was written since.

The tape stays the record; this index is derived from it. So it never needs a backup of its
own: a lost or damaged database starts empty and `sync_all` reads every tape again (start-up
does it, so recall of old conversation works right after healing). A tape that no longer
starts with the line it started with when indexed (a restore replaced it), is shorter than
what was indexed, or is gone, has its rows dropped and is indexed again from the start.

Matching: every word of the query, as a word prefix, accents and case ignored ("gato" finds
"gatos", "cancion" finds "canción"). Hits are ordered by day, newest first, never by a score,
so no statistic of one chat's tape can change another chat's results.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from rumi.memory.store.fts import terms
from rumi.memory.store.tape_rows import TapeRows
from rumi.paths import ChatPaths, chats_root, tape_ref

log = logging.getLogger(__name__)

CHUNK_BYTES = 4 * 1024 * 1024   # one transaction per 4 MiB of tape: bounded memory on a Pi
OWN = ""                        # the tag of the chat's own tape in `tape_sources`


@dataclass(frozen=True)
class TapeHit:
    tag: str | None
    message_id: int
    at: str
    text: str

    @property
    def day(self) -> str:
        return self.at[:10]

    @property
    def when(self) -> datetime | None:
        """The message's time (UTC when the tape wrote none), None when unreadable."""
        try:
            parsed = datetime.fromisoformat(self.at) if self.at else None
        except ValueError:
            return None
        return parsed.replace(tzinfo=UTC) if parsed and parsed.tzinfo is None else parsed

    @property
    def ref(self) -> str:
        """The id as the person and `recall_original` use it: `42` or `imp…:42`."""
        return tape_ref(self.tag, self.message_id)


def tape_files(paths: ChatPaths) -> list[tuple[str, Path]]:
    """(tag, path) of every tape of a chat: its own ('') then the imported ones (blocking)."""
    own = [(OWN, paths.tape)] if paths.tape.is_file() else []
    return own + paths.imported_tapes()


def chat_ids(data_dir: Path) -> list[str]:
    """Every chat with a `.smma` folder (blocking); names that are not chat ids are skipped."""
    out = []
    for folder in sorted(chats_root(data_dir).glob("*/.smma")):
        try:
            ChatPaths(data_dir, folder.parent.name)
        except ValueError:
            continue
        out.append(folder.parent.name)
    return out


def head_of(path: Path) -> str:
    """A fingerprint of the tape's first complete line, which an append never changes."""
    try:
        with open(path, "rb") as fh:
            first = fh.readline(1 << 20)
    except FileNotFoundError:
        return ""
    if not first.endswith(b"\n"):
        return ""
    return hashlib.sha256(first).hexdigest()[:16]


def message_row(raw: bytes) -> tuple[str, int, str] | None:
    """(content, id, time) of a tape line worth searching: what the person and Rumi said."""
    try:
        record = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(record, dict) or "event" in record:
        return None
    content, msg_id = record.get("content"), record.get("id")
    if record.get("role") not in ("user", "assistant") or not isinstance(content, str) \
            or not isinstance(msg_id, int) or isinstance(msg_id, bool) or not content.strip():
        return None
    return content, msg_id, str(record.get("timestamp", ""))


def read_batch(path: Path, offset: int, limit: int = CHUNK_BYTES
               ) -> tuple[list[tuple[str, int, str]], int]:
    """Message rows from `offset` on (at least one line, about `limit` bytes of them) and
    where the next batch starts; an unterminated last line waits (blocking)."""
    rows: list[tuple[str, int, str]] = []
    position = offset
    try:
        fh = open(path, "rb")  # noqa: SIM115 - closed below
    except FileNotFoundError:
        return rows, offset
    with fh:
        fh.seek(offset)
        while position - offset < limit:
            raw = fh.readline()
            if not raw.endswith(b"\n"):
                break
            position += len(raw)
            row = message_row(raw)
            if row is not None:
                rows.append(row)
    return rows, position


def count_messages(path: Path) -> int:
    """How many searchable messages a tape holds (blocking; for the cross-check)."""
    total, offset = 0, 0
    while True:
        rows, nxt = read_batch(path, offset)
        total += len(rows)
        if nxt == offset:
            return total
        offset = nxt


class TapeIndex:
    """The index of every chat's tapes, in the rows the memory store gives (`store.tape_db`:
    `rumi.db` on SQLite, the `rumi` schema on PostgreSQL; see `tape_rows`)."""

    def __init__(self, data_dir: Path, rows: TapeRows) -> None:
        self.data_dir = Path(data_dir)
        self.rows = rows
        self._locks: dict[str, asyncio.Lock] = {}

    async def sync(self, chat_id: str) -> int:
        """Index what the chat's tapes gained since the last call; returns the messages
        indexed now. A tape replaced, shortened or removed is dropped and read again."""
        lock = self._locks.setdefault(chat_id, asyncio.Lock())
        async with lock:
            paths = ChatPaths(self.data_dir, chat_id)
            files = dict(await asyncio.to_thread(tape_files, paths))
            known = await self.rows.sources(chat_id)
            added = 0
            for tag, (source, _, _, _) in known.items():
                if tag not in files:
                    log.warning("chat %s: tape %s is gone; its index rows dropped",
                                chat_id, tag or "own")
                    await self.rows.drop(source, delete_source=True)
            for tag, path in files.items():
                added += await self._sync_one(chat_id, tag, path, known.get(tag))
            return added

    async def _sync_one(self, chat_id: str, tag: str, path: Path,
                        known: tuple[int, int, str, int] | None) -> int:
        head = await asyncio.to_thread(head_of, path)
        size = (await asyncio.to_thread(path.stat)).st_size
        if known is None:
            source, offset = await self.rows.new_source(chat_id, tag), 0
        else:
            source, offset, old_head, count = known
            if offset and (old_head != head or size < offset):
                log.warning("chat %s: tape %s changed since it was indexed (%d messages); "
                            "indexing it again", chat_id, tag or "own", count)
                await self.rows.drop(source)
                offset = 0
        added = 0
        while offset < size:
            rows, nxt = await asyncio.to_thread(read_batch, path, offset)
            if nxt == offset:
                break
            await self.rows.add(source, rows, nxt, head)
            added += len(rows)
            offset = nxt
        return added

    async def rebuild(self, chat_id: str) -> int:
        """Index the chat's tapes from scratch after they were rewritten (a redaction): the
        old rows are dropped and no copy of their words is left in the database (`scrub`)."""
        for source, _offset, _head, _count in (await self.rows.sources(chat_id)).values():
            await self.rows.drop(source, delete_source=True)
        await self.rows.scrub()
        return await self.sync(chat_id)

    async def sync_all(self) -> dict[str, int]:
        """Catch up every chat's tapes (start-up; the whole history after a lost database or
        a new PostgreSQL store). One chat's trouble is logged and never stops the others."""
        done: dict[str, int] = {}
        indexed = await self.rows.indexed_chats()
        on_disk = await asyncio.to_thread(chat_ids, self.data_dir)
        for chat_id in sorted(set(on_disk) | indexed):   # a chat folder removed: rows dropped
            try:
                done[chat_id] = await self.sync(chat_id)
            except Exception:   # one chat's trouble never stops the others (nor the start)
                log.exception("indexing the tapes of chat %s failed", chat_id)
        return done

    async def search(self, chat_id: str, query: str, limit: int,
                     spans: Sequence[tuple[datetime, datetime]] = ()) -> list[TapeHit]:
        """Messages holding every word of `query` (as word prefixes), newest first. With
        `spans` ((start, end) times), only messages from them; words may then be absent
        ("what did we say yesterday")."""
        words = terms(query)
        if not words and not spans:
            return []
        try:
            await self.sync(chat_id)
        except ValueError:   # not a chat id: nothing to search
            raise
        except Exception:   # a tape (or the database) unreadable now: search what is indexed
            log.exception("catching up the tape index of chat %s failed", chat_id)
        window = None
        if spans:
            # a coarse day window in SQL (times are ISO, UTC); the exact span in Python
            first = min(start for start, _ in spans).astimezone(UTC) - timedelta(days=1)
            last = max(end for _, end in spans).astimezone(UTC) + timedelta(days=1)
            window = (first.date().isoformat(), last.date().isoformat())
        hits: list[TapeHit] = []
        found = self.rows.find(chat_id, words, window, None if spans else int(limit))
        async with contextlib.aclosing(found):
            async for tag, msg_id, at, content in found:
                hit = TapeHit(tag, msg_id, at, " ".join(content.split())[:160])
                when = hit.when
                if spans and (when is None or not any(a <= when < b for a, b in spans)):
                    continue
                hits.append(hit)
                if len(hits) >= limit:
                    break
        return hits

    async def check(self) -> tuple[list[str], list[str]]:
        """`cross_check` against this index's rows, on either store (reads every tape)."""
        indexed, counted = await self.rows.counts()
        return await asyncio.to_thread(compare, indexed, counted, self.data_dir)


def compare(indexed: dict[tuple[str, str], tuple[int, str]], counted: dict[int, int],
            data_dir: Path) -> tuple[list[str], list[str]]:
    """Each tape's messages on disk against the rows indexed for it (blocking). Returns
    (mismatches, notes): a mismatch is an index holding what its tape does not (replaced,
    shortened or removed tape); a note, messages not indexed yet (the next `/search` or start
    indexes them). Lines are English, for the operator."""
    problems: list[str] = []
    notes: list[str] = []
    on_disk: set[tuple[str, str]] = set()
    for chat_id in chat_ids(data_dir):
        for tag, path in tape_files(ChatPaths(data_dir, chat_id)):
            on_disk.add((chat_id, tag))
            name = f"chat {chat_id} tape {tag or 'session_log'}"
            messages = count_messages(path)
            source, head = indexed.get((chat_id, tag), (None, ""))
            have = counted.get(source, 0) if source is not None else 0
            if have and head and head != head_of(path):
                problems.append(f"{name}: replaced since it was indexed ({have} messages "
                                f"indexed, {messages} on disk)")
            elif have > messages:
                problems.append(f"{name}: {have} messages indexed, only {messages} on disk")
            elif have < messages:
                notes.append(f"{name}: {messages - have} of {messages} messages not "
                             "indexed yet")
    for (chat_id, tag), (source, _) in indexed.items():
        if (chat_id, tag) not in on_disk and counted.get(source, 0):
            problems.append(f"chat {chat_id} tape {tag or 'session_log'}: "
                            f"{counted[source]} messages indexed, the tape is gone")
    return problems, notes


def cross_check(db_path: Path, data_dir: Path) -> tuple[list[str], list[str]]:
    """`compare` against the index in a SQLite `rumi.db` (blocking; read-only, for `rumi
    doctor`, which must not open the store to look)."""
    conn = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True, timeout=5)
    try:
        if conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'tape_sources'").fetchone() \
                is None:
            return [], []
        rows = conn.execute("SELECT chat_id, tag, id, head FROM tape_sources").fetchall()
        indexed = {(r[0], r[1]): (r[2], r[3]) for r in rows}
        counted = dict(conn.execute(
            "SELECT source, count(*) FROM tape_fts GROUP BY source").fetchall())
    finally:
        conn.close()
    return compare(indexed, counted, data_dir)

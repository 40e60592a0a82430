"""Recall's keyword ranking held in memory: FTS5's own BM25, without FTS5 computing it.

At 100k memories FTS5's `bm25()` over the keyword budget's up to 2,000 matches was the floor of
a recall (docs/benchmarks.md, "Recall latency"): it decodes every match's position lists and
walks each word's whole posting list for its IDF on every query. This module keeps, per chat,
what that formula reads — each word's memories with the word's weighted frequency in them
(content 2, the earlier turn 1, the one before 0.5: `_RECALL_BM25`), each memory's length in
tokens — as numpy arrays, and computes the same arithmetic in the same order, so the scores are
the very same floats and the order the same rows (ties: lower rowid first, as FTS5 feeds
SQLite's sorter).

Nothing here tokenizes text itself. The words and lengths are read from the chat's FTS5 table
(`fts5vocab` in `instance` mode, `<table>_docsize`), and the row and token totals from FTS5's
averages record, so they are exactly what FTS5 indexed. Rows written since are tokenized by
SQLite's own tokenizer (`Tokens`: an FTS5 table with the same tokenizer in a private in-memory
database); a query word that does not become exactly one token there is left to FTS5.

Kept current without a second source of truth:
- the chat's table's stamp (`recall_index.Probe.stamp`: FTS5's totals and structure records,
  SQLite's schema version) is read with every use, in the statement that re-reads the ranked
  ids (`peek`, `is_current`); unchanged, the arrays were FTS5's state, else the search is
  ranked again after `view` caught up;
- this connection's own writes are logged by TEMP triggers on `memories` (insert, delete,
  update of the indexed columns or status) into `temp.recall_kw_log`; a changed stamp with
  only logged writes behind it (`PRAGMA data_version` unchanged: no other connection
  committed) re-reads just those rows from the FTS5 table: a forgotten memory leaves with its
  words, an edit replaces them; a deletion also reads the chat again in the background, so
  not even a forgotten word's string stays in the dictionary;
- anything else (another process wrote, the table was rebuilt, too many rows changed) drops
  the chat's arrays and rebuilds them in a worker thread on a read-only connection of its
  own; until then recall ranks with FTS5, which gives the same results.

The ids ranked here are always re-read from `memories` (chat, active, unexpired) before they
are returned, as FTS5's join did, so even a stale array could not return a memory that left.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import logging
import math
import sqlite3
import threading
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

log = logging.getLogger(__name__)

K1 = 1.2          # FTS5's bm25 constants (fts5_aux.c)
B = 0.75
IDF_FLOOR = 1e-6
# Half-units of each column's weight in `_RECALL_BM25` (content, key, summary, ctx1, ctx2):
# integers, so a memory's weighted frequency adds up exactly as FTS5's doubles do.
HALVES = {"content": 4, "key": 0, "summary": 0, "ctx1": 2, "ctx2": 1}
_COLUMN_HALVES = ("CASE col WHEN 'content' THEN 4 WHEN 'ctx1' THEN 2 "
                  "WHEN 'ctx2' THEN 1 ELSE 0 END")
_CHUNK_INSTANCES = 200_000   # instances a statement reads (bounds the peak and each GIL hold)
_LOG = "recall_kw_log"      # TEMP: this connection's writes to watched chats' memories
_WATCHED = "recall_kw_chats"  # TEMP: the chats whose writes are logged
LOG_TABLE = f"temp.{_LOG}"
WATCHED = f"temp.{_WATCHED}"


def varints(blob: bytes | None) -> list[int]:
    """SQLite's varints one after another (FTS5's averages and docsize records)."""
    out: list[int] = []
    value = 0
    n = 0
    for byte in blob or b"":
        if n == 8:
            out.append((value << 8) | byte)
            value = n = 0
            continue
        value = (value << 7) | (byte & 0x7F)
        n += 1
        if not byte & 0x80:
            out.append(value)
            value = n = 0
    return out


def totals(averages: bytes | None) -> tuple[int, int]:
    """(rows, tokens of every column) from FTS5's averages record, what bm25 reads."""
    values = varints(averages)
    return (values[0], sum(values[1:])) if values else (0, 0)


class Tokens:
    """SQLite's own FTS5 tokenizer, for words and rows that are not read from the index."""

    def __init__(self, tokenizer: str) -> None:
        self._conn = sqlite3.connect(":memory:", check_same_thread=False)
        self._conn.execute("CREATE VIRTUAL TABLE t USING fts5(content, key, summary, ctx1, "
                           f"ctx2, tokenize='{tokenizer}')")
        self._conn.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, instance)")
        self._lock = threading.Lock()
        self._words: OrderedDict[str, tuple[str, ...]] = OrderedDict()

    WORDS = 8_192

    def word(self, word: str) -> tuple[str, ...]:
        """The tokens FTS5 makes of `word` (a quoted query term)."""
        found = self._words.get(word)
        if found is not None:
            return found
        with self._lock:
            self._conn.execute("INSERT INTO t(rowid, content) VALUES (1, ?)", (word,))
            tokens = tuple(r[0] for r in self._conn.execute(
                "SELECT term FROM v ORDER BY offset"))
            self._conn.execute("DELETE FROM t")
        self._words[word] = tokens
        while len(self._words) > self.WORDS:
            self._words.popitem(last=False)
        return tokens

    def words(self, words: Iterable[str]) -> dict[str, tuple[str, ...]]:
        """`word` of each of `words`, the ones not cached tokenized together: one insert,
        one read and one delete for a query's new words, not three statements each (a
        fraction of a millisecond of the event loop's time per new word)."""
        found: dict[str, tuple[str, ...]] = {w: () for w in words}   # in the order given
        new: list[str] = []
        for word in found:
            known = self._words.get(word)
            if known is None:
                new.append(word)
            else:
                found[word] = known
        if len(new) == 1:
            found[new[0]] = self.word(new[0])
        elif new:
            made: list[list[str]] = [[] for _ in new]
            with self._lock:
                self._conn.executemany("INSERT INTO t(rowid, content) VALUES (?, ?)",
                                       list(enumerate(new, 1)))
                for doc, term in self._conn.execute(
                        "SELECT doc, term FROM v ORDER BY doc, offset"):
                    made[int(doc) - 1].append(term)
                self._conn.execute("DELETE FROM t")
            for word, tokens in zip(new, made, strict=True):
                found[word] = self._words[word] = tuple(tokens)
            while len(self._words) > self.WORDS:
                self._words.popitem(last=False)
        return found

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def rows(self, rows: Iterable[Sequence[Any]]) -> dict[int, dict[str, int]]:
        """rowid → {token: weighted frequency in half-units} of (rowid, content, key, summary,
        ctx1, ctx2) rows, tokenized as the chat's table tokenizes them."""
        out: dict[int, dict[str, int]] = {}
        with self._lock:
            try:
                for row in rows:
                    out[int(row[0])] = {}
                    self._conn.execute(
                        "INSERT INTO t(rowid, content, key, summary, ctx1, ctx2) "
                        "VALUES (?, ?, ?, ?, ?, ?)", tuple(row))
                for term, doc, col in self._conn.execute("SELECT term, doc, col FROM v"):
                    weight = HALVES.get(col, 0)
                    if weight:
                        freq = out[int(doc)]
                        freq[term] = freq.get(term, 0) + weight
            finally:
                self._conn.execute("DELETE FROM t")
        return out


@dataclass
class ChatKeywords:
    """One chat's table as FTS5's bm25 reads it, at one stamp.

    The base arrays come from a full read: `rowids` ascending (a memory's *slot* is its
    position), `lengths` its tokens in every column, and per word (`terms` → position `p`)
    the slots `slots[offsets[p]:offsets[p + 1]]` (ascending) with their weighted frequency
    in half-units `halves[…]`. Rows changed since are in `changed` (rowid → {word: halves},
    with `changed_lengths`; an empty dict when the row left the table), their base slots dead.
    """

    stamp: tuple[object, ...]
    version: int                 # this connection's data_version the stamp was read at
    rows: int                    # FTS5's row total and token total (bm25's N and avgdl)
    tokens: int
    rowids: np.ndarray
    lengths: np.ndarray
    terms: dict[str, int]
    offsets: np.ndarray
    slots: np.ndarray
    halves: np.ndarray
    alive: np.ndarray | None = None
    changed: dict[int, dict[str, int]] = field(default_factory=dict)
    changed_lengths: dict[int, int] = field(default_factory=dict)
    by_term: dict[str, dict[int, int]] = field(default_factory=dict)
    # bm25's length term of every slot, K1·(1 − B + B·length/avgdl), for the avgdl it was
    # computed at: a search gathers it instead of computing it again for each word's postings
    _norm: tuple[float, np.ndarray] | None = field(default=None, repr=False, compare=False)

    def postings(self, term: str) -> tuple[np.ndarray, np.ndarray]:
        """(live base slots, their halves) of `term`."""
        p = self.terms.get(term)
        if p is None:
            return _EMPTY_INT, _EMPTY_INT
        lo, hi = int(self.offsets[p]), int(self.offsets[p + 1])
        slots, halves = self.slots[lo:hi], self.halves[lo:hi]
        if self.alive is not None:
            live = self.alive[slots]
            slots, halves = slots[live], halves[live]
        return slots, halves

    def count(self, term: str) -> int:
        """Rows of the table whose content or context columns hold `term` (bm25's n)."""
        p = self.terms.get(term)
        base = 0
        if p is not None:
            if self.alive is None:
                base = int(self.offsets[p + 1] - self.offsets[p])
            else:
                base = int(np.count_nonzero(
                    self.alive[self.slots[int(self.offsets[p]):int(self.offsets[p + 1])]]))
        return base + len(self.by_term.get(term, ()))

    def matches(self, terms: Sequence[str]) -> np.ndarray:
        """Rowids of the rows matching any of `terms`, ascending."""
        parts = [self.rowids[self.postings(t)[0]] for t in dict.fromkeys(terms)]
        parts += [np.fromiter(sorted(self.by_term[t]), dtype=np.int64)
                  for t in dict.fromkeys(terms) if self.by_term.get(t)]
        parts = [p for p in parts if p.size]
        if len(parts) == 1:
            return parts[0]   # one word's base postings: ascending and distinct already
        return np.unique(np.concatenate(parts)) if parts else _EMPTY_INT

    def rows_from(self, floor: int, cap: int) -> int:
        """Rows of the table at or above rowid `floor`, counted up to `cap`."""
        start = int(np.searchsorted(self.rowids, floor))
        base = (len(self.rowids) - start if self.alive is None
                else int(np.count_nonzero(self.alive[start:])))
        return min(cap, base + sum(1 for r in self.changed_lengths if r >= floor))

    def rank(self, terms: Sequence[str], floor: int = 0) -> tuple[np.ndarray, np.ndarray]:
        """(rowids, scores) of every row at or above `floor` matching any of `terms` (one
        FTS5 phrase each, repeats included, in this order), best first, ties by rowid."""
        avgdl = float(self.tokens) / float(self.rows) if self.rows else 0.0
        start = int(np.searchsorted(self.rowids, floor))
        window = np.zeros(len(self.rowids) - start)
        extra: dict[int, float] = {}
        touched: list[np.ndarray] = []
        for term in terms:
            n = self.count(term)
            if not n:
                continue
            idf = math.log((self.rows - n + 0.5) / (n + 0.5))
            if idf <= 0.0:
                idf = IDF_FLOOR
            slots, halves = self.postings(term)
            if start:
                cut = int(np.searchsorted(slots, start))
                slots, halves = slots[cut:], halves[cut:]
            if len(slots):
                touched.append(slots)
                freq = halves.astype(np.float64) / 2.0
                window[slots - start] += idf * ((freq * (K1 + 1.0))
                                                / (freq + self._length_norm(avgdl)[slots]))
            for rowid, half in self.by_term.get(term, {}).items():
                if rowid >= floor:
                    f = half / 2.0
                    length = float(self.changed_lengths[rowid])
                    extra[rowid] = extra.get(rowid, 0.0) + idf * (
                        (f * (K1 + 1.0)) / (f + K1 * (1 - B + B * length / avgdl)))
        hit = touched[0] if len(touched) == 1 else _union(touched, start, len(window))
        ids = self.rowids[hit]
        scores = window[hit - start]
        if extra:
            ids = np.concatenate([ids, np.fromiter(extra, dtype=np.int64, count=len(extra))])
            scores = np.concatenate([scores, np.fromiter(extra.values(), dtype=np.float64,
                                                         count=len(extra))])
        order = np.lexsort((ids, -scores))
        return ids[order], scores[order]

    def _length_norm(self, avgdl: float) -> np.ndarray:
        """K1·(1 − B + B·length/avgdl) of every slot: the same operations on the same floats
        as on a word's postings alone (element by element), so the same values."""
        held = self._norm
        if held is None or held[0] != avgdl:
            held = self._norm = (avgdl, K1 * (1 - B + B * self.lengths / avgdl))
        return held[1]

    def apply(self, rows: dict[int, dict[str, int]], lengths: dict[int, int],
              gone: Iterable[int]) -> None:
        """Rows re-read after this connection wrote them (`rows`, with their `lengths`) and
        rows no longer in the table (`gone`) replace what the arrays held for them."""
        for rowid in list(rows) + list(gone):
            for term in self.changed.get(rowid, {}):
                held = self.by_term.get(term)
                if held is not None:
                    held.pop(rowid, None)
                    if not held:
                        del self.by_term[term]
            slot = int(np.searchsorted(self.rowids, rowid))
            if slot < len(self.rowids) and int(self.rowids[slot]) == rowid:
                if self.alive is None:
                    self.alive = np.ones(len(self.rowids), dtype=bool)
                self.alive[slot] = False
            self.changed[rowid] = {}
            self.changed_lengths.pop(rowid, None)
        for rowid, words in rows.items():
            self.changed[rowid] = words
            self.changed_lengths[rowid] = lengths[rowid]
            for term, half in words.items():
                self.by_term.setdefault(term, {})[rowid] = half


_EMPTY_INT = np.zeros(0, dtype=np.int64)


def _union(parts: list[np.ndarray], start: int, size: int) -> np.ndarray:
    """The distinct slots of `parts` (each ascending, all in [start, start + size)),
    ascending: marked in a window-sized mask and read back in order, which is what
    `np.unique` of their concatenation gives without its sort (most of a search's ranking
    time at 100k memories when a query has several words)."""
    if not parts:
        return np.zeros(0, dtype=np.int32)
    seen = np.zeros(size, dtype=bool)
    for slots in parts:
        seen[slots - start] = True
    return np.flatnonzero(seen) + start


class Stopped(Exception):
    """The store closed while a chat was being read."""


def read_chat(path: Path, table: str, stop: threading.Event | None = None) -> ChatKeywords:
    """Every word instance of `table` (the chat's recall table) read on a read-only connection
    of its own, in one read transaction, with the stamp it was read at. Blocking: run it in a
    worker thread. Read a few hundred thousand instances at a time, each part reduced to
    (slot, halves) at once, so the peak stays near the result's size."""
    conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    try:
        conn.execute(f"CREATE VIRTUAL TABLE temp.kw_i USING fts5vocab(main, {table}, instance)")
        conn.execute(f"CREATE VIRTUAL TABLE temp.kw_r USING fts5vocab(main, {table}, row)")
        conn.execute("BEGIN")
        try:
            stamp = _stamp(conn, table)
            sizes = conn.execute(f"SELECT id, sz FROM {table}_docsize ORDER BY id").fetchall()  # noqa: S608
            rowids = np.array([r[0] for r in sizes], dtype=np.int64)
            lengths = np.array([sum(varints(r[1])) for r in sizes], dtype=np.float64)
            del sizes
            vocab = [t for t, in conn.execute("SELECT term FROM temp.kw_r")]
            counts = np.array([c for c, in conn.execute("SELECT cnt FROM temp.kw_r")],
                              dtype=np.int64)
            if counts.size != len(vocab):
                raise RuntimeError(f"{table}: words changed while read")
            ends = np.cumsum(counts)
            slots: list[np.ndarray] = []
            halves: list[np.ndarray] = []
            per_term = np.zeros(len(vocab), dtype=np.int64)
            first = 0
            while first < len(vocab):
                if stop is not None and stop.is_set():   # closing: do not hold the exit
                    raise Stopped(table)
                done = int(ends[first - 1]) if first else 0
                last = min(len(vocab) - 1,
                           max(first, int(np.searchsorted(ends, done + _CHUNK_INSTANCES)) - 1))
                row = conn.execute(
                    f"SELECT group_concat(doc), group_concat({_COLUMN_HALVES}, '') "  # noqa: S608
                    "FROM temp.kw_i WHERE term >= ? AND term <= ?",
                    (vocab[first], vocab[last])).fetchone()
                doc = (np.array(row[0].split(","), dtype=np.int64) if row[0]
                       else _EMPTY_INT)
                weight = (np.frombuffer((row[1] or "").encode("ascii"), dtype=np.uint8)
                          - np.uint8(48))
                part = counts[first:last + 1]
                if doc.size != int(part.sum()) or weight.size != doc.size:
                    raise RuntimeError(f"{table}: instances changed while read")
                term = np.repeat(np.arange(first, last + 1, dtype=np.int32), part)
                keep = weight > 0
                doc, weight, term = doc[keep], weight[keep], term[keep]
                new = np.flatnonzero(np.r_[True, (doc[1:] != doc[:-1])
                                           | (term[1:] != term[:-1])])
                if new.size:
                    halves.append(np.add.reduceat(weight.astype(np.uint16), new).astype(np.uint16))
                    slots.append(np.searchsorted(rowids, doc[new]).astype(np.int32))
                    per_term[first:last + 1] = np.bincount(term[new] - first,
                                                           minlength=last + 1 - first)
                first = last + 1
        finally:
            conn.execute("COMMIT")
    finally:
        conn.close()
    rows, tokens = totals(stamp[0])   # type: ignore[arg-type]
    return ChatKeywords(
        stamp=stamp, version=-1, rows=rows, tokens=tokens, rowids=rowids, lengths=lengths,
        terms={t: i for i, t in enumerate(vocab)},
        offsets=np.concatenate([[0], np.cumsum(per_term)]),
        slots=np.concatenate(slots) if slots else np.zeros(0, dtype=np.int32),
        halves=np.concatenate(halves) if halves else np.zeros(0, dtype=np.uint16))


def _trim() -> None:
    """Hand the build's freed scratch memory back to the OS: glibc keeps a worker thread's
    freed heap otherwise (~70 MB after reading a 100k-memory chat). Elsewhere a no-op."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6").malloc_trim(0)


def _stamp(conn: sqlite3.Connection, table: str) -> tuple[object, ...]:
    row = conn.execute(
        f"SELECT (SELECT block FROM {table}_data WHERE id = 1), "  # noqa: S608
        f"(SELECT block FROM {table}_data WHERE id = 10), "
        "(SELECT schema_version FROM pragma_schema_version)").fetchone()
    return (row[0], row[1], row[2])


_INSTALL = (
    # AUTOINCREMENT: a seq is never handed out again once the log was emptied, so a read
    # that began at seq n never mistakes a later write for one it has seen
    f"CREATE TABLE IF NOT EXISTS {LOG_TABLE}(seq INTEGER PRIMARY KEY AUTOINCREMENT, "
    "chat_id TEXT NOT NULL, "
    "id INTEGER NOT NULL, deleted INTEGER NOT NULL DEFAULT 0)",
    f"CREATE TABLE IF NOT EXISTS {WATCHED}(chat_id TEXT PRIMARY KEY)",
    "CREATE TEMP TRIGGER IF NOT EXISTS recall_kw_ai AFTER INSERT ON main.memories "  # noqa: S608
    f"WHEN new.chat_id IN (SELECT chat_id FROM {_WATCHED}) "
    f"BEGIN INSERT INTO {_LOG}(chat_id, id) VALUES (new.chat_id, new.id); END",
    "CREATE TEMP TRIGGER IF NOT EXISTS recall_kw_ad AFTER DELETE ON main.memories "  # noqa: S608
    f"WHEN old.chat_id IN (SELECT chat_id FROM {_WATCHED}) "
    f"BEGIN INSERT INTO {_LOG}(chat_id, id, deleted) VALUES (old.chat_id, old.id, 1); END",
    "CREATE TEMP TRIGGER IF NOT EXISTS recall_kw_au AFTER UPDATE OF content, key, summary, "  # noqa: S608
    "status, chat_id ON main.memories "
    f"WHEN new.chat_id IN (SELECT chat_id FROM {_WATCHED}) "
    f"OR old.chat_id IN (SELECT chat_id FROM {_WATCHED}) "
    f"BEGIN INSERT INTO {_LOG}(chat_id, id) VALUES (new.chat_id, new.id); "
    f"INSERT INTO {_LOG}(chat_id, id) VALUES (old.chat_id, old.id); END",
)


class KeywordMemory:
    """Each large chat's `ChatKeywords`, kept current with the database (module docstring);
    one per store connection. `view` never waits: a chat not ready is ranked by FTS5."""

    CHATS = 8               # chats held at once (least recently used leave first)
    CATCH_UP = 2_000        # logged rows re-read in place; more rebuild the chat instead

    def __init__(self, conn: Any, lock: asyncio.Lock, path: Path, tokenizer: str,
                 min_rows: int = 0) -> None:
        self.conn = conn
        self.lock = lock
        self.path = path
        self.min_rows = min_rows
        self.tokens = Tokens(tokenizer)
        self._chats: OrderedDict[tuple[str, str], ChatKeywords] = OrderedDict()
        self._building: dict[tuple[str, str], asyncio.Task[None]] = {}
        self._installed = False
        self._stop = threading.Event()
        self.builds = 0      # full reads done, and searches the arrays served (tests, benchmarks)
        self.served = 0

    async def _install(self) -> None:
        if not self._installed:
            for sql in _INSTALL:
                await self.conn.execute(sql)
            self._installed = True

    def forget(self, chat: str) -> None:
        """Drop the chat's arrays (its table failed): the next search reads them again."""
        for key in [k for k in self._chats if k[0] == chat]:
            del self._chats[key]

    async def view(self, chat: str, table: str) -> ChatKeywords | None:
        """The chat's arrays as its table stands now; None (rank with FTS5) while they are
        being built, while a transaction is open, or when the chat is below `min_rows`."""
        if self.lock.locked():
            return None
        async with self.lock:   # no transaction open: nothing uncommitted is read
            key = (chat, table)
            held = self._chats.get(key)
            if held is None:
                if key not in self._building and await self._rows(table) >= max(1, self.min_rows):
                    await self._install()
                    await self.conn.execute(
                        f"INSERT OR IGNORE INTO {WATCHED}(chat_id) VALUES (?)", (chat,))  # noqa: S608
                    _, version, last, _ = await self._state(chat, table)
                    self._building[key] = asyncio.create_task(
                        self._build(key, version, last))
                return None
            stamp, version, last, logged = await self._state(chat, table)
            if held.stamp != stamp:
                if (held.version != version or held.stamp[2] != stamp[2]
                        or logged > self.CATCH_UP):
                    await self._drop(key)   # read again from the next search on
                    return None
                deleted = await self._catch_up(held, chat, table, last)
                if (deleted or len(held.changed) > self.CATCH_UP) and key not in self._building:
                    # a memory was deleted (forget, erase, purge): its words are out of every
                    # count already; read the chat again so not even their strings stay here.
                    # Many rows re-read (kept in dicts, ranked in Python): fold them in too.
                    self._building[key] = asyncio.create_task(self._build(key, version, last))
                held.stamp = stamp
                held.rows, held.tokens = totals(stamp[0])  # type: ignore[arg-type]
            elif logged:
                await self._clear(chat, last)
            held.version = version
            self._chats.move_to_end(key)
            self.served += 1
            return held

    async def _drop(self, key: tuple[str, str]) -> None:
        """Forget a chat's arrays and stop logging its writes (under the lock)."""
        self._chats.pop(key, None)
        if not any(k[0] == key[0] for k in [*self._chats, *self._building]):
            await self.conn.execute(f"DELETE FROM {WATCHED} WHERE chat_id = ?", (key[0],))  # noqa: S608
            await self.conn.execute(f"DELETE FROM {LOG_TABLE} WHERE chat_id = ?", (key[0],))  # noqa: S608

    async def _rows(self, table: str) -> int:
        [row] = await self.conn.execute_fetchall(
            f"SELECT (SELECT block FROM {table}_data WHERE id = 1)")  # noqa: S608
        return totals(row[0])[0]

    async def _state(self, chat: str, table: str) -> tuple[tuple[object, ...], int, int, int]:
        """(the table's stamp, data_version, the chat's last logged seq, rows logged), one
        statement, so all four describe the same snapshot."""
        [row] = await self.conn.execute_fetchall(
            "SELECT " + self.state_sql(table), (chat, chat))
        return (row[0], row[1], row[2]), int(row[3]), int(row[4]), int(row[5])

    @staticmethod
    def state_sql(table: str) -> str:
        """The six columns of `_state` (two parameters: the chat, twice), for a statement
        that reads something else in the same snapshot."""
        return (f"(SELECT block FROM {table}_data WHERE id = 1), "  # noqa: S608
                f"(SELECT block FROM {table}_data WHERE id = 10), "
                "(SELECT schema_version FROM pragma_schema_version), "
                "(SELECT data_version FROM pragma_data_version), "
                f"(SELECT coalesce(max(seq), 0) FROM {LOG_TABLE} WHERE chat_id = ?), "
                f"(SELECT count(*) FROM {LOG_TABLE} WHERE chat_id = ?)")

    def peek(self, chat: str, table: str) -> ChatKeywords | None:
        """The chat's arrays as last checked, without reading anything: a search ranks on them
        and checks `is_current` in the statement that re-reads its ids (one trip instead of
        two); when they were not current it asks `view`. None while a transaction is open."""
        if self.lock.locked():
            return None
        return self._chats.get((chat, table))

    def is_current(self, held: ChatKeywords, state: Sequence[Any]) -> bool:
        """Whether `state` (the `state_sql` columns) shows nothing changed since `held` was
        checked: the same stamp and data_version, no write of this connection logged."""
        current = (tuple(state[:3]) == held.stamp and int(state[3]) == held.version
                   and not int(state[5]))
        if current:
            self.served += 1
        return current

    async def _catch_up(self, held: ChatKeywords, chat: str, table: str, last: int) -> bool:
        """Re-read the rows this connection wrote since (logged up to `last`); whether one
        of them was deleted from `memories`."""
        logged = await self.conn.execute_fetchall(
            f"SELECT id, max(deleted) FROM {LOG_TABLE} WHERE chat_id = ? AND seq <= ? "  # noqa: S608
            "GROUP BY id", (chat, last))
        ids = [int(r[0]) for r in logged]
        log.debug("catch up %s to %d: %s", chat, last, [tuple(r) for r in logged])
        rows: list[Any] = []
        sizes: dict[int, int] = {}
        for start in range(0, len(ids), 500):
            chunk = ids[start:start + 500]
            marks = ",".join("?" * len(chunk))
            rows += await self.conn.execute_fetchall(
                f"SELECT rowid, content, key, summary, ctx1, ctx2 FROM {table} "  # noqa: S608
                f"WHERE rowid IN ({marks})", chunk)
            sizes.update((int(r[0]), sum(varints(r[1]))) for r in await self.conn.execute_fetchall(
                f"SELECT id, sz FROM {table}_docsize WHERE id IN ({marks})", chunk))  # noqa: S608
        words = await asyncio.to_thread(self.tokens.rows, [tuple(r) for r in rows])
        held.apply(words, sizes, [i for i in ids if i not in words])
        await self._clear(chat, last)
        return any(r[1] for r in logged)

    async def _clear(self, chat: str, last: int, *, read: bool = False) -> None:
        """Drop the chat's log up to `last`, once caught up on. Not while the chat is being
        read again (unless this is that read ending, `read`): the new arrays come from a
        snapshot that may predate what was caught up on, so they catch up on it again."""
        if not read and any(k[0] == chat for k in self._building):
            return
        await self.conn.execute(
            f"DELETE FROM {LOG_TABLE} WHERE chat_id = ? AND seq <= ?", (chat, last))  # noqa: S608

    async def _build(self, key: tuple[str, str], version: int, last: int) -> None:
        """Read the chat's table in a worker thread; writes logged after `last` (the log's
        end when the read began) are caught up on by the next `view`."""
        chat, table = key
        try:
            log.debug("read %s from %d, version %d", chat, last, version)
            held = await asyncio.to_thread(read_chat, self.path, table, self._stop)
            await asyncio.to_thread(_trim)
            held.version = version
            self.builds += 1
            async with self.lock:
                await self._clear(chat, last, read=True)
                self._chats[key] = held
                while len(self._chats) > self.CHATS:
                    await self._drop(next(iter(self._chats)))
            log.info("keyword arrays of chat %s: %d rows, %d postings", chat,
                     held.rowids.size, held.slots.size)
        except Stopped:
            return
        except (sqlite3.Error, RuntimeError, OSError):
            log.warning("could not read chat %s's keyword table; FTS5 ranks it", chat,
                        exc_info=True)
            self._building.pop(key, None)
            async with self.lock:
                await self._drop(key)
        finally:
            self._building.pop(key, None)

    async def ready(self, chat: str, table: str) -> bool:
        """Build the chat's arrays now if they are due (a warm-up); whether they are held."""
        if await self.view(chat, table) is not None:
            return True
        task = self._building.get((chat, table))
        if task is not None:
            await asyncio.shield(task)
        return (chat, table) in self._chats

    async def close(self) -> None:
        """Stop reading (a worker thread ends within one part of the read, so closing a
        store, e.g. at the end of a `rumi memory` command, does not wait for a whole chat)."""
        self._stop.set()
        for task in list(self._building.values()):
            task.cancel()
        await asyncio.gather(*self._building.values(), return_exceptions=True)
        self.tokens.close()

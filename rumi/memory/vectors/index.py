"""Per-chat usearch indexes: `data_dir/vectors/<chat_id>.usearch` (+ `.json` sidecar).

One index per chat makes isolation structural: a search can only ever return ids of the chat
whose file was opened, and purging or rebuilding one chat never touches another. Keys are
memory ids, metric cosine. The index is a cache of SQLite (which stores every vector), so any
doubt — missing or truncated file, checksum or model mismatch, different id set — is answered
by `rebuild`. Saves are atomic (temp + fsync + rename) and debounced; every usearch call runs
in a worker thread under a per-chat lock.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import mmap
import os
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from rumi.fileio import atomic_write_bytes, fsync_dir, sha256_file
from rumi.memory.store.codec import check_chat_id, vector_label

if TYPE_CHECKING:
    from usearch.index import Index

    from rumi.config import MemorySettings
    from rumi.memory.vectors.embeddings import Embedder

log = logging.getLogger(__name__)


def _index_class() -> type[Index]:
    """usearch's `Index`, imported on first use rather than when Rumi starts.

    Importing onnxruntime and usearch costs ~34 MiB of RSS; an idle bot (or one with the model
    unavailable, or a CLI command that never searches) should not pay it (issue 6: idle
    ≤ 150 MB on a Pi). The order is load-bearing: onnxruntime (fastembed) segfaults when first
    imported AFTER usearch (onnxruntime 1.31, usearch 2.26, x86-64 Linux), so it is imported
    first here; Python's import lock makes this safe from worker threads too.
    """
    with contextlib.suppress(ImportError):
        import onnxruntime  # noqa: F401
    from usearch.index import Index

    return Index


PLACEHOLDER_KEYS = 1 << 63
"""First key of the placeholders `erase` writes into freed slots (memory ids stay below)."""


def _placeholders(n: int, ndim: int) -> tuple[np.ndarray, np.ndarray]:
    """`n` keys no memory has and as many random unit vectors (a fixed seed: nothing in
    them depends on what was erased)."""
    matrix = np.random.default_rng(0).standard_normal((n, ndim)).astype(np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    return np.arange(PLACEHOLDER_KEYS, PLACEHOLDER_KEYS + n, dtype=np.uint64), matrix


def _as_list(vectors: Any) -> list[Any]:
    """usearch's `get` of several keys: a matrix or a tuple of vectors, by version."""
    return [v for v in vectors if v is not None]


def _holds_any(path: Path, patterns: list[bytes]) -> bool:
    """Whether the file contains any of `patterns` (erased vectors' bytes)."""
    if not patterns:
        return False
    with path.open("rb") as fh:
        if os.fstat(fh.fileno()).st_size == 0:
            return False
        with mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as view:
            return any(view.find(p) >= 0 for p in patterns)


@dataclass
class _ChatIndex:
    index: Index
    dirty: bool = False
    removed: int = 0
    last_save: float = field(default_factory=time.monotonic)



class VectorIndex:
    """Cosine search over one chat's memory vectors."""

    def __init__(
        self, directory: Path, ndim: int, model_name: str, *, save_interval: float = 30.0
    ) -> None:
        self.directory = directory
        self.ndim = ndim
        self.model_name = model_name
        self.save_interval = save_interval
        self._chats: dict[str, _ChatIndex] = {}
        self._locks: dict[str, asyncio.Lock] = {}

    @classmethod
    def of_data_dir(cls, data_dir: Path, embedder: Embedder,
                    memory: MemorySettings) -> VectorIndex:
        """The index a store in `data_dir` keeps, built exactly as the bot builds it: in
        `data_dir/vectors`, labelled with the model and the vector-context recipe
        (`codec.vector_label`), saved every `memory.vector_save_interval_seconds`.

        The one place that says so (the store's factory, `rumi store migrate`, the benchmarks
        and tests): an index labelled with the bare model name over vectors embedded with
        the question context would be re-embedded the next time the bot opened it."""
        return cls(data_dir / "vectors", embedder.dim,
                   vector_label(embedder.model_name, memory.recall_vector_context),
                   save_interval=memory.vector_save_interval_seconds)

    def _lock(self, chat_id: str) -> asyncio.Lock:
        return self._locks.setdefault(chat_id, asyncio.Lock())

    def paths(self, chat_id: str) -> tuple[Path, Path]:
        check_chat_id(chat_id)
        return (self.directory / f"{chat_id}.usearch", self.directory / f"{chat_id}.json")

    def _new_index(self) -> Index:
        return _index_class()(ndim=self.ndim, metric="cos", dtype="f32")

    def _load_sync(self, chat_id: str) -> Index | None:
        """The saved index if its file is intact and was built for this model, else None."""
        path, meta_path = self.paths(chat_id)
        if not path.exists() or not meta_path.exists():
            return None
        try:
            meta = json.loads(meta_path.read_text(encoding="utf-8"))
            if meta.get("model") != self.model_name or meta.get("ndim") != self.ndim:
                log.info("vector index %s built for another model; rebuilding", chat_id)
                return None
            if path.stat().st_size != meta.get("size") or sha256_file(path) != meta.get("sha256"):
                log.warning("vector index %s is damaged (size/checksum); rebuilding", chat_id)
                return None
            index = self._new_index()
            index.load(str(path))
        except (OSError, ValueError, RuntimeError, TypeError, AttributeError):
            log.warning("vector index %s unreadable; rebuilding", chat_id, exc_info=True)
            return None
        return index

    def _get_sync(self, chat_id: str) -> _ChatIndex:
        entry = self._chats.get(chat_id)
        if entry is None:
            index = self._load_sync(chat_id) or self._new_index()
            entry = self._chats[chat_id] = _ChatIndex(index)
        return entry

    def _save_sync(self, chat_id: str, entry: _ChatIndex) -> None:
        path, meta_path = self.paths(chat_id)
        self.directory.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        entry.index.save(str(tmp))
        with tmp.open("rb+") as fh:
            os.fsync(fh.fileno())
        meta = {
            "model": self.model_name,
            "ndim": self.ndim,
            "count": len(entry.index),
            "size": tmp.stat().st_size,
            "sha256": sha256_file(tmp),
        }
        os.replace(tmp, path)
        atomic_write_bytes(meta_path, json.dumps(meta).encode())
        with contextlib.suppress(OSError):
            fsync_dir(self.directory)
        entry.dirty = False
        entry.last_save = time.monotonic()

    def _maybe_save_sync(self, chat_id: str, entry: _ChatIndex) -> None:
        if entry.dirty and time.monotonic() - entry.last_save >= self.save_interval:
            self._save_sync(chat_id, entry)

    @staticmethod
    def _as_matrix(vectors: Any, n: int, ndim: int) -> np.ndarray:
        matrix = np.ascontiguousarray(vectors, dtype=np.float32).reshape(n, ndim)
        return matrix

    async def add(self, chat_id: str, ids: Sequence[int], vectors: Any) -> None:
        """Insert or replace vectors under memory ids."""
        if len(ids) == 0:
            return
        keys = np.asarray(list(ids), dtype=np.uint64)
        matrix = self._as_matrix(vectors, len(keys), self.ndim)

        def work() -> None:
            entry = self._get_sync(chat_id)
            present = keys[np.asarray(entry.index.contains(keys), dtype=bool).reshape(-1)]
            if len(present):
                entry.index.remove(present)
                entry.removed += len(present)
            entry.index.add(keys, matrix)
            entry.dirty = True
            self._maybe_save_sync(chat_id, entry)

        async with self._lock(chat_id):
            await asyncio.to_thread(work)

    async def remove(self, chat_id: str, ids: Iterable[int]) -> int:
        keys = np.asarray(list(ids), dtype=np.uint64)
        if len(keys) == 0:
            return 0

        def work() -> int:
            entry = self._get_sync(chat_id)
            present = keys[np.asarray(entry.index.contains(keys), dtype=bool).reshape(-1)]
            if len(present):
                entry.index.remove(present)
                entry.removed += len(present)
                entry.dirty = True
                self._maybe_save_sync(chat_id, entry)
            return len(present)

        async with self._lock(chat_id):
            return await asyncio.to_thread(work)

    async def erase(self, chat_id: str, ids: Iterable[int]) -> bool:
        """Remove `ids` so that no copy of their vectors is left, in memory or on disk, and
        save now; False when a copy could not be ruled out (the caller rebuilds instead).

        usearch's `remove` only marks a slot free: the vector stays in memory and in every
        later save until a new vector takes the slot. So the freed slots are filled with
        placeholder vectors (random, the same every time) under keys no memory has, which are
        then removed in turn; the saved file is scanned for the erased vectors' bytes before
        it is trusted. This costs one save (and one pass over the file) instead of a rebuild
        of the chat's whole graph (minutes at 20k memories on a loaded Pi-class machine).
        """
        keys = np.unique(np.asarray(list(ids), dtype=np.uint64))
        if len(keys) == 0:
            return True

        def work() -> bool:
            entry = self._get_sync(chat_id)
            present = keys[np.asarray(entry.index.contains(keys), dtype=bool).reshape(-1)]
            gone = [np.asarray(v, dtype=np.float32).tobytes()
                    for v in _as_list(entry.index.get(present))] if len(present) else []
            if len(present):
                entry.index.remove(present)
            free = int(entry.index.stats.nodes) - len(entry.index)
            if free > 0:
                fill = _placeholders(free, self.ndim)
                entry.index.add(fill[0], fill[1])
                entry.index.remove(fill[0])
            entry.removed += len(present)
            self._save_sync(chat_id, entry)
            return not _holds_any(self.paths(chat_id)[0], gone)

        async with self._lock(chat_id):
            return await asyncio.to_thread(work)

    async def search(self, chat_id: str, vector: Any, limit: int) -> list[tuple[int, float]]:
        """Nearest memory ids with cosine similarity, best first."""
        if limit <= 0:
            return []
        query = np.ascontiguousarray(vector, dtype=np.float32).reshape(self.ndim)

        def work() -> list[tuple[int, float]]:
            entry = self._get_sync(chat_id)
            if len(entry.index) == 0:
                return []
            matches = entry.index.search(query, min(limit, len(entry.index)))
            return [
                (int(k), float(1.0 - d))
                for k, d in zip(matches.keys, matches.distances, strict=False)
            ]

        async with self._lock(chat_id):
            return await asyncio.to_thread(work)

    async def stored(self, chat_id: str, ids: Iterable[int]) -> dict[int, np.ndarray]:
        """The vectors the chat's index holds for these ids (ids it lacks left out); {}
        when the index is not loaded in this process (it is never loaded for this).

        The index keeps the float32 vectors it was given, unnormalised: the bytes stored in
        SQLite. Recall reads its keyword-only candidates' vectors here instead of loading
        a 1.5 KB blob per row from SQLite (docs/benchmarks.md, "Less work per recall").
        A lookup is ~1 µs per id, so it runs on the event loop, under the chat's lock so
        that no add, erase or rebuild changes the index meanwhile."""
        entry = self._chats.get(chat_id)
        if entry is None:
            return {}
        keys = np.fromiter((int(i) for i in ids), dtype=np.uint64)
        if not len(keys):
            return {}
        async with self._lock(chat_id):
            entry = self._chats.get(chat_id)
            if entry is None:
                return {}
            found = entry.index.get(keys)
        return {int(key): vector for key, vector in zip(keys, found, strict=True)
                if vector is not None}

    async def rebuild(self, chat_id: str, ids: Sequence[int], vectors: Any) -> None:
        """Replace the chat's index with exactly these vectors (compacts deletions) and save."""
        keys = np.asarray(list(ids), dtype=np.uint64)
        matrix = self._as_matrix(vectors, len(keys), self.ndim) if len(keys) else None

        def work() -> None:
            index = self._new_index()
            if matrix is not None:
                index.add(keys, matrix)
            entry = self._chats[chat_id] = _ChatIndex(index)
            self._save_sync(chat_id, entry)

        async with self._lock(chat_id):
            await asyncio.to_thread(work)
        log.info("vector index %s rebuilt with %d vectors", chat_id, len(keys))

    async def verify(self, chat_id: str, expected_ids: Iterable[int]) -> bool:
        """True if the chat's index holds exactly `expected_ids` (loading it from disk).

        The keys are read as one slice: iterating usearch's key view fetches each key with a
        lookup of its own, ~80 s at 100k memories (extrapolated), and it blocked the chat's
        first recall after a restart; the slice takes milliseconds.
        """
        expected = np.unique(np.fromiter((int(i) for i in expected_ids), dtype=np.uint64))

        def work() -> bool:
            entry = self._get_sync(chat_id)
            size = len(entry.index)
            if size != len(expected):
                return False
            keys = np.asarray(entry.index.keys[:size], dtype=np.uint64)
            return bool(np.array_equal(np.unique(keys), expected))

        async with self._lock(chat_id):
            return await asyncio.to_thread(work)

    def removed(self, chat_id: str) -> int:
        """Deletions usearch has only marked since the last rebuild (compaction candidates)."""
        entry = self._chats.get(chat_id)
        return entry.removed if entry else 0

    def count(self, chat_id: str) -> int | None:
        entry = self._chats.get(chat_id)
        return len(entry.index) if entry else None

    async def flush(self, chat_id: str | None = None) -> None:
        """Save dirty indexes now (all chats, or one)."""
        for cid in [chat_id] if chat_id else list(self._chats):
            entry = self._chats.get(cid)
            if entry is None or not entry.dirty:
                continue
            async with self._lock(cid):
                try:
                    await asyncio.to_thread(self._save_sync, cid, entry)
                except (OSError, RuntimeError, ValueError):
                    # not fatal: the next start finds the file stale and rebuilds from SQLite
                    log.exception("could not save vector index %s", cid)

    async def drop(self, chat_id: str) -> None:
        """Forget the chat's index in memory and on disk."""
        async with self._lock(chat_id):
            self._chats.pop(chat_id, None)
            for path in self.paths(chat_id):
                await asyncio.to_thread(path.unlink, True)

    async def close(self) -> None:
        await self.flush()
        self._chats.clear()

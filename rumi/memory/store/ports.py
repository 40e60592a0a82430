"""What the store needs from an embedder and a vector index, as protocols.

The store keeps the vectors (SQLite is their source of truth) and mirrors them into an index;
naming only these methods keeps it free of fastembed and usearch, and lets `vectors/` (which
builds the real ones) sit beside the store without the two importing each other.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Protocol

import numpy as np


class TextEmbedder(Protocol):
    """`vectors.embeddings.Embedder` as the store uses it."""

    dim: int
    available: bool

    async def embed(self, texts: list[str]) -> np.ndarray | None: ...

    async def embed_query(self, text: str) -> np.ndarray | None: ...

    def status(self) -> dict[str, Any]: ...

    def start_loading(self) -> None: ...


class ChatVectors(Protocol):
    """`vectors.index.VectorIndex` as the store uses it: one cosine index per chat."""

    ndim: int
    model_name: str

    async def add(self, chat_id: str, ids: Sequence[int], vectors: Any) -> None: ...

    async def remove(self, chat_id: str, ids: Iterable[int]) -> int: ...

    async def erase(self, chat_id: str, ids: Iterable[int]) -> bool: ...

    async def search(self, chat_id: str, vector: Any, limit: int) -> list[tuple[int, float]]: ...

    async def rebuild(self, chat_id: str, ids: Sequence[int], vectors: Any) -> None: ...

    async def stored(self, chat_id: str, ids: Iterable[int]) -> dict[int, Any]: ...

    async def verify(self, chat_id: str, expected_ids: Iterable[int]) -> bool: ...

    def removed(self, chat_id: str) -> int: ...

    async def close(self) -> None: ...


class QueryTerms(Protocol):
    """`recall.query.QueryPlan` as the keyword index reads it: the words worth searching."""

    @property
    def terms(self) -> tuple[str, ...]: ...

    # Optional (read with getattr): term → the same word in the other language, used by
    # SQLite's keyword index for the terms a chat never said (`recall.translate`).
    # alternatives: Mapping[str, tuple[str, ...]]

"""The memory store's public API, as the rest of Rumi sees it.

Two stores implement it: `memories.MemoryStore` (SQLite `rumi.db` + usearch, the default) and
`postgres.store.PgMemoryStore` (seed 001's `cto` schema with pgvector). Only
`backend.open_store` knows which one runs; recall, learning, the files, the commands, the app
and the doctor name this Protocol, so no aiosqlite or psycopg type leaks out of the store wing.
Every method takes the chat id first: one chat never sees another's memories.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any, Protocol

import numpy as np

from rumi.config import MemorySettings
from rumi.memory.store.blocks import BlockRows
from rumi.memory.store.codec import SaveResult
from rumi.memory.store.editing import Forgotten
from rumi.memory.store.models import Memory, MemoryStatus, MemoryType, NewMemory, RecallRow
from rumi.memory.store.ports import QueryTerms, TextEmbedder
from rumi.memory.store.tape_rows import TapeRows
from rumi.memory.store.transfer import ImportReport
from rumi.memory.store.translations import Translated, Untranslated


class KeywordCandidates(Protocol):
    """Recall's keyword half: BM25-like hits of one chat, best first (`recall_index` on
    SQLite, `tsvector` ranking in Spanish and English on PostgreSQL)."""

    async def search(self, chat: str, query: QueryTerms, limit: int, doc_budget: int = ...,
                     *, rank_common_words: bool = ...) -> list[tuple[int, float]]: ...

    async def prepare(self, chat: str) -> bool:
        """Read ahead what the chat's searches will rank from (a start's warm-up); whether
        anything is held."""
        ...

    def tokenize_ahead(self, words: Sequence[str]) -> None:
        """Tokenize a coming query's words now (blocking: a worker thread calls it, the
        prefetch), so its search finds them ready; no-op where nothing is tokenized."""
        ...


class MemoryTranslations(Protocol):
    """Each memory machine-translated into the chat's other language (`translations` on
    SQLite, `postgres.translations` on PostgreSQL): what the background translator reads and
    writes, and recall's search of them by a question's own words."""

    # whether recall hands a Spanish question's words as Snowball stems (SQLite indexes
    # Python's stems); False where the store stems them itself (PostgreSQL's `spanish`)
    stems_questions: bool

    async def chats_missing(self) -> list[str]: ...

    async def rebuild_stale(self) -> list[str]: ...

    async def missing(self, chat_id: str, limit: int, after: int = ...
                      ) -> list[Untranslated]: ...

    async def write(self, chat_id: str, done: Sequence[Translated]) -> int: ...

    async def search(self, chat: str, query: QueryTerms, limit: int, doc_budget: int,
                     *, rank_common_words: bool = ...) -> list[tuple[int, float]]: ...


class MemoryStoreAPI(Protocol):
    """What callers outside `rumi/memory/store/` may use of a memory store."""

    settings: MemorySettings
    embedder: TextEmbedder | None
    recovery: Any
    keyword_index: KeywordCandidates
    translations: MemoryTranslations | None
    where: str   # where the memories are, never with a password ("host:port/db", a path)

    @property
    def backend(self) -> str:
        """'sqlite' or 'postgres' (for /status and the doctor)."""
        ...

    @property
    def block_rows(self) -> BlockRows:
        """Where `blocks.BlockStore` keeps context blocks (`rumi.db`, or `cto.blocks`)."""
        ...

    @property
    def tape_db(self) -> TapeRows:
        """Where `tape_index.TapeIndex` keeps its rows (`rumi.db`, or the `rumi` schema of
        the PostgreSQL store)."""
        ...

    @property
    def has_vectors(self) -> bool:
        """Whether semantic search is configured at all (memory.embeddings_enabled)."""
        ...

    @property
    def can_embed(self) -> bool:
        """Whether a query can be embedded now (recall skips the vector half otherwise)."""
        ...

    async def close(self) -> None: ...

    async def watch(self, on_change: Callable[[str], Awaitable[None]]) -> None:
        """Call `on_change(chat)` when another Rumi sharing the store changes that chat's
        memories (PostgreSQL's LISTEN/NOTIFY; SQLite: never)."""
        ...

    # rows
    async def save(self, chat_id: str, new: NewMemory) -> SaveResult: ...

    async def save_many(self, chat_id: str, items: Sequence[NewMemory], *,
                        embed: bool = True) -> list[SaveResult]: ...

    async def get(self, chat_id: str, memory_id: int) -> Memory | None: ...

    async def get_many(self, chat_id: str, ids: Iterable[int]) -> list[Memory]: ...

    async def get_many_with_vectors(
        self, chat_id: str, ids: Iterable[int]) -> tuple[list[Memory], dict[int, np.ndarray]]: ...

    async def recall_rows(self, chat_id: str, ids: Iterable[int]) -> list[RecallRow]: ...

    async def recall_rows_with_vectors(
        self, chat_id: str, ids: Iterable[int]) -> tuple[list[RecallRow], dict[int, np.ndarray]]:
        ...

    async def get_embeddings(self, chat_id: str, ids: Iterable[int]) -> dict[int, np.ndarray]: ...

    async def list(self, chat_id: str, *, types: Iterable[MemoryType | str] | None = None,
                   status: MemoryStatus | str | None = MemoryStatus.ACTIVE,
                   key: str | None = None, limit: int = 100,
                   offset: int = 0) -> list[Memory]: ...

    async def ids_between(self, chat_id: str, spans: Iterable[tuple[datetime, datetime]],
                          limit: int, now: datetime | None = None) -> list[int]: ...

    async def chats(self) -> list[str]: ...

    async def reserve_ids(self, past: int) -> None: ...

    # search
    async def keyword_search(self, chat_id: str, query: str, limit: int = 20, *,
                             match_all: bool = False) -> list[tuple[int, float]]: ...

    async def embed_query(self, text: str) -> np.ndarray | None: ...

    async def vector_search(self, chat_id: str, query: str | np.ndarray,
                            limit: int = 20) -> list[tuple[int, float]]: ...

    async def prepare_vectors(self, chat_id: str) -> bool: ...

    async def nearest(self, chat_id: str, vector: np.ndarray,
                      limit: int) -> list[tuple[int, float]]: ...

    async def mark_accessed(self, chat_id: str, ids: Iterable[int],
                            when: datetime | None = None, *, wait: bool = True) -> None:
        """Count an access of each memory; `wait=False` may write it after returning (every
        read still sees it; closing the store writes it)."""
        ...

    # editing
    async def update(self, chat_id: str, memory_id: int, **fields: Any) -> Memory: ...

    async def supersede(self, chat_id: str, old_id: int, new: NewMemory) -> Memory: ...

    async def forget(self, chat_id: str, *, memory_id: int | None = None,
                     key: str | None = None, text: str | None = None) -> Forgotten: ...

    async def erase(self, chat_id: str, ids: Sequence[int]) -> int: ...

    async def forgotten(self, chat_id: str, hashes: Iterable[str]) -> set[str]: ...

    async def mark_forgotten(self, chat_id: str, hashes: Iterable[str]) -> None: ...

    # lifecycle
    async def purge_expired(self, now: datetime | None = None, *,
                            chat_id: str | None = None) -> int: ...

    async def embed_missing(self, chat_id: str, limit: int) -> int: ...

    async def reindex(self, chat_id: str) -> dict[str, int]: ...

    async def stats(self, chat_id: str) -> dict[str, Any]: ...

    def embeddings_status(self) -> dict[str, Any]: ...

    async def integrity_check(self) -> str: ...

    async def export_jsonl(self, chat_id: str) -> list[str]: ...

    async def import_report(self, chat_id: str, lines: Iterable[str], *,
                            vectors: Mapping[int, np.ndarray] | None = None,
                            keep_source: bool = False) -> ImportReport:
        """Merge export lines into the chat (`/import`; `rumi store migrate` passes each
        memory's stored vector by its id in the lines, and keeps the lines' `source`)."""
        ...

    # what `rumi store migrate` carries besides the rows
    async def forgotten_list(self) -> list[tuple[str, str, datetime]]:
        """Every chat's forgotten texts: (chat, content hash, when it was forgotten)."""
        ...

    async def switch_list(self) -> dict[str, bool]:
        """Every stored per-chat memory switch (also of chats without memories)."""
        ...

    async def vector_models(self) -> dict[str, int]:
        """How many stored vectors each embedding model made."""
        ...

    async def stored_vectors(self, chat_id: str, ids: Iterable[int]) -> dict[int, np.ndarray]:
        """These memories' stored vectors, whichever model made them."""
        ...

    async def sharing(self) -> list[str]:
        """The names of the Rumis using this store, this one first ([] for rumi.db)."""
        ...

    # the per-chat memory switch (`switch.MemorySwitch` caches it)
    async def switch_state(self, chat_id: str) -> bool | None: ...

    async def set_switch(self, chat_id: str, enabled: bool, by: str | None) -> None: ...

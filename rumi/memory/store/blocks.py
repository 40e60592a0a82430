"""Context blocks (CTO schema `blocks`): static text injected into prompts by priority.

A block has a scope — `global` (every chat), `chat` (one chat) or `session` (one session of
one chat) — a code unique within its scope, a priority (higher first) and a token count, so
the budgeted selection can pick blocks without re-tokenising them. `active_for(chat, session)`
only ever returns global blocks plus that chat's own: another chat's blocks are invisible.

`BlockStore` checks what comes in; the store's `block_rows` keeps the rows (`rumi.db` here,
seed 001's `cto.blocks` on PostgreSQL: `postgres/blocks.py`).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Protocol

from rumi.memory.store.codec import check_chat_id, clean_metadata, clean_text, parse_ts, ts, utcnow
from rumi.memory.store.models import MemoryInputError

if TYPE_CHECKING:
    from rumi.memory.store.api import MemoryStoreAPI
    from rumi.memory.store.memories import MemoryStore

_CODE = re.compile(r"^[a-z0-9][a-z0-9_.-]{0,49}$")
_SESSION = re.compile(r"^[A-Za-z0-9_.:-]{1,64}$")
_COLUMNS = ("id, code, name, scope, chat_id, session_id, category, content, content_hash, "
            "priority, token_count, status, metadata, created_at, updated_at")


class BlockScope(StrEnum):
    GLOBAL = "global"
    CHAT = "chat"
    SESSION = "session"


class BlockStatus(StrEnum):
    ACTIVE = "active"
    INACTIVE = "inactive"
    DEPRECATED = "deprecated"


@dataclass(frozen=True)
class BlockData:
    """A validated block, ready for its rows (`BlockRows.upsert`)."""
    code: str
    name: str
    category: str
    content: str
    content_hash: str
    priority: int
    token_count: int
    status: BlockStatus
    metadata: dict[str, Any]


@dataclass(frozen=True)
class Block(BlockData):
    """A block as its rows hold it: the data, where it applies, its id and times."""
    id: int
    scope: BlockScope
    chat_id: str | None
    session_id: str | None
    created_at: datetime
    updated_at: datetime


def estimate_tokens(text: str) -> int:
    """Fallback when no tokenizer is injected: ~4 characters per token."""
    return max(1, (len(text) + 3) // 4)


def _row(row: Any) -> Block:
    return Block(
        id=row["id"], code=row["code"], name=row["name"], scope=BlockScope(row["scope"]),
        chat_id=row["chat_id"] or None, session_id=row["session_id"] or None,
        category=row["category"], content=row["content"], content_hash=row["content_hash"],
        priority=row["priority"], token_count=row["token_count"],
        status=BlockStatus(row["status"]), metadata=json.loads(row["metadata"] or "{}"),
        created_at=parse_ts(row["created_at"]), updated_at=parse_ts(row["updated_at"]),
    )


def _where(scope: BlockScope, chat_id: str | None, session_id: str | None) -> tuple[str, str]:
    """Normalise (scope, chat, session) to the stored key, refusing inconsistent combinations."""
    if scope == BlockScope.GLOBAL:
        if chat_id or session_id:
            raise MemoryInputError("Un bloque global no pertenece a ningún chat.")
        return "", ""
    if chat_id is None:
        raise MemoryInputError(f"Un bloque de ámbito {scope.value} necesita un chat.")
    chat = check_chat_id(chat_id)
    if scope == BlockScope.CHAT:
        if session_id:
            raise MemoryInputError("Un bloque de chat no lleva sesión.")
        return chat, ""
    if not isinstance(session_id, str) or not _SESSION.match(session_id):
        raise MemoryInputError("Un bloque de sesión necesita un identificador de sesión válido.")
    return chat, session_id


class BlockRows(Protocol):
    """Where a store keeps blocks: `rumi.db`'s `blocks` (`SqliteBlockRows`) or seed 001's
    `cto.blocks` (`postgres.blocks.PgBlockRows`). `chat` and `session` are '' when the scope
    has none; `chat_id` arguments are already checked."""

    async def upsert(self, scope: BlockScope, chat: str, session: str,
                     data: BlockData) -> None: ...

    async def get(self, scope: BlockScope, chat: str, session: str,
                  code: str) -> Block | None: ...

    async def active_for(self, chat: str, session: str | None) -> list[Block]: ...

    async def list(self, chat: str | None, status: BlockStatus | None) -> list[Block]: ...

    async def set_status(self, block_id: int, status: BlockStatus,
                         chat: str | None) -> bool: ...

    async def delete(self, block_id: int, chat: str | None) -> bool: ...


class BlockStore:
    """Context blocks of the memory store (either store: `store.block_rows`); this class
    checks what comes in, the rows only store and find."""

    def __init__(self, store: MemoryStoreAPI,
                 count_tokens: Callable[[str], int] | None = None) -> None:
        self._store = store
        self._rows: BlockRows = store.block_rows
        self._count = count_tokens or estimate_tokens

    async def upsert(
        self,
        code: str,
        content: str,
        *,
        scope: BlockScope | str = BlockScope.GLOBAL,
        chat_id: str | None = None,
        session_id: str | None = None,
        name: str = "",
        category: str = "knowledge",
        priority: int = 0,
        token_count: int | None = None,
        status: BlockStatus | str = BlockStatus.ACTIVE,
        metadata: dict[str, Any] | None = None,
    ) -> Block:
        """Create or replace the block `code` in its scope."""
        try:
            kind, state = BlockScope(scope), BlockStatus(status)
        except ValueError as exc:
            raise MemoryInputError(f"Ámbito o estado de bloque no válido: {exc}") from exc
        if not isinstance(code, str) or not _CODE.match(code):
            raise MemoryInputError("El código del bloque debe ser corto: a-z, 0-9, _ . -")
        if isinstance(priority, bool) or not isinstance(priority, int):
            raise MemoryInputError("La prioridad debe ser un número entero.")
        text = clean_text(content, "el bloque", self._store.settings.max_content_chars)
        assert text is not None
        label = clean_text(name, "el nombre", 200, required=False) or ""
        group = clean_text(category, "la categoría", 50, required=False) or "knowledge"
        chat, session = _where(kind, chat_id, session_id)
        tokens = self._count(text) if token_count is None else int(token_count)
        if tokens < 0:
            raise MemoryInputError("El número de tokens no puede ser negativo.")
        await self._rows.upsert(kind, chat, session, BlockData(
            code, label, group, text, content_digest(text), priority, tokens, state,
            clean_metadata(metadata)))
        found = await self._rows.get(kind, chat, session, code)
        assert found is not None
        return found

    async def get(self, code: str, *, scope: BlockScope | str = BlockScope.GLOBAL,
                  chat_id: str | None = None, session_id: str | None = None) -> Block | None:
        kind = BlockScope(scope)
        chat, session = _where(kind, chat_id, session_id)
        return await self._rows.get(kind, chat, session, code)

    async def active_for(self, chat_id: str, session_id: str | None = None) -> list[Block]:
        """Active blocks that apply to this chat (and session): highest priority first."""
        return await self._rows.active_for(check_chat_id(chat_id), session_id)

    async def list(self, chat_id: str | None = None, *,
                   status: BlockStatus | str | None = None) -> list[Block]:
        """Global blocks, or global + one chat's blocks; every status unless one is given."""
        return await self._rows.list(check_chat_id(chat_id) if chat_id else None,
                                     BlockStatus(status) if status is not None else None)

    async def set_status(self, block_id: int, status: BlockStatus | str,
                         chat_id: str | None = None) -> bool:
        """Change one block's status; with `chat_id`, only that chat's (or global) blocks."""
        return await self._rows.set_status(
            int(block_id), BlockStatus(status),
            check_chat_id(chat_id) if chat_id is not None else None)

    async def delete(self, block_id: int, chat_id: str | None = None) -> bool:
        """Delete one block; with `chat_id`, only one of that chat's own."""
        return await self._rows.delete(
            int(block_id), check_chat_id(chat_id) if chat_id is not None else None)


def content_digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


class SqliteBlockRows:
    """Blocks in the same rumi.db as memories, sharing the store's connection and write lock."""

    def __init__(self, store: MemoryStore) -> None:
        self._store = store

    async def upsert(self, scope: BlockScope, chat: str, session: str,
                     data: BlockData) -> None:
        now = ts(utcnow())
        async with self._store.transaction() as conn:
            await conn.execute(
                "INSERT INTO blocks(code, name, scope, chat_id, session_id, category, content, "
                "content_hash, priority, token_count, status, metadata, created_at, updated_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
                "ON CONFLICT(scope, chat_id, session_id, code) DO UPDATE SET name = excluded.name, "
                "category = excluded.category, content = excluded.content, "
                "content_hash = excluded.content_hash, priority = excluded.priority, "
                "token_count = excluded.token_count, status = excluded.status, "
                "metadata = excluded.metadata, updated_at = excluded.updated_at",
                (data.code, data.name, scope.value, chat, session, data.category, data.content,
                 data.content_hash, data.priority, data.token_count, data.status.value,
                 json.dumps(data.metadata, ensure_ascii=False), now, now),
            )

    async def get(self, scope: BlockScope, chat: str, session: str,
                  code: str) -> Block | None:
        async with self._store.connection.execute(
            f"SELECT {_COLUMNS} FROM blocks WHERE scope = ? AND chat_id = ? "  # noqa: S608
            "AND session_id = ? AND code = ?",
            (scope.value, chat, session, code),
        ) as cur:
            row = await cur.fetchone()
        return _row(row) if row else None

    async def active_for(self, chat: str, session: str | None) -> list[Block]:
        async with self._store.connection.execute(
            f"SELECT {_COLUMNS} FROM blocks WHERE status = 'active' AND ("  # noqa: S608
            "scope = 'global' OR (scope = 'chat' AND chat_id = ?) "
            "OR (scope = 'session' AND chat_id = ? AND session_id = ?)) "
            "ORDER BY priority DESC, id",
            (chat, chat, session or "\x00"),
        ) as cur:
            return [_row(r) for r in await cur.fetchall()]

    async def list(self, chat: str | None, status: BlockStatus | None) -> list[Block]:
        params: list[Any] = []
        where = ["(scope = 'global'" + (" OR chat_id = ?)" if chat else ")")]
        if chat:
            params.append(chat)
        if status is not None:
            where.append("status = ?")
            params.append(status.value)
        async with self._store.connection.execute(
            f"SELECT {_COLUMNS} FROM blocks WHERE {' AND '.join(where)} "  # noqa: S608
            "ORDER BY priority DESC, id",
            params,
        ) as cur:
            return [_row(r) for r in await cur.fetchall()]

    async def set_status(self, block_id: int, status: BlockStatus, chat: str | None) -> bool:
        scope_sql, params = "", [status.value, ts(utcnow()), block_id]
        if chat is not None:
            scope_sql = " AND (scope = 'global' OR chat_id = ?)"
            params.append(chat)
        async with self._store.transaction() as conn:
            cur = await conn.execute(
                f"UPDATE blocks SET status = ?, updated_at = ? WHERE id = ?{scope_sql}", params,  # noqa: S608
            )
            return cur.rowcount > 0

    async def delete(self, block_id: int, chat: str | None) -> bool:
        scope_sql, params = "", [block_id]
        if chat is not None:
            scope_sql = " AND chat_id = ?"
            params.append(chat)
        async with self._store.transaction() as conn:
            cur = await conn.execute(f"DELETE FROM blocks WHERE id = ?{scope_sql}", params)  # noqa: S608
            return cur.rowcount > 0

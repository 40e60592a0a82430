"""Context blocks in seed 001's `cto.blocks`, read through `cto.get_active_blocks`.

`blocks.BlockStore`'s scopes map onto the seed's, every row carrying this Rumi's `store.name`
as `server_code` (on SQLite one `rumi.db` is one Rumi's, so its blocks are that Rumi's):

| Rumi scope | `cto.blocks` |
|---|---|
| `global` (every chat of this Rumi) | scope `server`, `server_code` = store.name |
| `chat` | scope `agent`, `agent_code` = the chat id (the agent of that chat), `owner_id` too |
| `session` | scope `session`, the chat as above and `session_id` |

Blocks of the seed's own scope `global` (rows written for every Rumi on the store, by hand
or by another tool) apply to every chat too: `active_for` returns them, read-only here.
`hash` (unique in the seed) is the block's identity — scope, Rumi, chat, session, code — so an
upsert is one `ON CONFLICT (hash)` statement, safe when two calls race.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

from psycopg.types.json import Jsonb

from rumi.memory.store.blocks import Block, BlockData, BlockScope, BlockStatus, content_digest
from rumi.memory.store.codec import to_utc

_SCOPE = {BlockScope.GLOBAL: "server", BlockScope.CHAT: "agent", BlockScope.SESSION: "session"}
_BACK = {"server": BlockScope.GLOBAL, "global": BlockScope.GLOBAL, "agent": BlockScope.CHAT,
         "session": BlockScope.SESSION}
_COLUMNS = ("b.id, b.code, b.name, b.scope, b.agent_code, b.session_id, b.category, b.content, "
            "b.priority, b.token_count, b.status, b.metadata, b.created_at, b.updated_at")


def _block(row: Mapping[str, Any]) -> Block:
    return Block(
        id=int(row["id"]), code=row["code"], name=row["name"], scope=_BACK[row["scope"]],
        chat_id=row["agent_code"] or None, session_id=row["session_id"] or None,
        category=row["category"], content=row["content"],
        content_hash=content_digest(row["content"]), priority=int(row["priority"]),
        token_count=int(row["token_count"]), status=BlockStatus(row["status"]),
        metadata=dict(row["metadata"] or {}), created_at=to_utc(row["created_at"]),
        updated_at=to_utc(row["updated_at"]))


class PgBlockRows:
    """One Rumi's context blocks in `cto.blocks` (the store's pool, autocommit)."""

    def __init__(self, pool: Any, name: str) -> None:
        self.pool = pool
        self.name = name

    def identity(self, scope: BlockScope, chat: str, session: str, code: str) -> str:
        key = "\x00".join((_SCOPE[scope], self.name, chat, session, code))
        return hashlib.sha256(key.encode()).hexdigest()

    async def _fetch(self, sql: str, params: list[Any]) -> list[Block]:
        async with self.pool.connection() as conn:
            cur = await conn.execute(sql, params)
            return [_block(row) for row in await cur.fetchall()]

    async def upsert(self, scope: BlockScope, chat: str, session: str,
                     data: BlockData) -> None:
        async with self.pool.connection() as conn:
            await conn.execute(
                "INSERT INTO cto.blocks(hash, code, name, owner_id, category, content, "
                "priority, scope, server_code, agent_code, session_id, token_count, status, "
                "metadata) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s) "
                "ON CONFLICT (hash) DO UPDATE SET name = excluded.name, "
                "category = excluded.category, content = excluded.content, "
                "priority = excluded.priority, token_count = excluded.token_count, "
                "status = excluded.status, metadata = excluded.metadata, updated_at = now()",
                (self.identity(scope, chat, session, data.code), data.code, data.name,
                 chat or None, data.category, data.content, data.priority, _SCOPE[scope],
                 self.name, chat or None, session or None, data.token_count,
                 data.status.value, Jsonb(data.metadata)))

    async def get(self, scope: BlockScope, chat: str, session: str,
                  code: str) -> Block | None:
        found = await self._fetch(
            f"SELECT {_COLUMNS} FROM cto.blocks b WHERE b.hash = %s",  # noqa: S608
            [self.identity(scope, chat, session, code)])
        return found[0] if found else None

    async def active_for(self, chat: str, session: str | None) -> list[Block]:
        """The seed's `global` blocks, this Rumi's (`server`), the chat's (`agent`) and the
        session's, by priority."""
        return await self._fetch(
            f"SELECT {_COLUMNS} FROM (SELECT * FROM cto.get_active_blocks('global') "  # noqa: S608
            "UNION ALL SELECT * FROM cto.get_active_blocks('server', %s) "
            "UNION ALL SELECT * FROM cto.get_active_blocks('agent', NULL, %s) a "
            "WHERE a.server_code = %s "
            "UNION ALL SELECT * FROM cto.get_active_blocks('session', %s, %s) s "
            "WHERE s.server_code = %s AND s.agent_code = %s AND s.session_id = %s) b "
            "ORDER BY b.priority DESC, b.id",
            [self.name, chat, self.name, self.name, chat, self.name, chat, session])

    async def list(self, chat: str | None, status: BlockStatus | None) -> list[Block]:
        where, params = ["b.server_code = %s"], [self.name]
        if chat:
            where.append("(b.scope = 'server' OR b.agent_code = %s)")
            params.append(chat)
        else:
            where.append("b.scope = 'server'")
        if status is not None:
            where.append("b.status = %s")
            params.append(status.value)
        return await self._fetch(
            f"SELECT {_COLUMNS} FROM cto.blocks b WHERE {' AND '.join(where)} "  # noqa: S608
            "ORDER BY b.priority DESC, b.id", params)

    async def set_status(self, block_id: int, status: BlockStatus, chat: str | None) -> bool:
        mine, params = "", [status.value, block_id, self.name]
        if chat is not None:
            mine = " AND (scope = 'server' OR agent_code = %s)"
            params.append(chat)
        async with self.pool.connection() as conn:
            cur = await conn.execute(
                "UPDATE cto.blocks SET status = %s, updated_at = now() "  # noqa: S608
                f"WHERE id = %s AND server_code = %s{mine}", params)
            return cur.rowcount > 0

    async def delete(self, block_id: int, chat: str | None) -> bool:
        mine, params = "", [block_id, self.name]
        if chat is not None:
            mine = " AND agent_code = %s"
            params.append(chat)
        async with self.pool.connection() as conn:
            cur = await conn.execute(
                f"DELETE FROM cto.blocks WHERE id = %s AND server_code = %s{mine}",  # noqa: S608
                params)
            return cur.rowcount > 0

"""`/memory off|on`: whether a chat keeps long-term memory, persisted in `rumi.db`.

A group (or anyone) may not want Rumi to learn about them at all. While a chat's memory is
off, nothing is extracted from its conversation (what was said meanwhile is never learned,
not even after `on`), no snapshot or daily-log line is written, and no long-term memory is
recalled into its prompts; the conversation itself, its tape and `/forget` keep working.
The answer is cached: it is asked on every prompt.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any


class MemorySwitch:
    """Per-chat on/off for long-term memory (on unless a row in `memory_switch` says off)."""

    def __init__(self, store: Any) -> None:
        self.store = store
        self._cache: dict[str, bool] = {}

    async def enabled(self, chat_id: str) -> bool:
        cached = self._cache.get(chat_id)
        if cached is not None:
            return cached
        async with self.store.connection.execute(
            "SELECT enabled FROM memory_switch WHERE chat_id = ?", (chat_id,)
        ) as cur:
            row = await cur.fetchone()
        value = True if row is None else bool(row[0])
        self._cache[chat_id] = value
        return value

    async def set(self, chat_id: str, enabled: bool, *, by: str | None = None) -> bool:
        """Switch the chat's memory; True if that changed anything."""
        if await self.enabled(chat_id) == enabled:
            return False
        async with self.store.transaction() as conn:
            await conn.execute(
                "INSERT INTO memory_switch(chat_id, enabled, changed_by, changed_at) "
                "VALUES (?, ?, ?, ?) ON CONFLICT(chat_id) DO UPDATE SET "
                "enabled = excluded.enabled, changed_by = excluded.changed_by, "
                "changed_at = excluded.changed_at",
                (chat_id, int(enabled), by, datetime.now(UTC).isoformat(timespec="seconds")),
            )
        self._cache[chat_id] = enabled
        return True

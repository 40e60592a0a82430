"""`/memory off|on`: whether a chat keeps long-term memory, persisted in the store.

A group (or anyone) may not want Rumi to learn about them at all. While a chat's memory is
off, nothing is extracted from its conversation (what was said meanwhile is never learned,
not even after `on`), no snapshot or daily-log line is written, and no long-term memory is
recalled into its prompts; the conversation itself, its tape and `/forget` keep working.
The answer is cached: it is asked on every prompt.
"""

from __future__ import annotations

from rumi.memory.store.api import MemoryStoreAPI


class MemorySwitch:
    """Per-chat on/off for long-term memory (on unless a row in `memory_switch` says off)."""

    def __init__(self, store: MemoryStoreAPI) -> None:
        self.store = store
        self._cache: dict[str, bool] = {}

    async def enabled(self, chat_id: str) -> bool:
        cached = self._cache.get(chat_id)
        if cached is not None:
            return cached
        stored = await self.store.switch_state(chat_id)
        value = True if stored is None else stored
        self._cache[chat_id] = value
        return value

    async def set(self, chat_id: str, enabled: bool, *, by: str | None = None) -> bool:
        """Switch the chat's memory; True if that changed anything."""
        if await self.enabled(chat_id) == enabled:
            return False
        await self.store.set_switch(chat_id, enabled, by)
        self._cache[chat_id] = enabled
        return True

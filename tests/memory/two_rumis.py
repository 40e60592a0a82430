"""Two Rumis sharing one PostgreSQL store (`casa` writes; `trabajo` has a data dir whose
MEMORY.md files follow what it hears), as the shared-store tests set them up."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

from rumi.config import MemorySettings
from rumi.memory.files.markdown_sync import MarkdownSync
from rumi.memory.install import MemoryRuntime
from rumi.memory.store.postgres.store import PgMemoryStore
from rumi.paths import ChatPaths

KW = MemorySettings(embeddings_enabled=False)


@dataclass
class TwoRumis:
    casa: PgMemoryStore
    trabajo: PgMemoryStore
    sync: MarkdownSync        # trabajo's MEMORY.md files
    runtime: MemoryRuntime    # trabajo's memory wiring: re-renders a chat another Rumi changed
    data_dir: Path

    def memory_md(self, chat: str) -> Path:
        """trabajo's MEMORY.md of `chat`."""
        return ChatPaths(self.data_dir, chat).memory_md

    async def trabajo_listens(self, on_change: Callable[[str], Awaitable[None]]) -> None:
        """trabajo watches the store, and is listening when this returns (a change made
        before that would not be heard)."""
        await self.trabajo.watch(on_change)
        listener = self.trabajo._listener   # noqa: SLF001 - the store says when only here
        assert listener is not None
        await asyncio.wait_for(listener.ready.wait(), 10)


@asynccontextmanager
async def two_rumis(url: str, tmp_path: Path, dim: int = 384) -> AsyncIterator[TwoRumis]:
    """Both stores open (keyword-only) on `url`, closed after."""
    casa = await PgMemoryStore.open(url, "casa", KW, None, dim=dim)
    trabajo = await PgMemoryStore.open(url, "trabajo", KW, None, dim=dim)
    data_dir = tmp_path / "trabajo"
    sync = MarkdownSync(data_dir, trabajo)
    runtime = MemoryRuntime(lifecycle=None, commands=None, journal=None, sync=sync,  # type: ignore[arg-type]
                            watch=False, store=trabajo)
    try:
        yield TwoRumis(casa, trabajo, sync, runtime, data_dir)
    finally:
        await casa.close()
        await trabajo.close()

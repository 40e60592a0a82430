"""Expiry on a shared store reaches every Rumi: whichever Rumi's upkeep marks a memory
`expired`, the others hear it (the same NOTIFY as /forget) and their MEMORY.md loses the line;
a chat with nothing expired is not announced."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

from rumi.config import MemorySettings
from rumi.memory.files.markdown_sync import MarkdownSync
from rumi.memory.install import MemoryRuntime
from rumi.memory.store.models import MemoryType, NewMemory
from rumi.memory.store.postgres.store import PgMemoryStore
from rumi.paths import ChatPaths

KW = MemorySettings(embeddings_enabled=False)


async def test_an_expiry_on_one_rumi_leaves_the_other_rumis_memory_md(pg_url, tmp_path):
    casa = await PgMemoryStore.open(pg_url, "casa", KW, None, dim=384)
    trabajo = await PgMemoryStore.open(pg_url, "trabajo", KW, None, dim=384)
    sync = MarkdownSync(tmp_path / "trabajo", trabajo)
    runtime = MemoryRuntime(lifecycle=None, commands=None, journal=None, sync=sync,  # type: ignore[arg-type]
                            watch=False, store=trabajo)
    heard: list[str] = []

    async def trabajo_heard(chat: str) -> None:
        heard.append(chat)
        await runtime.changed_elsewhere(chat)

    try:
        await trabajo.watch(trabajo_heard)
        await asyncio.wait_for(trabajo._listener.ready.wait(), 10)
        now = datetime.now(UTC)
        await casa.save("42", NewMemory("Viaje a Roma el viernes", type=MemoryType.FACT,
                                        expires_at=now + timedelta(hours=1)))
        await casa.save("42", NewMemory("Le gusta nadar"))
        await casa.save("77", NewMemory("Tiene un loro"))
        for chat in ("42", "77"):
            await sync.write(chat)
        md = ChatPaths(tmp_path / "trabajo", "42").memory_md
        assert "Viaje a Roma" in md.read_text(encoding="utf-8")
        await asyncio.sleep(0.2)
        heard.clear()   # the saves' own announcements

        assert await casa.purge_expired(now + timedelta(hours=2)) == 1

        async def gone() -> None:
            while "Viaje a Roma" in md.read_text(encoding="utf-8"):
                await asyncio.sleep(0.05)

        await asyncio.wait_for(gone(), 20)
        assert "Le gusta nadar" in md.read_text(encoding="utf-8")
        assert await casa.purge_expired(now + timedelta(hours=3)) == 0   # nothing more
        await casa.save("77", NewMemory("Tiene dos loros"))  # a later change, as a marker
        while "77" not in heard:
            await asyncio.sleep(0.05)
        assert heard == ["42", "77"]   # 77 lost nothing: only the marker's change was heard
    finally:
        await casa.close()
        await trabajo.close()

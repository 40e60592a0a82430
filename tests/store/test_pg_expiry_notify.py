"""Expiry on a shared store reaches every Rumi: whichever Rumi's upkeep marks a memory
`expired`, the others hear it (the same NOTIFY as /forget) and their MEMORY.md loses the line;
a chat with nothing expired is not announced."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

from rumi.memory.store.models import MemoryType, NewMemory
from tests.memory.two_rumis import two_rumis


async def test_an_expiry_on_one_rumi_leaves_the_other_rumis_memory_md(pg_url, tmp_path):
    async with two_rumis(pg_url, tmp_path) as rumis:
        casa, sync = rumis.casa, rumis.sync
        heard: list[str] = []

        async def trabajo_heard(chat: str) -> None:
            heard.append(chat)
            await rumis.runtime.changed_elsewhere(chat)

        await rumis.trabajo_listens(trabajo_heard)
        now = datetime.now(UTC)
        await casa.save("42", NewMemory("Viaje a Roma el viernes", type=MemoryType.FACT,
                                        expires_at=now + timedelta(hours=1)))
        await casa.save("42", NewMemory("Le gusta nadar"))
        await casa.save("77", NewMemory("Tiene un loro"))
        for chat in ("42", "77"):
            await sync.write(chat)
        md = rumis.memory_md("42")
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

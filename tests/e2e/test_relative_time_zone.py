"""The chat's own timezone (/timezone) reaches /search's "ayer" through the running bot."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from rumi.memory.recall import relative_time
from rumi.memory.store.models import MemoryType, NewMemory
from tests.e2e.conftest import ALICE

pytestmark = pytest.mark.e2e

KIRITIMATI = ZoneInfo("Pacific/Kiritimati")  # UTC+14: its "ayer" is never UTC's


async def test_search_ayer_uses_the_chat_timezone(start_bot, fake_telegram) -> None:
    bot = await start_bot()
    now = datetime.now(UTC)
    [local] = relative_time.resolve("ayer", now, KIRITIMATI)
    [utc] = relative_time.resolve("ayer", now, ZoneInfo("UTC"))
    # a moment that is "ayer" in Kiritimati but not in the configured UTC
    half_hour = timedelta(minutes=30)
    when = next(t for t in (local.start + half_hour, local.end - half_hour)
                if not utc.contains(t))
    store = bot.app.parts["memory_store"]
    await store.save(str(ALICE), NewMemory(content="Plantó un cocotero", created_at=when,
                                           type=MemoryType.EPISODIC))
    fake_telegram.push_text(ALICE, ALICE, "/search ayer")
    [first] = await fake_telegram.wait_for_sent(1)
    assert "cocotero" not in (first.text or "")  # UTC, the configured default
    fake_telegram.push_text(ALICE, ALICE, "/timezone Pacific/Kiritimati")
    await fake_telegram.wait_for_sent(2)
    fake_telegram.push_text(ALICE, ALICE, "/search ayer")
    third = (await fake_telegram.wait_for_sent(3))[2]
    assert "cocotero" in (third.text or "")

"""Reminders on both stores: `rumi.db` (the feature's own SQLite rows) and the PostgreSQL
store's `rumi` schema (the store wing's rows, as the composition root wires them)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from rumi.reminders.store import ReminderStore

STORES = [pytest.param("sqlite", id="sqlite"), pytest.param("postgres", id="postgres")]


@pytest.fixture(params=STORES)
def make_store(request: pytest.FixtureRequest, tmp_path: Path) -> Callable[..., ReminderStore]:
    """A new (unopened) ReminderStore on this test's store each call: the same rows, as after
    a restart; `name` is the bot's `store.name` (PostgreSQL only)."""
    if request.param == "sqlite":
        return lambda name="casa": ReminderStore(tmp_path / "rumi.db")
    from rumi.memory.store.postgres.reminders import PgReminderRows

    url = request.getfixturevalue("pg_url")
    return lambda name="casa": ReminderStore(PgReminderRows(url, name, lambda: 384))

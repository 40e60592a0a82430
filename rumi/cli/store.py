"""`rumi store …` and the store's start-up check.

`store_start_problem` runs before `rumi run` / `rumi chat` build the app: with
`[store] backend = "postgres"` and the server unreachable, they stop with one line naming
`host:port` and the fix (exit 2), instead of a traceback from whichever part met it first.
"""

from __future__ import annotations

from rumi.config import Settings


async def store_start_problem(settings: Settings) -> str | None:
    """One line when the configured PostgreSQL store cannot be used, else None (SQLite: None)."""
    if settings.store.backend != "postgres" or settings.store.url is None:
        return None
    from rumi.memory.store.postgres.probe import probe_store, start_problem

    return start_problem(await probe_store(settings.store.url.get_secret_value()))

"""One running Rumi per `store.name` on a PostgreSQL store.

The name keys everything a Rumi keeps as its own in a shared store (its tape index, its
blocks, its reminders: at start it takes back the reminders it was sending when it stopped).
Two processes under one name would take each other's work, so a Rumi holds a session-level
advisory lock on its name for as long as it runs, on a connection of its own. PostgreSQL drops
the lock with the session — a clean stop, a crash and a `kill -9` alike — so it is never stale.

The lock's key is 64 bits of SHA-256 of the name (advisory locks are keyed by a bigint); the
connection's `application_name` says who holds it, so the one refused can name the holder.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import os
import socket

from psycopg import AsyncConnection

from rumi.base.store_url import endpoint
from rumi.config import ConfigError

log = logging.getLogger(__name__)

CONNECT_TIMEOUT = 10
GUARD_INTERVAL = 15.0   # seconds between looks at the lock's connection
_KEY_PREFIX = b"rumi.store.name:"
_APP_NAME_MAX = 63   # PostgreSQL cuts application_name at NAMEDATALEN - 1


class StoreNameTaken(ConfigError):
    """Another running Rumi holds this name on this store; the message is the one line."""


def name_key(name: str) -> int:
    """The advisory-lock key of a store name (a signed 64-bit integer)."""
    digest = hashlib.sha256(_KEY_PREFIX + name.encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


def _application_name(name: str) -> str:
    return f"rumi {name} pid {os.getpid()} on {socket.gethostname()}"[:_APP_NAME_MAX]


_HOLDER = ("SELECT a.application_name, a.client_addr::text FROM pg_locks l "
           "JOIN pg_stat_activity a ON a.pid = l.pid "
           "WHERE l.locktype = 'advisory' AND l.granted "
           "AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database()) "
           "AND l.classid = ((%(key)s >> 32) & 4294967295)::oid "
           "AND l.objid = (%(key)s & 4294967295)::oid AND l.objsubid = 1")


class StoreNameLock:
    """The held name; `release()` (or the process ending) frees it.

    While held, a guard looks at the lock's connection every `interval` seconds: a connection
    cut under it (PostgreSQL restarted, a network cut) lost the lock with the session, so the
    guard takes the name again as soon as the server answers. Meanwhile another Rumi could take
    it; that is logged as an error, and the guard takes it back once that one is gone."""

    def __init__(self, conn: AsyncConnection, url: str, name: str, *,
                 interval: float = GUARD_INTERVAL) -> None:
        self._conn: AsyncConnection | None = conn
        self._url = url   # holds the password: never logged, never shown
        self.name = name
        self.where = endpoint(url)
        self.interval = interval
        self._guard: asyncio.Task[None] | None = None

    @property
    def held(self) -> bool:
        return self._conn is not None and not self._conn.closed

    @classmethod
    async def acquire(cls, url: str, name: str, *,
                      interval: float = GUARD_INTERVAL) -> StoreNameLock:
        """Hold `name` on the store at `url`, or raise `StoreNameTaken` naming the name, the
        store (host:port, never the password), who holds it and the fix."""
        held = cls(await _take(url, name), url, name, interval=interval)
        held._guard = asyncio.create_task(held._keep(), name=f"store-name-{name}")
        log.info("store name %r held on %s", name, held.where)
        return held

    async def release(self) -> None:
        """Free the name (closing the session drops the lock)."""
        guard, self._guard = self._guard, None
        if guard is not None:
            guard.cancel()
            with contextlib.suppress(BaseException):
                await guard
        conn, self._conn = self._conn, None
        if conn is not None:
            with contextlib.suppress(Exception):
                await conn.close()

    async def _alive(self) -> bool:
        if self._conn is None or self._conn.closed:
            return False
        try:
            await asyncio.wait_for(self._conn.execute("SELECT 1"), self.interval + 5)
        except Exception:
            return False
        return True

    async def _keep(self) -> None:
        taken_said = False
        while True:
            await asyncio.sleep(self.interval)
            if await self._alive():
                continue
            old, self._conn = self._conn, None
            if old is not None:
                log.warning("store name %r: the connection holding it on %s was lost; "
                            "taking it again", self.name, self.where)
                with contextlib.suppress(Exception):
                    await old.close()
            try:
                self._conn = await _take(self._url, self.name)
            except StoreNameTaken as exc:
                if not taken_said:
                    log.error("store name taken while this Rumi runs: %s", exc)
                    taken_said = True
                continue
            except Exception as exc:   # the server is not back yet: the next round tries again
                log.debug("store name %r: %s not back yet (%s)", self.name, self.where,
                          type(exc).__name__)
                continue
            taken_said = False
            log.info("store name %r held again on %s", self.name, self.where)


async def _take(url: str, name: str) -> AsyncConnection:
    """A new connection holding the name's lock, or `StoreNameTaken`."""
    conn = await AsyncConnection.connect(
        url, autocommit=True, connect_timeout=CONNECT_TIMEOUT,
        application_name=_application_name(name))
    try:
        cur = await conn.execute("SELECT pg_try_advisory_lock(%s)", (name_key(name),))
        row = await cur.fetchone()
        if row is None or not row[0]:
            holder = await _holder(conn, name)
            raise StoreNameTaken(
                f"another Rumi named {name!r} is already running on the PostgreSQL store "
                f"at {endpoint(url)}{holder}; stop it first, or give this one its own name: "
                "[store] name in the config")
    except BaseException:
        await conn.close()
        raise
    return conn


async def _holder(conn: AsyncConnection, name: str) -> str:
    """' (held by rumi casa pid 12 on pi, from 10.0.0.2)' as far as this user may see it."""
    try:
        cur = await conn.execute(_HOLDER, {"key": name_key(name)})
        row = await cur.fetchone()
    except Exception:   # no right to read pg_locks / pg_stat_activity: say less
        return ""
    if row is None or not row[0]:
        return ""
    who, address = row
    return f" (held by {who}, from {address.split('/')[0]})" if address else f" (held by {who})"


async def name_in_use(url: str, name: str) -> bool | None:
    """Whether a running Rumi holds `name` on this store (for the doctor: it only reads and
    takes nothing); None when that cannot be told."""
    try:
        async with await AsyncConnection.connect(url, autocommit=True,
                                                 connect_timeout=CONNECT_TIMEOUT) as conn:
            cur = await conn.execute(_HOLDER, {"key": name_key(name)})
            return await cur.fetchone() is not None
    except Exception:
        return None

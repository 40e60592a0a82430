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
           "AND l.classid = ((%(key)s >> 32) & 4294967295)::oid "
           "AND l.objid = (%(key)s & 4294967295)::oid AND l.objsubid = 1")


class StoreNameLock:
    """The held name; `release()` (or the process ending) frees it."""

    def __init__(self, conn: AsyncConnection, name: str, where: str) -> None:
        self._conn: AsyncConnection | None = conn
        self.name = name
        self.where = where

    @property
    def held(self) -> bool:
        return self._conn is not None and not self._conn.closed

    @classmethod
    async def acquire(cls, url: str, name: str) -> StoreNameLock:
        """Hold `name` on the store at `url`, or raise `StoreNameTaken` naming the name, the
        store (host:port, never the password), who holds it and the fix."""
        where = endpoint(url)
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
                    f"at {where}{holder}; stop it first, or give this one its own name: "
                    "[store] name in the config")
        except BaseException:
            await conn.close()
            raise
        log.info("store name %r held on %s", name, where)
        return cls(conn, name, where)

    async def release(self) -> None:
        """Free the name (closing the session drops the lock)."""
        conn, self._conn = self._conn, None
        if conn is not None:
            with contextlib.suppress(Exception):
                await conn.close()


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

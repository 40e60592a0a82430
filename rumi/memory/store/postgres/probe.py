"""What `rumi doctor` and the start-up check learn about a PostgreSQL store without opening it:
can it be reached in a few seconds, which PostgreSQL and pgvector it runs, and how far its
schema is (`rumi.schema_migrations`).

Nothing here creates or changes anything, and nothing it returns holds the password: failures
are described in our own words with `host:port` (rumi.base.store_url), and any server text we
pass on has the password cut out first.
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass, field
from urllib.parse import unquote, urlsplit

from rumi.base.store_url import endpoint, redacted_url

CONNECT_TIMEOUT = 5.0
MIN_VECTOR = (0, 8, 0)      # iterative index scans (filtered HNSW still returns k rows)
CVE_FIXED_VECTOR = (0, 8, 2)  # 0.8.2 fixes a CVE in parallel HNSW index builds
MIGRATIONS_TABLE = "rumi.schema_migrations"

UNREACHABLE = "unreachable"
AUTH = "auth"
NO_DATABASE = "no database"
NO_DRIVER = "no driver"
OTHER = "other"


@dataclass(frozen=True)
class StoreProbe:
    """What one look at the store found. `problem` is None when the server answered."""

    endpoint: str
    shown_url: str
    problem: str | None = None
    problem_kind: str | None = None
    server_version: str | None = None
    vector_version: str | None = None      # installed in this database
    vector_available: str | None = None    # installable on this server (not created yet)
    migrations: list[str] = field(default_factory=list)
    schema_readable: bool = True

    @property
    def reachable(self) -> bool:
        return self.problem is None


def version_tuple(text: str | None) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", text or "")[:3])


def _passwords(url: str) -> list[str]:
    """Every form the password may take in a server's or driver's message."""
    found: list[str] = []
    scheme, sep, after = url.partition("://")
    if sep and "@" in after:
        userinfo = after[: after.rfind("@")]
        if ":" in userinfo:
            found.append(userinfo.partition(":")[2])
    try:
        for key, value in (p.partition("=")[::2] for p in urlsplit(url).query.split("&")):
            if key.lower() in ("password", "sslpassword"):
                found.append(value)
    except ValueError:
        pass
    found += [unquote(p) for p in found]
    return [p for p in found if p]


def scrub(text: str, url: str) -> str:
    """`text` (a driver's error) on one line, without the password in any spelling."""
    for secret in sorted(_passwords(url), key=len, reverse=True):
        text = text.replace(secret, "***")
    return " ".join(text.split())[:300]


def _classify(message: str) -> str:
    lowered = message.lower()
    if "password authentication failed" in lowered or "no password supplied" in lowered \
            or "authentication failed" in lowered:
        return AUTH
    if "does not exist" in lowered and "database" in lowered:
        return NO_DATABASE
    return UNREACHABLE if any(word in lowered for word in (
        "connection refused", "timeout", "timed out", "could not translate host name",
        "no route to host", "network is unreachable", "name or service not known",
        "could not connect", "connection failed", "server closed the connection")) else OTHER


async def probe_store(url: str, connect_timeout: float = CONNECT_TIMEOUT) -> StoreProbe:
    """Connect once (within `connect_timeout` seconds), read versions and the schema's
    migrations."""
    timeout = connect_timeout
    where, shown = endpoint(url), redacted_url(url)
    try:
        import psycopg
    except ImportError:
        return StoreProbe(where, shown, "the PostgreSQL driver is not installed", NO_DRIVER)
    try:
        conn = await asyncio.wait_for(
            psycopg.AsyncConnection.connect(url, connect_timeout=max(1, round(timeout)),
                                            autocommit=True),
            timeout + 1)
    except TimeoutError:
        return StoreProbe(where, shown, f"no answer within {timeout:.0f} s", UNREACHABLE)
    except (psycopg.Error, OSError, ValueError) as exc:
        message = scrub(str(exc) or type(exc).__name__, url)
        return StoreProbe(where, shown, message, _classify(message))
    try:
        return await _read(conn, where, shown)
    except psycopg.Error as exc:
        return StoreProbe(where, shown, scrub(str(exc), url), OTHER)
    finally:
        await conn.close()


async def _read(conn: object, where: str, shown: str) -> StoreProbe:
    cur = await conn.execute("SHOW server_version")  # type: ignore[attr-defined]
    server = (await cur.fetchone())[0]
    cur = await conn.execute(  # type: ignore[attr-defined]
        "SELECT (SELECT extversion FROM pg_extension WHERE extname = 'vector'), "
        "(SELECT default_version FROM pg_available_extensions WHERE name = 'vector'), "
        "to_regclass(%s) IS NOT NULL", (MIGRATIONS_TABLE,))
    installed, available, has_table = await cur.fetchone()
    migrations: list[str] = []
    readable = True
    if has_table:
        try:
            cur = await conn.execute(  # type: ignore[attr-defined]
                f"SELECT name FROM {MIGRATIONS_TABLE} ORDER BY name")  # noqa: S608 - constant
            migrations = [row[0] for row in await cur.fetchall()]
        except Exception:  # no privilege on the table: say so rather than fail the probe
            readable = False
    return StoreProbe(where, shown, server_version=server.split()[0], vector_version=installed,
                      vector_available=available, migrations=migrations,
                      schema_readable=readable)


def unreachable_fix(probe: StoreProbe) -> str:
    """The next step for a store that did not answer, by what went wrong."""
    if probe.problem_kind == NO_DRIVER:
        return "install the PostgreSQL extra: pip install 'rumi[postgres]'"
    if probe.problem_kind == AUTH:
        return "check the user and password in RUMI_STORE_URL (or store.url)"
    if probe.problem_kind == NO_DATABASE:
        return ("create the database on that server (docs/postgres.md: createdb -O rumi rumi), "
                "or correct its name in store.url")
    return ("start PostgreSQL (with Rumi's compose file: docker compose --profile postgres "
            "up -d) or correct the host and port in store.url / RUMI_STORE_URL")


def start_problem(probe: StoreProbe) -> str | None:
    """One line for `rumi run` / `rumi chat` when the store cannot be used, else None."""
    if probe.reachable:
        return None
    return (f"cannot use the PostgreSQL store at {probe.endpoint} ({probe.problem}): "
            f"{unreachable_fix(probe)}")

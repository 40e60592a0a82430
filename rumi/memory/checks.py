"""Memory's `rumi doctor` checks: SQLite can hold it, rumi.db is healthy and matches every
chat's MEMORY.md, and the configured store answers (PostgreSQL: versions and schema).
Contributed through `MemoryFeature.doctor_checks`, run without the app."""

from __future__ import annotations

import asyncio
from pathlib import Path

from rumi.base.checks import CheckResult, DoctorCheck, failed, passed, warned
from rumi.config import Settings
from rumi.memory.store.sqlite_probe import check_sqlite

STORE = "store"
MEMORY_DB = "memory database"
TRANSLATION = "recall translation"


def doctor_checks() -> list[DoctorCheck]:
    async def sqlite(settings: Settings) -> CheckResult:
        return await asyncio.to_thread(check_sqlite)

    async def database(settings: Settings) -> CheckResult:
        if settings.store.backend == "postgres":
            return await check_pg_tapes(settings)
        return await asyncio.to_thread(check_memory_db, settings.data_dir)

    return [DoctorCheck("sqlite", sqlite), DoctorCheck(MEMORY_DB, database),
            DoctorCheck(STORE, check_store), DoctorCheck(TRANSLATION, check_translation)]


async def check_translation(settings: Settings) -> CheckResult:
    """Whether recall can translate a question into its chat's other language (Apertium's
    English–Spanish pair): a warning without it, since recall works, only finds less."""
    if not settings.memory.recall_machine_translation:
        return passed(TRANSLATION, "off (memory.recall_machine_translation = false)")
    from rumi.memory.recall.machine_translation import MachineTranslator

    missing = await asyncio.to_thread(MachineTranslator().unavailable)
    if missing:
        return warned(TRANSLATION, f"no machine translation: {missing}",
                      "apt install apertium apertium-eng-spa (Spanish questions then find "
                      "English memories, and back; docs/memory.md, \"Recall\")")
    return passed(TRANSLATION, "Apertium English <-> Spanish")


async def check_store(settings: Settings) -> CheckResult:
    """SQLite: where it is. PostgreSQL: reachable within a few seconds, its version, pgvector's
    (installed, new enough), and the schema's migrations. Never shows the password."""
    if settings.store.backend != "postgres":
        return passed(STORE, f"sqlite: {settings.data_dir / 'rumi.db'} (this machine only)")
    from rumi.memory.store.postgres.probe import (
        CVE_FIXED_VECTOR,
        MIN_VECTOR,
        probe_store,
        unreachable_fix,
        version_tuple,
    )

    assert settings.store.url is not None  # the config refuses postgres without a url
    probe = await probe_store(settings.store.url.get_secret_value())
    if not probe.reachable:
        return failed(STORE, f"cannot use PostgreSQL at {probe.endpoint}: {probe.problem}",
                      unreachable_fix(probe))
    head = f"PostgreSQL {probe.server_version} at {probe.shown_url}"
    if probe.vector_version is None:
        if probe.vector_available is None:
            return failed(STORE, f"{head}: pgvector is not installed on this server",
                          "use a server with pgvector (the pgvector/pgvector image, or its "
                          "package) and, as a superuser: CREATE EXTENSION vector")
        return warned(STORE, f"{head}: pgvector {probe.vector_available} is available but not "
                             "created in this database",
                      "as a superuser, in this database: CREATE EXTENSION vector; (Rumi "
                      "creates it at start only if its role may)")
    version = version_tuple(probe.vector_version)
    head += f", pgvector {probe.vector_version}"
    if version < MIN_VECTOR:
        return failed(STORE, f"{head}: Rumi needs pgvector 0.8.0 or newer (iterative index "
                             "scans)", "upgrade pgvector, then ALTER EXTENSION vector UPDATE")
    from rumi.memory.store.postgres.schema import KNOWN

    unknown = [name for name in probe.migrations if name not in KNOWN]
    if unknown:
        return failed(STORE, f"{head}: the schema is newer than this Rumi knows (migration "
                             f"{unknown[-1]})", "upgrade Rumi before using this database")
    schema = _schema_words(probe.migrations, probe.schema_readable)
    detail = f"{head}; {schema}; this Rumi is \"{settings.store.name}\""
    from rumi.memory.store.postgres.name_lock import name_in_use

    running = await name_in_use(settings.store.url.get_secret_value(), settings.store.name)
    if running is not None:
        detail += " (running now)" if running else " (not running)"
    if version < CVE_FIXED_VECTOR:
        return warned(STORE, detail, "upgrade pgvector to 0.8.2 or newer (fixes a CVE in "
                                     "parallel HNSW index builds), then ALTER EXTENSION vector "
                                     "UPDATE")
    if not probe.schema_readable:
        return warned(STORE, detail, "grant the store's role the rights on schemas rumi and cto")
    return passed(STORE, detail)


def _schema_words(migrations: list[str], readable: bool) -> str:
    if not readable:
        return "schema version unreadable (no privilege on rumi.schema_migrations)"
    if not migrations:
        return "schema not created yet (made at first start)"
    return f"schema: {len(migrations)} migrations, latest {migrations[-1]}"


def check_memory_db(data_dir: Path) -> CheckResult:
    """rumi.db: quick_check, schema version, and each chat's MEMORY.md against its rows. A
    damaged database is a FAIL with the way out (the bot rebuilds it from MEMORY.md at start)."""
    from rumi.memory.files.healing import cross_check
    from rumi.memory.store.health import inspect_database
    from rumi.memory.store.tape_index import cross_check as tape_cross_check

    name = MEMORY_DB
    db_path = data_dir / "rumi.db"
    health = inspect_database(db_path)
    if health.state == "missing":
        return passed(name, f"{db_path} not created yet (made, or rebuilt from MEMORY.md, "
                            "at start)")
    if health.state != "ok":
        return failed(name, f"{db_path} is {health.state}: {health.detail}",
                      "start Rumi: it moves the damaged file aside and rebuilds the database "
                      "from every chat's MEMORY.md; or `rumi restore BACKUP`")
    mismatches = cross_check(db_path, data_dir)
    tape_problems, tape_notes = tape_cross_check(db_path, data_dir)
    detail = f"quick_check ok, schema version {health.schema_version}"
    if mismatches:
        return warned(name, f"{detail}; " + "; ".join((mismatches + tape_problems)[:5]),
                      "open the chat's MEMORY.md (or /memory in the chat) to see which side "
                      "is right; Rumi merges the file into the database on its next start")
    return _tapes_result(f"{detail}; MEMORY.md files match the database", tape_problems,
                         tape_notes)


def _tapes_result(detail: str, problems: list[str], notes: list[str]) -> CheckResult:
    """The memory database check's verdict on the tape index, on either store."""
    if problems:
        return warned(MEMORY_DB, f"{detail}; " + "; ".join(problems[:5]),
                      "start Rumi: it indexes a replaced or removed tape again from the file "
                      "(the tapes are the record; the index is only for /search)")
    words = f"; {'; '.join(notes[:3])} (indexed at the next start or /search)" \
        if notes else "; tapes indexed"
    return passed(MEMORY_DB, detail + words)


async def check_pg_tapes(settings: Settings) -> CheckResult:
    """PostgreSQL: the memories are checked by the store check; this one holds this Rumi's
    tape index rows (`rumi.tape_*`, by store.name) against the data dir's tapes. Read only."""
    from rumi.memory.store.postgres.tape_check import check_tapes

    assert settings.store.url is not None  # the config refuses postgres without a url
    head = (f"memory in PostgreSQL (the {STORE} check), {settings.data_dir / 'rumi.db'} not "
            "used")
    try:
        found = await check_tapes(settings.store.url.get_secret_value(), settings.store.name,
                                  settings.data_dir)
    except Exception as exc:   # the store check says why the server cannot be used
        return warned(MEMORY_DB, f"{head}; tape index not checked ({type(exc).__name__})",
                      f"see the {STORE} check")
    if found is None:
        return passed(MEMORY_DB, f"{head}; tape index not created yet (made at start)")
    return _tapes_result(f"{head}; tape index of \"{settings.store.name}\"", *found)

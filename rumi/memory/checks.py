"""Memory's `rumi doctor` checks: SQLite can hold it, and rumi.db is healthy and matches every
chat's MEMORY.md. Contributed through `MemoryFeature.doctor_checks`, run without the app."""

from __future__ import annotations

import asyncio
from pathlib import Path

from rumi.base.checks import CheckResult, DoctorCheck, failed, passed, warned
from rumi.config import Settings
from rumi.memory.store.sqlite_probe import check_sqlite


def doctor_checks() -> list[DoctorCheck]:
    async def sqlite(settings: Settings) -> CheckResult:
        return await asyncio.to_thread(check_sqlite)

    async def database(settings: Settings) -> CheckResult:
        return await asyncio.to_thread(check_memory_db, settings.data_dir)

    return [DoctorCheck("sqlite", sqlite), DoctorCheck("memory database", database)]


def check_memory_db(data_dir: Path) -> CheckResult:
    """rumi.db: quick_check, schema version, and each chat's MEMORY.md against its rows. A
    damaged database is a FAIL with the way out (the bot rebuilds it from MEMORY.md at start)."""
    from rumi.memory.files.healing import cross_check
    from rumi.memory.store.health import inspect_database
    from rumi.memory.store.tape_index import cross_check as tape_cross_check

    name = "memory database"
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
    if tape_problems:
        return warned(name, f"{detail}; " + "; ".join(tape_problems[:5]),
                      "start Rumi: it indexes a replaced or removed tape again from the file "
                      "(the tapes are the record; the index is only for /search)")
    notes = f"; {'; '.join(tape_notes[:3])} (indexed at the next start or /search)" \
        if tape_notes else "; tapes indexed"
    return passed(name, detail + "; MEMORY.md files match the database" + notes)

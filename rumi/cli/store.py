"""`rumi store migrate --to postgres|postgresql://…|sqlite`, and the store's start-up check.

`store_start_problem` runs before `rumi run` / `rumi chat` build the app: with
`[store] backend = "postgres"` and the server unreachable, they stop with one line naming
`host:port` and the fix (exit 2), instead of a traceback from whichever part met it first.

`migrate` copies one store into the other (`rumi.memory.store.migration`: forgotten texts,
memories with their stored vectors as they are, memory switches, context blocks; then this
Rumi's live reminders and chats' time zones, `store_reminders`; a second run copies nothing
new), then checks that every memory arrived and that a sample recall finds its memory in the
new store. Vectors of another model than the configured one are refused in one line, unless
`--reembed`. It never removes anything: the person switches `[store] backend` when ready. The
password is never printed (rumi.base.store_url).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import Any

from pydantic import SecretStr

from rumi.base.store_url import redacted_url
from rumi.cli import EXIT_CONFIG, add_action, add_group
from rumi.cli.store_reminders import copy_reminders, reminder_store
from rumi.config import Settings
from rumi.memory.store.codec import vector_label
from rumi.memory.store.migration import MigrationReport, ModelMismatch, check_models, copy_store

EXIT_MISMATCH = 1
POSTGRES_SCHEMES = ("postgresql://", "postgres://")


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    sub = add_group(subparsers, "store", "where memory lives: copy it between stores", __doc__)
    p = add_action(sub, "migrate", migrate,
                   "copy this data dir's store into another (nothing is removed)")
    p.add_argument("--to", required=True, metavar="TARGET",
                   help="'postgres' (the URL from RUMI_STORE_URL or store.url), a "
                        "postgresql:// URL (visible to other users in `ps`: prefer the "
                        "variable), or 'sqlite' (rumi.db in the data dir, from the configured "
                        "PostgreSQL)")
    p.add_argument("--reembed", action="store_true",
                   help="embed every memory again with the configured model instead of "
                        "copying the stored vectors (needed only when the source's vectors "
                        "were made by another model; slow, and recall changes)")


async def store_start_problem(settings: Settings) -> str | None:
    """One line when the configured PostgreSQL store cannot be used, else None (SQLite: None)."""
    if settings.store.backend != "postgres" or settings.store.url is None:
        return None
    from rumi.memory.store.postgres.probe import probe_store, start_problem

    return start_problem(await probe_store(settings.store.url.get_secret_value()))


class MigrateError(Exception):
    """A migration that cannot start, phrased in one line (never with the password)."""


def _target_url(to: str, settings: Settings) -> str:
    if to.startswith(POSTGRES_SCHEMES):
        return to
    if settings.store.url is None:
        raise MigrateError("--to postgres needs the server's URL: set RUMI_STORE_URL (or "
                           "store.url), or pass --to postgresql://user:password@host:5432/db")
    return settings.store.url.get_secret_value()


def _with_store(settings: Settings, backend: str, url: str | None) -> Settings:
    store = settings.store.model_copy(update={
        "backend": backend, "url": SecretStr(url) if url else settings.store.url})
    return settings.model_copy(update={"store": store})


async def _check_reachable(url: str) -> None:
    from rumi.memory.store.postgres.probe import probe_store, start_problem

    problem = start_problem(await probe_store(url))
    if problem:
        raise MigrateError(problem)


async def _open(settings: Settings, embedder: Any) -> Any:
    """The store `settings` names, opened through the seam's one opener; SQLite's damaged-file
    rescue never runs here (the source was checked healthy first)."""
    from rumi.memory.store.backend import open_store
    from rumi.memory.vectors.index import VectorIndex

    memory = settings.memory

    async def make_vectors(_health: Any) -> Any:
        if not memory.embeddings_enabled or embedder is None:
            return None
        return VectorIndex.of_data_dir(settings.data_dir, embedder, memory)

    return (await open_store(settings, embedder, make_vectors=make_vectors)).store


async def _plan(args: argparse.Namespace, settings: Settings) -> tuple[Settings, Settings]:
    """(source settings, target settings), after checking both ends can be used."""
    from rumi.memory.store.health import inspect_database

    to = args.to.strip()
    db_path = settings.data_dir / "rumi.db"
    if to == "sqlite":
        if settings.store.url is None:
            raise MigrateError("--to sqlite copies from the configured PostgreSQL, and none is "
                               "configured: set RUMI_STORE_URL (or store.url)")
        url = settings.store.url.get_secret_value()
        await _check_reachable(url)
        health = await asyncio.to_thread(inspect_database, db_path)
        if health.state not in ("ok", "missing"):
            raise MigrateError(f"{db_path} is {health.state} ({health.detail}): move it aside "
                               "or restore it before copying into it")
        return _with_store(settings, "postgres", url), _with_store(settings, "sqlite", None)
    if to == "postgres" or to.startswith(POSTGRES_SCHEMES):
        url = _target_url(to, settings)
        health = await asyncio.to_thread(inspect_database, db_path)
        if health.state == "missing":
            raise MigrateError(f"nothing to migrate: {db_path} does not exist")
        if health.state != "ok":
            raise MigrateError(f"{db_path} is {health.state} ({health.detail}): start Rumi "
                               "once on SQLite to repair it from MEMORY.md, then migrate")
        await _check_reachable(url)
        return _with_store(settings, "sqlite", None), _with_store(settings, "postgres", url)
    raise MigrateError(f"--to {'postgresql://…' if '://' in to else to!r}: expected "
                       "'postgres', a postgresql:// URL, or 'sqlite'")


async def migrate(args: argparse.Namespace, settings: Settings) -> int:
    from rumi.memory.factory import query_model_dir
    from rumi.memory.vectors.embeddings import Embedder

    try:
        source_settings, target_settings = await _plan(args, settings)
    except MigrateError as exc:
        print(f"rumi store migrate: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    memory = settings.memory
    embedder = await asyncio.to_thread(lambda: Embedder(memory, query_model_dir(settings))) \
        if memory.embeddings_enabled else None
    names = {s.store.backend: (redacted_url(s.store.url.get_secret_value())
                               if s.store.backend == "postgres" and s.store.url is not None
                               else f"sqlite:{settings.data_dir / 'rumi.db'}")
             for s in (source_settings, target_settings)}
    from rumi.memory.store.postgres.schema import StoreSchemaError

    try:
        report = await _copy(source_settings, target_settings, embedder, names, args.reembed)
    except (MigrateError, ModelMismatch, StoreSchemaError) as exc:
        print(f"rumi store migrate: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    print("\n".join(report.lines(settings.data_dir)))
    return 0 if report.ok else EXIT_MISMATCH


async def _copy(source_settings: Settings, target_settings: Settings, embedder: Any,
                names: dict[str, str], reembed: bool) -> MigrationReport:
    model = vector_label(embedder.model_name, source_settings.memory.recall_vector_context) \
        if embedder is not None else None
    source = await _open(source_settings, embedder)
    try:
        await check_models(source, model, reembed)   # before the target is even created
        if embedder is not None and not await embedder.warm_up():
            raise MigrateError(
                f"the embedding model is not usable here ({embedder.reason}): the sample "
                "recall (and --reembed) need it; fix memory.embedding_model_path, or set "
                "memory.embeddings_enabled = false for a keyword-only store")
        target = await _open(target_settings, embedder)
        try:
            report = await copy_store(source, target, names[source_settings.store.backend],
                                      names[target_settings.store.backend], model=model,
                                      reembed=reembed)
        finally:
            await target.close()
    finally:
        await source.close()
    reminders = await copy_reminders(reminder_store(source_settings),
                                     reminder_store(target_settings),
                                     [c.chat for c in report.chats])
    report.notes.append(reminders.line())
    report.others_moved = bool(reminders.copied or reminders.zones)
    return report

"""`rumi store migrate --to postgres|postgresql://…|sqlite`, and the store's start-up check.

`store_start_problem` runs before `rumi run` / `rumi chat` build the app: with
`[store] backend = "postgres"` and the server unreachable, they stop with one line naming
`host:port` and the fix (exit 2), instead of a traceback from whichever part met it first.

`migrate` copies one store into the other through the store seam's public API (each chat's
export lines into the other store's import, which skips what is already there: a second run
copies nothing new), then checks that every memory arrived and that a sample recall finds its
memory in the new store. It never removes anything: the person switches `[store] backend`
when ready. The password is never printed (rumi.base.store_url).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from dataclasses import dataclass, field
from typing import Any

from pydantic import SecretStr

from rumi.base.store_url import redacted_url
from rumi.cli import EXIT_CONFIG, add_action, add_group
from rumi.config import Settings

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


async def store_start_problem(settings: Settings) -> str | None:
    """One line when the configured PostgreSQL store cannot be used, else None (SQLite: None)."""
    if settings.store.backend != "postgres" or settings.store.url is None:
        return None
    from rumi.memory.store.postgres.probe import probe_store, start_problem

    return start_problem(await probe_store(settings.store.url.get_secret_value()))


class MigrateError(Exception):
    """A migration that cannot start, phrased in one line (never with the password)."""


@dataclass
class ChatCopy:
    chat: str
    in_source: int = 0
    copied: int = 0
    already: int = 0
    forgotten: int = 0
    missing: int = 0
    errors: list[str] = field(default_factory=list)


@dataclass
class MigrationReport:
    source: str
    target: str
    chats: list[ChatCopy] = field(default_factory=list)
    switches: int = 0
    sample: str | None = None          # the memory recalled as the sample
    sample_found: bool | None = None   # None: nothing to sample

    @property
    def ok(self) -> bool:
        return all(c.missing == 0 and not c.errors for c in self.chats) \
            and self.sample_found is not False

    def lines(self, data_dir: object) -> list[str]:
        total = sum(c.in_source for c in self.chats)
        copied = sum(c.copied for c in self.chats)
        already = sum(c.already for c in self.chats)
        out = [f"from {self.source}", f"to   {self.target}"]
        for c in self.chats:
            out.append(f"  chat {c.chat}: {c.in_source} memories, {c.copied} copied, "
                       f"{c.already} already there"
                       + (f", {c.forgotten} forgotten there (left out)" if c.forgotten else "")
                       + (f", {c.missing} MISSING" if c.missing else ""))
            out += [f"    line {e}" for e in c.errors[:5]]
        out.append(f"{copied} of {total} memories copied ({already} were already there) in "
                   f"{len(self.chats)} chats; {self.switches} memory switches copied")
        if self.sample_found is None:
            out.append("sample recall: nothing to recall (no active memory)")
        else:
            verdict = "found" if self.sample_found else "NOT FOUND"
            out.append(f"sample recall: {verdict} in the new store: {self.sample!r}")
        out.append(f"nothing was removed from {data_dir}; "
                   + ("set [store] backend in config.toml when ready" if self.ok
                      else "the copy is incomplete: see above"))
        return out


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
        return VectorIndex(settings.data_dir / "vectors", embedder.dim, embedder.model_name,
                           save_interval=memory.vector_save_interval_seconds)

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


def _identity(line: str) -> tuple[Any, ...] | None:
    import json

    record = json.loads(line)
    return (record.get("key"), record.get("content"), record.get("status"))


async def copy_store(source: Any, target: Any, source_name: str,
                     target_name: str) -> MigrationReport:
    """Every chat's memories (and memory switch) from `source` into `target`, then the checks."""
    report = MigrationReport(source_name, target_name)
    sample: tuple[str, str] | None = None
    for chat in sorted(await source.chats()):
        lines = await source.export_jsonl(chat)
        result = await target.import_report(chat, lines)
        copy = ChatCopy(chat, len(lines), result.imported, result.duplicates, result.forgotten,
                        errors=[f"{n}: {why}" for n, why in result.errors])
        arrived = {_identity(line) for line in await target.export_jsonl(chat)}
        wanted = [_identity(line) for line in lines]
        copy.missing = max(0, sum(1 for w in wanted if w not in arrived) - result.forgotten)
        report.chats.append(copy)
        state = await source.switch_state(chat)
        if state is not None and await target.switch_state(chat) != state:
            await target.set_switch(chat, state, "rumi store migrate")
            report.switches += 1
        if sample is None:
            active = await source.list(chat, limit=1)
            if active:
                sample = (chat, active[0].content)
    if sample is not None:
        chat, text = sample
        report.sample = text if len(text) <= 80 else text[:77] + "…"
        hits = await target.vector_search(chat, text, 5) if target.can_embed else []
        if not hits:
            hits = await target.keyword_search(chat, text, 5)
        found = await target.get_many(chat, [memory_id for memory_id, _ in hits])
        report.sample_found = any(m.content == text for m in found)
    return report


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
    if embedder is not None and not await embedder.warm_up():
        print(f"rumi store migrate: the embedding model is not usable here ({embedder.reason}): "
              "the copy would arrive without its vectors; fix memory.embedding_model_path, or "
              "set memory.embeddings_enabled = false for a keyword-only store", file=sys.stderr)
        return EXIT_CONFIG
    names = {s.store.backend: (redacted_url(s.store.url.get_secret_value())
                               if s.store.backend == "postgres" and s.store.url is not None
                               else f"sqlite:{settings.data_dir / 'rumi.db'}")
             for s in (source_settings, target_settings)}
    source = await _open(source_settings, embedder)
    try:
        target = await _open(target_settings, embedder)
        try:
            report = await copy_store(source, target, names[source_settings.store.backend],
                                      names[target_settings.store.backend])
        finally:
            await target.close()
    finally:
        await source.close()
    print("\n".join(report.lines(settings.data_dir)))
    return 0 if report.ok else EXIT_MISMATCH

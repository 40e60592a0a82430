"""What searching the conversation costs: reading the whole tape per search (0.5.0) against the
tape index in rumi.db (issue 14), and what building that index costs — once after an upgrade,
and after a lost database, when start-up rebuilds it from the tapes.

    python benchmarks/tape_search.py --messages 20000 --searches 18 [--postgres [--store-url URL]]

A synthetic tape of `--messages` lines: user and assistant messages (10–60 words) and, every
fifth line, a tool result of ~2 KB (tape lines not searched, but read). Each indexed search
follows one new message, so it includes the catch-up of that line. With `--postgres` the same
tape is indexed and searched again on the PostgreSQL store's tape index (`rumi` schema), on
the server of `--store-url` / RUMI_STORE_URL or on one of its own (tests/pg_server.py). Prints
one JSON object.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

from _cli import positive

from rumi.config import MemorySettings
from rumi.memory.store.memories import MemoryStore
from rumi.memory.store.tape_index import TapeIndex
from rumi.paths import ChatPaths

WORDS = ["gato", "perro", "casa", "música", "viaje", "trabajo", "café", "libro", "película",
         "jardín", "ciudad", "amiga", "río", "montaña", "tren", "carta", "novela", "cerámica"]


def record(n: int, rng: random.Random) -> dict:
    if n % 5 == 4:
        return {"id": n, "timestamp": "2026-06-01T10:00:00Z", "role": "tool", "name": "shell",
                "content": "x" * 2_000}
    words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(10, 60)))
    return {"id": n, "timestamp": f"2026-{1 + n % 12:02d}-01T10:00:00Z",
            "role": "user" if n % 2 else "assistant", "content": words + f" marca{n}"}


def write_tape(path: Path, messages: int) -> None:
    rng = random.Random(14)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as fh:
        for n in range(1, messages + 1):
            fh.write(json.dumps(record(n, rng), ensure_ascii=False) + "\n")


def scan(path: Path, query: str, limit: int) -> list[str]:
    """0.5.0's tape search: every line parsed, every word looked for in every message."""
    words = [w.casefold() for w in query.split()]
    hits: list[str] = []
    with open(path, "rb") as fh:
        for raw in fh:
            try:
                rec = json.loads(raw)
            except ValueError:
                continue
            content = rec.get("content")
            if rec.get("role") in ("user", "assistant") and isinstance(content, str) \
                    and all(w in content.casefold() for w in words):
                hits.append(content[:160])
    return hits[-limit:][::-1]


def summary(samples: list[float]) -> dict:
    return {"p50_ms": round(statistics.median(samples) * 1000, 1),
            "max_ms": round(max(samples) * 1000, 1)}


async def measure_index(index: TapeIndex, paths: ChatPaths, queries: list[str],
                        args: argparse.Namespace) -> dict:
    """Build the index of the chat's tape, then search after each new message, then the
    start-up catch-up of an unchanged tape. The tape grows by the searches' messages."""
    start = time.perf_counter()
    indexed = await index.sync("1")
    build = time.perf_counter() - start
    searches = []
    rng = random.Random(15)
    for n, q in enumerate(queries[: args.searches], start=args.messages + 1):
        with open(paths.tape, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(record(n, rng), ensure_ascii=False) + "\n")
        start = time.perf_counter()
        await index.search("1", q, 8)
        searches.append(time.perf_counter() - start)
    start = time.perf_counter()
    await index.sync_all()
    idle_start = time.perf_counter() - start
    return {"indexed_messages": indexed, "index_build_s": round(build, 2),
            "indexed_search": summary(searches),
            "start_up_sync_unchanged_ms": round(idle_start * 1000, 1),
            "load_avg_1m": round(os.getloadavg()[0], 1)}


async def measure_postgres(url: str | None, data: Path, paths: ChatPaths, queries: list[str],
                           args: argparse.Namespace) -> dict:
    """The same on the PostgreSQL store's tape index (`rumi.tape_messages`); without a URL,
    on a server of its own (tests/pg_server.py, fsync off, on the same cores)."""
    from rumi.memory.store.postgres.store import PgMemoryStore

    server = None
    if url is None:
        sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
        from tests.pg_server import PostgresServer

        server = PostgresServer().start()
        url = server.create_database("rumi_tape_bench")
    try:
        store = await PgMemoryStore.open(url, "bench", MemorySettings(embeddings_enabled=False),
                                         None)
        try:
            for source, *_ in (await store.tape_db.sources("1")).values():
                await store.tape_db.drop(source, delete_source=True)   # a rerun starts empty
            result = await measure_index(TapeIndex(data, store.tape_db), paths, queries, args)
            async with store.pool.connection() as conn:
                cur = await conn.execute(
                    "SELECT current_setting('server_version') AS v, "
                    "pg_total_relation_size('rumi.tape_messages') AS bytes")
                row = await cur.fetchone()
            return {**result, "index_table_bytes": int(row["bytes"]),
                    "server": f"PostgreSQL {row['v']}"
                              + (" (tests/pg_server.py, fsync off)" if server else "")}
        finally:
            await store.close()
    finally:
        if server is not None:
            server.stop()


async def run(args: argparse.Namespace) -> dict:
    queries = [f"{a} {b}" for a, b in zip(WORDS, WORDS[3:] + WORDS[:3], strict=True)]
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp)
        paths = ChatPaths(data, "1")
        write_tape(paths.tape, args.messages)
        size = paths.tape.stat().st_size
        scans = []
        for q in queries[: args.searches]:
            start = time.perf_counter()
            await asyncio.to_thread(scan, paths.tape, q, 8)
            scans.append(time.perf_counter() - start)
        store = await MemoryStore.open(data / "rumi.db", MemorySettings(embeddings_enabled=False))
        try:
            db_before = (data / "rumi.db").stat().st_size
            sqlite = await measure_index(TapeIndex(data, store.tape_db), paths, queries, args)
            await store.connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            db_growth = (data / "rumi.db").stat().st_size - db_before
        finally:
            await store.close()
        out = {
            "messages": args.messages, "tape_bytes": size,
            "indexed_messages": sqlite.pop("indexed_messages"),
            "scan_search": summary(scans), "index_build_s": sqlite["index_build_s"],
            "index_db_bytes": db_growth, "indexed_search": sqlite["indexed_search"],
            "start_up_sync_unchanged_ms": sqlite["start_up_sync_unchanged_ms"],
            "load_avg_1m": sqlite["load_avg_1m"],
        }
        if args.postgres:
            write_tape(paths.tape, args.messages)   # the same tape again, for the same run
            out["postgres"] = await measure_postgres(args.store_url, data, paths, queries,
                                                     args)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=positive, default=20_000)
    parser.add_argument("--searches", type=positive, default=18)
    parser.add_argument("--postgres", action="store_true",
                        help="also measure the PostgreSQL store's tape index")
    parser.add_argument("--store-url", default=None,
                        help="the PostgreSQL to measure (default: a server of its own; "
                             "prefer RUMI_STORE_URL to a password on the command line)")
    args = parser.parse_args()
    args.store_url = args.store_url or os.environ.get("RUMI_STORE_URL")
    args.searches = min(args.searches, len(WORDS))
    print(json.dumps(asyncio.run(run(args)), indent=2))


if __name__ == "__main__":
    main()

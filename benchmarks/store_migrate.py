"""`rumi store migrate` on a data dir of N memories: copying the stored vectors (what it does
now) against embedding every memory again (`--reembed`, what it did before), both into
PostgreSQL, then a second run (nothing to move) and the way back (`--to sqlite`).

    python benchmarks/store_migrate.py --model-path DIR [--memories 20000] [--chats 20]
        [--forgotten 40] [--store-url postgresql://…] [--no-reembed]

Each step is the real command in its own process (`python -m`-style `rumi store migrate`),
timed from start to exit, so the model load and the checks are in the numbers. The data dir is
filled as `store_backends.py` fills its chat: `--pool` texts embedded for real, each memory its
pool text plus unique words and that vector plus small noise, through the store's own
`save_many` and vector API; `--forgotten` memories are then forgotten (so their hashes travel).
Without `--store-url` the run starts its own PostgreSQL (tests/pg_server.py, fsync off) on the
same cores; each migration gets a fresh database.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
from _cli import positive
from _store import bot_index
from recall_latency import TextMaker

from rumi.config import MemorySettings
from rumi.memory.store.memories import MemoryStore
from rumi.memory.store.models import MemorySource, MemoryType, NewMemory
from rumi.memory.vectors.embeddings import Embedder

REPO = Path(__file__).resolve().parent.parent
RUMI = [sys.executable, "-c", "import sys; from rumi.cli import main; sys.exit(main())"]


async def fill(data: Path, settings: MemorySettings, embedder: Embedder, args: argparse.Namespace
               ) -> dict[str, int]:
    maker = TextMaker(seed=5)
    pool_texts = [maker.sentence(12) for _ in range(args.pool)]
    pool_vectors = await embedder.embed(pool_texts)
    assert pool_vectors is not None
    rng = np.random.default_rng(5)
    store = await MemoryStore.open(data / "rumi.db", settings, embedder,
                                   bot_index(data, embedder, settings))
    try:
        per_chat = args.memories // args.chats
        for c in range(args.chats):
            chat = str(100_000 + c) if c % 4 else str(-100_000 - c)
            for lo in range(0, per_chat, 2_000):
                hi = min(per_chat, lo + 2_000)
                pool_ix = [(c * per_chat + n) % len(pool_texts) for n in range(lo, hi)]
                items = [NewMemory(content=f"{pool_texts[p]} {maker.sentence(6)} c{c}n{n}",
                                   type=MemoryType.EPISODIC if n % 3 else MemoryType.FACT,
                                   source=MemorySource.EXPLICIT if n % 7 == 0
                                   else MemorySource.AUTO)
                         for n, p in zip(range(lo, hi), pool_ix, strict=True)]
                noise = rng.normal(0, 0.02, size=(hi - lo, embedder.dim)).astype(np.float32)
                matrix = pool_vectors[pool_ix] + noise
                matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
                saved = await store.save_many(chat, items, embed=False)
                async with store.transaction():
                    await store.index.write_vectors([r.memory.id for r in saved], matrix)
            if c < args.forgotten:
                victim = (await store.list(chat, limit=1))[0]
                await store.forget(chat, memory_id=victim.id)
        total = 0
        for chat in await store.chats():
            total += len(await store.export_jsonl(chat))
        return {"memories": total, "chats": len(await store.chats()),
                "forgotten": len(await store.forgotten_list())}
    finally:
        await store.close()


def run_migrate(config: Path, url: str, *extra: str) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RUMI_")
           or k == "RUMI_SHARED_DIR"}
    env["RUMI_STORE_URL"] = url
    env["PYTHONPATH"] = str(REPO)
    load = os.getloadavg()[0]
    started = time.perf_counter()
    done = subprocess.run([*RUMI, "store", "migrate", "--config", str(config), *extra],
                          capture_output=True, text=True, env=env)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"migrate {extra} failed ({done.returncode}): {done.stderr[-2000:]}")
    summary = [line for line in done.stdout.splitlines()
               if line.startswith(("vectors:", "sample recall", "nothing new"))
               or " memories copied " in line]
    return {"seconds": round(seconds, 1), "load_avg_1m_at_start": round(load, 1),
            "load_avg_1m_at_end": round(os.getloadavg()[0], 1), "printed": summary}


def write_config(path: Path, data: Path, args: argparse.Namespace, backend: str) -> Path:
    path.write_text(f'data_dir = "{data}"\n[memory]\nembedding_model = "{args.model_name}"\n'
                    f'embedding_model_path = "{args.model_path}"\n'
                    f"embedding_threads = {args.embedding_threads}\n"
                    f'[store]\nbackend = "{backend}"\nname = "bench"\n', encoding="utf-8")
    return path


async def run(args: argparse.Namespace) -> dict[str, Any]:
    args.model_name = args.model_name or Path(args.model_path).name
    settings = MemorySettings(embedding_model_path=args.model_path,
                              embedding_model=args.model_name,
                              embedding_threads=args.embedding_threads,
                              embedding_load_wait_seconds=None)
    embedder = Embedder(settings)
    if not await embedder.warm_up():
        raise SystemExit(f"embedding model unavailable: {embedder.reason}")
    server = None
    if args.store_url is None:
        sys.path.insert(0, str(REPO))
        from tests.pg_server import PostgresServer

        server = PostgresServer().start()

    def database(name: str) -> str:
        if server is not None:
            return server.create_database(name)
        return str(args.store_url)

    out: dict[str, Any] = {"model": embedder.model_name, "cpus": os.cpu_count()}
    try:
        with tempfile.TemporaryDirectory(prefix="rumi-migrate-") as tmp:
            root = Path(tmp)
            started = time.perf_counter()
            out["data_dir"] = await fill(root / "data", settings, embedder, args)
            out["fill_seconds"] = round(time.perf_counter() - started, 1)
            print(json.dumps(out), file=sys.stderr, flush=True)
            config = write_config(root / "config.toml", root / "data", args, "sqlite")
            copy_url = database("rumi_migrate_copy")
            out["to_postgres_copy"] = run_migrate(config, copy_url, "--to", "postgres")
            print(json.dumps(out["to_postgres_copy"]), file=sys.stderr, flush=True)
            out["to_postgres_again"] = run_migrate(config, copy_url, "--to", "postgres")
            print(json.dumps(out["to_postgres_again"]), file=sys.stderr, flush=True)
            back = write_config(root / "back.toml", root / "back", args, "postgres")
            out["to_sqlite_copy"] = run_migrate(back, copy_url, "--to", "sqlite")
            print(json.dumps(out["to_sqlite_copy"]), file=sys.stderr, flush=True)
            if args.reembed and server is not None:
                out["to_postgres_reembed"] = run_migrate(
                    config, database("rumi_migrate_reembed"), "--to", "postgres", "--reembed")
    finally:
        if server is not None:
            server.stop()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model-path", required=True)
    parser.add_argument("--model-name")
    parser.add_argument("--memories", type=positive, default=20_000)
    parser.add_argument("--chats", type=positive, default=20)
    parser.add_argument("--forgotten", type=int, default=20, help="chats that forget one memory")
    parser.add_argument("--pool", type=positive, default=500)
    parser.add_argument("--embedding-threads", type=positive, default=2)
    parser.add_argument("--store-url")
    parser.add_argument("--no-reembed", dest="reembed", action="store_false",
                        help="skip the --reembed run (the slow one)")
    print(json.dumps(asyncio.run(run(parser.parse_args())), indent=2))


if __name__ == "__main__":
    main()

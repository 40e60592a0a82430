"""Memory store costs that operators feel: bulk save with embeddings, search latency, and how
long the vector index takes to verify or rebuild when Rumi starts.

    python benchmarks/memory_store.py --n 10000 --model-path ../shared/models/all-MiniLM-L6-v2-onnx

Texts are LoCoMo dialogue turns (cycled, made unique) when ../shared/bench/locomo-dev.json
exists, else synthetic sentences. Prints one JSON object.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import tempfile
import time
from pathlib import Path

import _cli  # noqa: F401 - this checkout's `rumi`, not the venv's
from _store import bot_index

from rumi.config import MemorySettings
from rumi.memory.store.memories import MemoryStore
from rumi.memory.store.models import MemoryType, NewMemory
from rumi.memory.vectors.embeddings import Embedder

HERE = Path(__file__).resolve().parent
LOCOMO = HERE.parent.parent / "shared" / "bench" / "locomo-dev.json"


def load_texts(n: int) -> list[str]:
    base: list[str] = []
    if LOCOMO.exists():
        for sample in json.loads(LOCOMO.read_text(encoding="utf-8")):
            conv = sample["conversation"]
            for key, turns in conv.items():
                if key.startswith("session_") and isinstance(turns, list):
                    base.extend(f"{t['speaker']}: {t['text']}" for t in turns)
    if not base:
        rng = random.Random(7)
        words = ["cat", "dog", "house", "music", "travel", "work", "coffee", "book",
                 "movie", "garden", "city", "friend"]
        base = [" ".join(rng.choice(words) for _ in range(12)) for _ in range(1000)]
    return [f"{base[i % len(base)]} (#{i})" for i in range(n)]


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


async def open_store(data: Path, settings: MemorySettings, embedder: Embedder) -> MemoryStore:
    vectors = bot_index(data, embedder, settings)
    return await MemoryStore.open(data / "rumi.db", settings, embedder, vectors)


async def run(args: argparse.Namespace) -> dict:
    settings = MemorySettings(embedding_model="sentence-transformers/all-MiniLM-L6-v2",
                              embedding_model_path=args.model_path,
                              embedding_threads=args.threads)
    embedder = Embedder(settings)
    t = time.perf_counter()
    if not await embedder.warm_up():
        raise SystemExit(f"model unavailable: {embedder.reason}")
    load_s = time.perf_counter() - t
    texts = load_texts(args.n)
    chat = "bench"
    out: dict = {"n": args.n, "model_load_s": round(load_s, 2), "threads": args.threads}
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp)
        store = await open_store(data, settings, embedder)
        t = time.perf_counter()
        for start in range(0, len(texts), args.batch):
            await store.save_many(chat, [NewMemory(x, type=MemoryType.EPISODIC)
                                         for x in texts[start : start + args.batch]])
        save_s = time.perf_counter() - t
        out["save_many_per_s"] = round(args.n / save_s, 1)
        rng = random.Random(1)
        queries = [rng.choice(texts).split(":", 1)[-1][:80] for _ in range(args.queries)]
        for name, fn in (("keyword", store.keyword_search), ("vector", store.vector_search)):
            lat = []
            for q in queries:
                t = time.perf_counter()
                await fn(chat, q, 25)
                lat.append((time.perf_counter() - t) * 1000)
            out[f"{name}_search_ms"] = {"p50": round(statistics.median(lat), 2),
                                        "p95": round(pct(lat, 0.95), 2)}
        t = time.perf_counter()
        await store.index.rebuild(chat)
        out["index_rebuild_s"] = round(time.perf_counter() - t, 3)
        await store.close()
        out["db_mb"] = round((data / "rumi.db").stat().st_size / 2**20, 1)
        out["index_mb"] = round((data / "vectors" / f"{chat}.usearch").stat().st_size / 2**20, 1)
        store = await open_store(data, settings, embedder)
        t = time.perf_counter()
        await store.index.ensure(chat)  # sha256 + load + id-set comparison on a clean start
        out["reopen_verify_s"] = round(time.perf_counter() - t, 3)
        await store.close()
        path = data / "vectors" / f"{chat}.usearch"
        path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
        store = await open_store(data, settings, embedder)
        t = time.perf_counter()
        await store.index.ensure(chat)  # truncated file: detect + rebuild from SQLite
        out["self_heal_s"] = round(time.perf_counter() - t, 3)
        await store.close()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--model-path", type=Path,
                        default=HERE.parent.parent / "shared" / "models" / "all-MiniLM-L6-v2-onnx")
    print(json.dumps(asyncio.run(run(parser.parse_args()))))


if __name__ == "__main__":
    main()

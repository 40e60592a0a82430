"""Time to embed one recall query: the model itself vs its int8 query twin.

    python benchmarks/query_embedding.py --model-path DIR [--questions FILE] [--limit 300]
        [--rounds 3] [--embedding-threads N]

Both go through `Embedder.embed_query` exactly as a recall does (thread hop included). The
queries are the questions of a LoCoMo-format file (default: the shared dev file) — short chat
questions like the ones the bot embeds per message. The twin is made for the run in a temporary
directory with the code of `rumi models quantize`. Rounds alternate full/twin so a noisy
neighbour hurts both alike. Also prints how close the twin's query vectors are to the model's
(cosine, over all queries) and both models' file sizes, as JSON.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
from _cli import positive

from rumi.config import MemorySettings
from rumi.memory.vectors.embeddings import Embedder, vector_model_name
from rumi.memory.vectors.query_twin import quantize_model

DEFAULT_QUESTIONS = Path(__file__).resolve().parents[2] / "shared" / "bench" / "locomo-dev.json"


def questions(path: Path, limit: int) -> list[str]:
    data = json.loads(path.read_text(encoding="utf-8"))
    found = [qa["question"] for sample in data for qa in sample.get("qa", [])
             if isinstance(qa.get("question"), str)]
    unique = list(dict.fromkeys(found))
    return unique[:limit]


async def timed(embedder: Embedder, texts: list[str]) -> tuple[list[float], np.ndarray]:
    times: list[float] = []
    vectors = []
    for text in texts:
        started = time.perf_counter()
        vector = await embedder.embed_query(text)
        times.append((time.perf_counter() - started) * 1000)
        assert vector is not None
        vectors.append(vector)
    return times, np.asarray(vectors)


def stats(times: list[float]) -> dict[str, float]:
    ms = np.asarray(times)
    return {"p50_ms": round(float(np.percentile(ms, 50)), 2),
            "p95_ms": round(float(np.percentile(ms, 95)), 2),
            "mean_ms": round(float(ms.mean()), 2)}


async def measure(args: argparse.Namespace) -> dict[str, Any]:
    settings = MemorySettings(embedding_model=Path(args.model_path).name,
                              embedding_model_path=args.model_path,
                              embedding_threads=args.embedding_threads,
                              embedding_load_wait_seconds=None)
    texts = questions(args.questions, args.limit)
    with tempfile.TemporaryDirectory(prefix="rumi-twin-") as tmp:
        twin_dir = Path(tmp) / "twin"
        made = await asyncio.to_thread(quantize_model, args.model_path, "model.onnx", twin_dir,
                                       vector_model_name(settings))
        full = Embedder(settings)
        twin = Embedder(settings, query_model_path=twin_dir)
        for embedder in (full, twin):
            if not await embedder.warm_up():
                raise SystemExit(f"model unavailable: {embedder.reason}")
        if twin.query_twin.model is None:
            raise SystemExit(f"query twin unusable: {twin.query_twin.reason}")
        await timed(full, texts[:5])
        await timed(twin, texts[:5])
        runs: dict[str, list[float]] = {"full": [], "twin": []}
        for _ in range(args.rounds):
            full_times, full_vectors = await timed(full, texts)
            twin_times, twin_vectors = await timed(twin, texts)
            runs["full"] += full_times
            runs["twin"] += twin_times
    cosines = np.sum(full_vectors * twin_vectors, axis=1)
    return {
        "model": full.model_name, "queries": len(texts), "rounds": args.rounds,
        "embedding_threads": full._threads,  # noqa: SLF001 - report what really ran
        "full": stats(runs["full"]), "twin": stats(runs["twin"]),
        "speedup_p50": round(stats(runs["full"])["p50_ms"] / stats(runs["twin"])["p50_ms"], 2),
        "cosine_twin_vs_full": {"min": round(float(cosines.min()), 3),
                                "p5": round(float(np.percentile(cosines, 5)), 3),
                                "median": round(float(np.median(cosines)), 3)},
        "agreement_probe": round(float(twin.query_twin.agreement or 0), 3),
        "model_mb": round(made.source_bytes / 1e6, 1), "twin_mb": round(made.twin_bytes / 1e6, 1),
        "load_avg_1m": round(os.getloadavg()[0], 2),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model-path", type=Path, required=True)
    parser.add_argument("--questions", type=Path, default=DEFAULT_QUESTIONS,
                        help="LoCoMo-format JSON whose questions are the queries")
    parser.add_argument("--limit", type=positive, default=300)
    parser.add_argument("--rounds", type=positive, default=3)
    parser.add_argument("--embedding-threads", type=int, default=None)
    args = parser.parse_args(argv)
    json.dump(asyncio.run(measure(args)), sys.stdout, indent=2)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

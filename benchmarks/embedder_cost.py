"""What an embedding model costs the machine: load time, CPU per memory and per query, peak RSS.

    python benchmarks/embedder_cost.py [--model NAME ...] [--model-path DIR] [--threads 1]
        [--texts FILE] [--passages 256] [--queries 100]

Each model is measured in a fresh child process of its own (so its load time and peak RSS are
its alone, not the previous model's), through `Embedder` exactly as the bot uses it: `warm_up`,
then `--passages` conversation turns in one `embed` call (the bot's batching), then `--queries`
questions one at a time through `embed_query`. CPU time is the process's (all threads), so with
`--threads 1` it is what one core of a Pi pays; wall times on a busy machine are contention, not
cost — the load average is printed beside them. Texts are the turns and questions of a
LoCoMo-format file (default: the shared dev set). Default models: the packaged ones (what
`pip install` brings). Prints one JSON object.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from _cli import positive

SHARED = Path(os.environ.get("RUMI_SHARED_DIR", Path(__file__).resolve().parents[2] / "shared"))
DEFAULT_TEXTS = SHARED / "bench" / "locomo-dev.json"


def texts_of(path: Path, passages: int, queries: int) -> tuple[list[str], list[str]]:
    data = json.loads(path.read_text(encoding="utf-8"))
    turns: list[str] = []
    questions: list[str] = []
    for sample in data:
        conversation = sample.get("conversation", {})
        for key in sorted(k for k in conversation if k.startswith("session_")
                          and isinstance(conversation[k], list)):
            turns += [t["text"] for t in conversation[key] if isinstance(t.get("text"), str)]
        questions += [qa["question"] for qa in sample.get("qa", [])
                      if isinstance(qa.get("question"), str)]
    return list(dict.fromkeys(turns))[:passages], list(dict.fromkeys(questions))[:queries]


def proc_kb(field: str) -> int:
    """VmRSS / VmHWM of this process, in kB (Linux)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


async def child(spec: dict[str, Any]) -> dict[str, Any]:
    from rumi.config import MemorySettings
    from rumi.memory.vectors.embeddings import Embedder

    passages, queries = texts_of(Path(spec["texts"]), spec["passages"], spec["queries"])
    settings = MemorySettings(embedding_model=spec["model"],
                              embedding_model_path=spec.get("model_path"),
                              embedding_threads=spec["threads"],
                              embedding_load_wait_seconds=None)
    rss_before = proc_kb("VmRSS")
    embedder = Embedder(settings)
    wall, cpu = time.perf_counter(), time.process_time()
    if not await embedder.warm_up():
        raise SystemExit(f"{spec['model']}: {embedder.reason}")
    load = {"wall_s": round(time.perf_counter() - wall, 2),
            "cpu_s": round(time.process_time() - cpu, 2)}
    rss_loaded = proc_kb("VmRSS")
    await embedder.embed(passages[:4])  # first-call allocations are not per-memory cost
    wall, cpu = time.perf_counter(), time.process_time()
    matrix = await embedder.embed(passages)
    passage = {"count": len(passages),
               "cpu_ms": round(1000 * (time.process_time() - cpu) / len(passages), 2),
               "wall_ms": round(1000 * (time.perf_counter() - wall) / len(passages), 2)}
    assert matrix is not None and matrix.shape == (len(passages), embedder.dim)
    walls: list[float] = []
    cpu = time.process_time()
    for text in queries:
        started = time.perf_counter()
        assert await embedder.embed_query(text) is not None
        walls.append(1000 * (time.perf_counter() - started))
    walls.sort()
    query = {"count": len(queries),
             "cpu_ms": round(1000 * (time.process_time() - cpu) / len(queries), 2),
             "wall_p50_ms": round(walls[len(walls) // 2], 2)}
    return {"model": embedder.model_name, "dim": embedder.dim, "threads": spec["threads"],
            "load": load, "passage": passage, "query": query,
            "rss_mib": {"python_and_rumi": round(rss_before / 1024, 1),
                        "model_loaded": round(rss_loaded / 1024, 1),
                        "end": round(proc_kb("VmRSS") / 1024, 1),
                        "peak": round(proc_kb("VmHWM") / 1024, 1)},
            "load_avg_1m": round(os.getloadavg()[0], 2)}


def measure(spec: dict[str, Any]) -> dict[str, Any]:
    proc = subprocess.run([sys.executable, __file__, "--child", json.dumps(spec)],
                          capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        return {"model": spec["model"], "error": (proc.stderr.strip().splitlines() or ["?"])[-1]}
    return json.loads(proc.stdout)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", action="append", default=[],
                        help="a memory.embedding_model name (repeatable; default: every "
                             "packaged model)")
    parser.add_argument("--model-path", type=Path, action="append", default=[],
                        help="a local fastembed ONNX directory (repeatable)")
    parser.add_argument("--threads", type=positive, default=1)
    parser.add_argument("--texts", type=Path, default=DEFAULT_TEXTS,
                        help="LoCoMo-format JSON: its turns are the memories, its questions "
                             "the queries")
    parser.add_argument("--passages", type=positive, default=256)
    parser.add_argument("--queries", type=positive, default=100)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        result = asyncio.run(child(json.loads(args.child)))
    else:
        from rumi.memory.vectors.packaged import PACKAGED

        common = {"threads": args.threads, "texts": str(args.texts),
                  "passages": args.passages, "queries": args.queries}
        specs = [{"model": name, **common} for name in args.model]
        specs += [{"model": path.name, "model_path": str(path), **common}
                  for path in args.model_path]
        if not specs:
            specs = [{"model": name, **common} for name in PACKAGED]
        result = {"models": [measure(spec) for spec in specs],
                  "cpus": os.cpu_count(), "python": sys.version.split()[0]}
    json.dump(result, sys.stdout, indent=2)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

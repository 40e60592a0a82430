"""The first recall after a start, timed from the process's own start: a fresh Python process
opens a chat's kept database (filled by `recall_latency.py --data DIR`) the way the bot does
after a restart and recalls once.

    python benchmarks/recall_latency.py --sizes 100000 --data /tmp/d100k   # fills it once
    python benchmarks/first_recall.py --data /tmp/d100k [--runs 3] [--lazy | --warm]

What the child does, in the bot's order: import Rumi's memory modules; start loading the
model in its thread (`memory.embedding_preload`, the default; `--lazy` leaves it to the first
recall); open the store; recall once (MemoryRecall.recall, k = 6): the chat's vector index is
loaded from disk and verified against SQLite, the keyword table found, the query embedded if
the model is in within `memory.embedding_load_wait_seconds` (else keywords only, as the bot).
`--warm`: the message comes after the start's background warm-up (with preload the bot loads
every chat's vector index and runs the model's first query: `MemoryRuntime.warm_recall`).
Milestones are wall-clock times since the parent spawned the child, so they include the
interpreter's start and the imports. Prints one JSON object: each run's milestones, whether
the first recall used the model (`semantic`), a second recall's time and the child's RSS
after it (the chat's index still loaded).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from _cli import positive

CHAT = "424242"


def queries(data: Path) -> tuple[str, str]:
    """Two queries made of words the chat holds (from two of its memories)."""
    with sqlite3.connect(data / "rumi.db") as db:
        rows = db.execute("SELECT content FROM memories WHERE chat_id = ? ORDER BY id DESC "
                          "LIMIT 2", (CHAT,)).fetchall()
    if len(rows) < 2:
        raise SystemExit(f"chat {CHAT} in {data} has fewer than 2 memories")
    return tuple(" ".join(r[0].split()[2:8]) for r in rows)   # type: ignore[return-value]


def _rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return round(int(line.split()[1]) / 1024, 1)
    return 0.0


def child(data: Path, lazy: bool, warm: bool, spawned: float,
          texts: list[str], engine: str | None = None) -> dict[str, Any]:
    marks: dict[str, float] = {}

    def mark(name: str) -> None:
        marks[name] = round((time.time() - spawned) * 1000, 1)

    mark("python_started")
    from _store import bot_index

    from rumi.config import MemorySettings
    from rumi.memory.install import MemoryRuntime
    from rumi.memory.recall.retrieval import MemoryRecall
    from rumi.memory.store.memories import MemoryStore
    from rumi.memory.vectors.embeddings import Embedder

    mark("imported")

    async def run() -> dict[str, Any]:
        settings = MemorySettings(**({"recall_keyword_engine": engine} if engine else {}))
        embedder = Embedder(settings)
        if not lazy:
            embedder.start_loading()
        store = await MemoryStore.open(data / "rumi.db", settings, embedder,
                                       bot_index(data, embedder, settings))
        mark("store_open")
        try:
            if warm:   # the bot's start: indexes loaded in the background, then a message
                runtime = MemoryRuntime(lifecycle=None, commands=None, journal=None,  # type: ignore[arg-type]
                                        sync=None, watch=False, store=store, preload=True)
                await runtime.warm_recall()   # waits for the model, runs its first query
                mark("warm")
            recall = MemoryRecall(store, settings)
            started = time.perf_counter()
            found = await recall.recall(CHAT, texts[0], k=6, touch=False)
            recall_ms = round((time.perf_counter() - started) * 1000, 1)
            mark("first_recall_done")
            loaded = embedder.loaded
            if not loaded:
                await embedder.warm_up()
            mark("model_loaded_by")
            started = time.perf_counter()
            await recall.recall(CHAT, texts[1], k=6, touch=False)
            second_ms = round((time.perf_counter() - started) * 1000, 1)
            rss = _rss_mb()   # the chat's index still loaded
        finally:
            await store.close()
        return {"marks_ms": marks, "first_recall_ms": recall_ms, "second_recall_ms": second_ms,
                "semantic": bool(found) and any(s.score.vector > 0 for s in found),
                "model_loaded_at_first_recall": loaded, "results": len(found), "rss_mb": rss}

    return asyncio.run(run())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--runs", type=positive, default=3)
    parser.add_argument("--lazy", action="store_true",
                        help="no preload: the first recall loads the model")
    parser.add_argument("--warm", action="store_true",
                        help="the message comes after the start-up warm-up (the chats' "
                             "vector indexes and the model loaded, as the bot does with "
                             "preload): only the recall is left")
    parser.add_argument("--keyword-engine", choices=("fts5", "memory"), default=None,
                        help="memory.recall_keyword_engine (default: the setting's default)")
    parser.add_argument("--child", type=float, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--query", action="append", default=[], help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child is not None:
        print(json.dumps(child(args.data, args.lazy, args.warm, args.child, args.query,
                               args.keyword_engine)))
        return 0
    if not (args.data / "rumi.db").exists():
        raise SystemExit(f"no rumi.db in {args.data}: fill it with recall_latency.py --data")
    first, second = queries(args.data)
    runs = []
    for _ in range(args.runs):
        command = [sys.executable, __file__, "--data", str(args.data), "--query", first,
                   "--query", second, "--child", repr(time.time())]
        command += ["--lazy"] if args.lazy else []
        command += ["--warm"] if args.warm else []
        command += ["--keyword-engine", args.keyword_engine] if args.keyword_engine else []
        done = subprocess.run(command, capture_output=True, text=True, check=True)  # noqa: S603
        runs.append(json.loads(done.stdout.splitlines()[-1]))
    print(json.dumps({"data": str(args.data), "lazy": args.lazy, "warm": args.warm,
                      "keyword_engine": args.keyword_engine,
                      "load_avg_1m": round(os.getloadavg()[0], 1), "runs": runs}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""What searching the conversation costs: reading the whole tape per search (0.5.0) against the
tape index in rumi.db (issue 14), and what building that index costs — once after an upgrade,
and after a lost database, when start-up rebuilds it from the tapes.

    python benchmarks/tape_search.py --messages 20000 --searches 18

A synthetic tape of `--messages` lines: user and assistant messages (10–60 words) and, every
fifth line, a tool result of ~2 KB (tape lines not searched, but read). Each indexed search
follows one new message, so it includes the catch-up of that line. Prints one JSON object.
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
            index = TapeIndex(data, store.tape_db)
            db_before = (data / "rumi.db").stat().st_size
            start = time.perf_counter()
            indexed = await index.sync("1")
            build = time.perf_counter() - start
            await store.connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            db_growth = (data / "rumi.db").stat().st_size - db_before
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
        finally:
            await store.close()
    return {
        "messages": args.messages, "tape_bytes": size, "indexed_messages": indexed,
        "scan_search": summary(scans), "index_build_s": round(build, 2),
        "index_db_bytes": db_growth, "indexed_search": summary(searches),
        "start_up_sync_unchanged_ms": round(idle_start * 1000, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=positive, default=20_000)
    parser.add_argument("--searches", type=positive, default=18)
    args = parser.parse_args()
    args.searches = min(args.searches, len(WORDS))
    print(json.dumps(asyncio.run(run(args)), indent=2))


if __name__ == "__main__":
    main()

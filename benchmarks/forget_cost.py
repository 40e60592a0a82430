"""What a forget costs now that it erases: delete the rows and their history, optimize the
keyword indexes (`memories_fts` is shared by every chat, so its size is the database's), rebuild
the chat's vector index and truncate the WAL. Forget is rare and the person waits for it.

    python benchmarks/forget_cost.py --n 10000 --other 10000 --forgets 20
    python benchmarks/forget_cost.py --n 2000 --forgets 10 \\
        --model-path ../shared/models/all-MiniLM-L6-v2-onnx   # with embeddings + vector index

N synthetic memories in the chat, `--other` in a second chat; each forget removes one memory
that superseded another. Prints one JSON object.
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
from _store import bot_index

from rumi.config import MemorySettings
from rumi.memory.store.memories import MemoryStore
from rumi.memory.store.models import NewMemory
from rumi.memory.vectors.embeddings import Embedder

WORDS = ["cat", "dog", "house", "music", "travel", "work", "coffee", "book", "movie",
         "garden", "city", "friend", "river", "mountain", "train", "letter"]


def texts(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choice(WORDS) for _ in range(10)) + f" #{seed}-{i}" for i in range(n)]


async def fill(store: MemoryStore, chat: str, items: list[str]) -> None:
    for start in range(0, len(items), 512):
        await store.save_many(chat, [NewMemory(x) for x in items[start : start + 512]])


async def run(args: argparse.Namespace) -> dict:
    embedder = vectors = None
    settings = MemorySettings(embeddings_enabled=False)
    if args.model_path:
        settings = MemorySettings(embedding_model="sentence-transformers/all-MiniLM-L6-v2",
                                  embedding_model_path=args.model_path)
        embedder = Embedder(settings)
        if not await embedder.warm_up():
            raise SystemExit(f"model unavailable: {embedder.reason}")
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp)
        if embedder is not None:
            vectors = bot_index(data, embedder, settings)
        store = await MemoryStore.open(data / "rumi.db", settings, embedder, vectors)
        try:
            await fill(store, "bench", texts(args.n, 1))
            if args.other:
                await fill(store, "other", texts(args.other, 2))
            targets = []
            for i in range(args.forgets):
                old = (await store.save("bench", NewMemory(f"clave {i} vieja", key=f"k{i}")))
                new = await store.supersede("bench", old.memory.id,
                                            NewMemory(f"clave {i} nueva", key=f"k{i}"))
                targets.append(new.id)
            await store.keyword_search("bench", "cat coffee", 5)   # builds the chat's recall table
            if store.vectors is not None:
                await store.prepare_vectors("bench")
            timings = []
            for memory_id in targets:
                t = time.perf_counter()
                gone = await store.forget("bench", memory_id=memory_id)
                timings.append((time.perf_counter() - t) * 1000)
                assert len(gone) == 1 and gone.history == 1
            size = (data / "rumi.db").stat().st_size
        finally:
            await store.close()
    ordered = sorted(timings)
    return {
        "n_chat": args.n, "n_other_chat": args.other, "forgets": args.forgets,
        "vectors": embedder is not None,
        "forget_ms_first": round(timings[0], 1),   # merges every keyword segment once
        "forget_ms_p50": round(statistics.median(ordered), 1),
        "forget_ms_max": round(ordered[-1], 1),
        "db_mb": round(size / 1e6, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=positive, default=10_000)
    parser.add_argument("--other", type=int, default=0)
    parser.add_argument("--forgets", type=positive, default=20)
    parser.add_argument("--model-path", default="")
    print(json.dumps(asyncio.run(run(parser.parse_args()))))


if __name__ == "__main__":
    main()

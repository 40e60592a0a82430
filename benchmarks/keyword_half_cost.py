"""What issue 35's keyword-half changes cost per recall: the keyword search of one LoCoMo chat
(SQLite FTS5, the real `recall_index`) with and without the cross-language alternatives, for
the English questions and their Spanish translations.

    python benchmarks/keyword_half_cost.py ../shared/bench/locomo-dev.json [--sample 0]
        [--repeats 3]

Prints JSON: p50 / p95 milliseconds of `keyword_index.search` per question (the plan made
beforehand, so only the search is timed), of `Translator.alternatives`, and the word lists'
load time and the RSS they add, with the 1-minute load average. No embedding model is loaded.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import statistics
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.locomo_recall import (  # noqa: E402
    ES_QUESTIONS,
    load_es_questions,
    memory_text,
    questions_of,
    turns_of,
)
from rumi.config import MemorySettings, Settings, StoreSettings  # noqa: E402
from rumi.memory.factory import open_memory_store  # noqa: E402
from rumi.memory.recall.query import STOPWORDS, plan  # noqa: E402
from rumi.memory.recall.translate import Translator  # noqa: E402
from rumi.memory.store.models import MemoryType, NewMemory  # noqa: E402


def quantiles(values: list[float]) -> dict[str, float]:
    """Median and nearest-rank p95 (the value 95 % of the samples are at or below: with a
    few samples, the largest, never one below the median)."""
    ordered = sorted(values)
    return {"p50_ms": round(1000 * statistics.median(ordered), 3),
            "p95_ms": round(1000 * ordered[math.ceil(0.95 * len(ordered)) - 1], 3)}


async def conversation_store(directory: Path, turns: list[dict[str, Any]]) -> Any:
    """A keyword-only SQLite store in `directory` holding one LoCoMo conversation's turns
    in chat "chat" (no model: these benchmarks time the keyword half and what feeds it)."""
    settings = Settings(data_dir=directory, store=StoreSettings(backend="sqlite"),
                        memory=MemorySettings(embeddings_enabled=False))
    store = await open_memory_store(settings)
    try:
        await store.save_many("chat", [NewMemory(content=memory_text(t), type=MemoryType.EPISODIC,
                                                 created_at=t["when"]) for t in turns])
    except BaseException:
        await store.close()
        raise
    return store


async def run(args: argparse.Namespace) -> dict[str, Any]:
    data = json.loads(Path(args.data).read_text(encoding="utf-8"))
    sample = data[args.sample]
    sample_id = str(sample.get("sample_id"))
    turns = turns_of(sample["conversation"])
    translator = Translator(stop=STOPWORDS)
    rss = psutil.Process().memory_info().rss
    started = time.perf_counter()
    lists = await asyncio.to_thread(translator.load)
    load_seconds = time.perf_counter() - started
    rss = psutil.Process().memory_info().rss - rss
    es = load_es_questions(ES_QUESTIONS)
    valid = {t["id"] for t in turns}
    asked = {"en": [q for _, q, _, _ in questions_of(sample_id, sample, valid, None)],
             "es": [q for _, q, _, _ in questions_of(sample_id, sample, valid, es)]}
    out: dict[str, Any] = {"sample_id": sample_id, "memories": len(turns),
                           "word_lists": len(lists), "word_lists_load_s": round(load_seconds, 3),
                           "word_lists_rss_mib": round(rss / 2**20, 1)}
    with tempfile.TemporaryDirectory(prefix="rumi-kwcost-") as tmp:
        store = await conversation_store(Path(tmp), turns)
        try:
            index = store.keyword_index
            await index.search("chat", plan("warm up"), 50)
            for language, questions in asked.items():
                plans = [plan(q) for q in questions]
                lookups: list[float] = []
                with_alt = []
                for p in plans:
                    t0 = time.perf_counter()
                    found = translator.alternatives(p.terms)
                    lookups.append(time.perf_counter() - t0)
                    with_alt.append(replace(p, alternatives=found))
                times: dict[str, list[float]] = {"without": [], "with": []}
                for _ in range(args.repeats):
                    for name, batch in (("without", plans), ("with", with_alt)):
                        for p in batch:
                            t0 = time.perf_counter()
                            await index.search("chat", p, 50, rank_common_words=False)
                            times[name].append(time.perf_counter() - t0)
                out[language] = {"questions": len(plans),
                                 "alternatives_lookup": quantiles(lookups),
                                 "search_without_alternatives": quantiles(times["without"]),
                                 "search_with_alternatives": quantiles(times["with"]),
                                 "questions_with_alternatives": sum(bool(p.alternatives)
                                                                    for p in with_alt)}
        finally:
            await store.close()
    out["load_avg_1m"] = round(os.getloadavg()[0], 2)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("data")
    parser.add_argument("--sample", type=int, default=0)
    parser.add_argument("--repeats", type=int, default=3)
    result = asyncio.run(run(parser.parse_args()))
    json.dump(result, sys.stdout, indent=2)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

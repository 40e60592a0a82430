"""Latency of `MemoryRecall.recall()` with 1k, 10k and 100k memories in one chat.

    python benchmarks/recall_latency.py --model-path DIR [--sizes 1000,10000,100000]
        [--queries 200] [--warmup 5] [--k 6] [--embedding-threads N] [--query-model int8|full]
        [--stages] [--keyword-doc-budget N]

Measures the real pipeline the assistant runs per message: query embedding (real model), BM25
over the recall index, usearch top-N, stored-vector lookups, fusion, CTO scoring and the access
stats write. Prints wall-clock p50/p95/max per size, the process CPU time per recall (all
threads: SQLite, ONNX, usearch — separates the work from time spent descheduled on a loaded
machine), the 1-minute load average and the process RSS as JSON.

How the chat is filled, honestly: texts are synthetic sentences over a Zipf-distributed
pseudo-word vocabulary (so common words have long posting lists, like real text). Embedding
100k texts with the model would take about an hour on 2 cores, so only a pool of
`--pool` distinct texts is embedded for real; every memory gets its pool text plus unique
words, and a vector equal to its pool text's embedding plus small Gaussian noise
(re-normalised). Those vectors are written through the store's own index API (the same path
`reindex` uses), so search cost is real even though neighbours are not semantically exact.

Queries are embedded the way a bot set up by `rumi models download` embeds them: by the int8
twin of the model (made here in a temporary directory with the same code as `rumi models
quantize`), memories keeping full-precision vectors; `--query-model full` embeds queries with
the model itself.

`--stages` also reports each stage's wall time per query (p50 / p95 over the measured queries,
0 for a query that skipped it) by wrapping the store's and keyword index's methods in this
process: where the time goes, by command. The two halves run at once, so their stages overlap
and do not add up to the total; the wrappers cost a few microseconds each, so take headline
numbers from runs without it. `keyword_window` is the share of queries whose rarest word
matched more than the budget, and `keyword_skipped` the share among all queries whose keyword
half then ranked nothing (the word was in at least half of the window).

`main_cpu_p50_ms` / `main_cpu_p95_ms` are the CPU time of the event loop's thread alone
(`time.thread_time`): the part of `cpu_*` that SQLite's thread, usearch's worker and the
embedding do not take, and that no other thread can overlap.

`first_recall_ms` is the first warm-up query alone: a freshly opened store loads the chat's
vector index from disk and checks it against SQLite (what the first message after a restart
pays).

The cross-language word lists (`memory.recall_translate`) are loaded before the first query,
as in a bot that has answered once: their load (~0.8 s of CPU in a worker thread) must not
fall inside measured recalls. Warm-up (loading the model, building the chat's keyword table,
first index load) uses its own
`--warmup` queries, never measured ones: `MemoryStore.embed_query` caches recent query vectors,
and a measured query seen in the warm-up would skip the embedding it claims to include. Each
result reports `embed_cache_hits` among the measured queries (0 unless the generator repeated
a query).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import resource
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
from _cli import positive
from _store import bot_index

from rumi.config import MemorySettings
from rumi.memory.recall.retrieval import MemoryRecall
from rumi.memory.store import recall_index
from rumi.memory.store.memories import MemoryStore
from rumi.memory.store.models import MemoryType, NewMemory
from rumi.memory.vectors.embeddings import Embedder, vector_model_name
from rumi.memory.vectors.query_twin import quantize_model

CHAT = "424242"
_SYLLABLES = ("ka", "lo", "mi", "ra", "te", "su", "no", "pa", "ve", "di", "ro", "sa", "ne",
              "mu", "la", "to", "ri", "fe", "go", "ba", "ke", "li", "mo", "ru", "sen", "tar",
              "vin", "dor", "pel", "mak")


def vocabulary(size: int, rng: np.random.Generator) -> list[str]:
    words: set[str] = set()
    while len(words) < size:
        n = int(rng.integers(2, 4))
        words.add("".join(rng.choice(_SYLLABLES, n)))
    return sorted(words)


class TextMaker:
    def __init__(self, seed: int = 7, vocab: int = 20_000) -> None:
        self.rng = np.random.default_rng(seed)
        self.words = vocabulary(vocab, self.rng)
        ranks = np.arange(1, vocab + 1)
        p = 1.0 / ranks**1.07
        self.p = p / p.sum()

    def sentence(self, n_words: int) -> str:
        picks = self.rng.choice(len(self.words), size=n_words, p=self.p)
        return " ".join(self.words[i] for i in picks)


def rss_mb() -> float:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        pass
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


async def stored(data: Path, settings: MemorySettings) -> int:
    """Memories already in the chat of a kept database (`--data`); 0 for a new one."""
    if not (data / "rumi.db").exists():
        return 0
    store = await MemoryStore.open(data / "rumi.db", settings)
    try:
        return int((await store.stats(CHAT))["total"])
    finally:
        await store.close()


async def fill(store: MemoryStore, maker: TextMaker, pool_texts: list[str],
               pool_vectors: np.ndarray, start: int, stop: int, rng: np.random.Generator) -> None:
    """Add memories start..stop-1 (keyword index via save_many, vectors via the index API)."""
    batch = 2_000
    for lo in range(start, stop, batch):
        hi = min(stop, lo + batch)
        pool_ix = [n % len(pool_texts) for n in range(lo, hi)]
        items = [NewMemory(content=f"{pool_texts[p]} {maker.sentence(6)} n{n}",
                           type=MemoryType.EPISODIC if n % 3 else MemoryType.FACT)
                 for n, p in zip(range(lo, hi), pool_ix, strict=True)]
        saved = await store.save_many(CHAT, items)
        ids = [r.memory.id for r in saved]
        noise = rng.normal(0, 0.02, size=(len(ids), pool_vectors.shape[1])).astype(np.float32)
        matrix = pool_vectors[pool_ix] + noise
        matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
        async with store.transaction():
            await store.index.write_vectors(ids, matrix)


class StageClock:
    """Wall time of each recall stage in the current query (`--stages`)."""

    STORE_STAGES = ("embed_query", "prepare_vectors", "nearest", "recall_rows",
                    "recall_rows_with_vectors", "mark_accessed")
    KEYWORD_STAGES = {"_doc_counts": "keyword_term_counts",
                      "_newest_window": "keyword_window_lookup", "_ranked": "keyword_bm25"}

    def __init__(self) -> None:
        self.current: dict[str, float] = {}
        self.calls: dict[str, int] = {}
        self.samples: list[dict[str, float]] = []
        self._undo: list[tuple[Any, str, Any]] = []

    def _wrap(self, owner: Any, name: str, label: str) -> None:
        original = getattr(owner, name)

        async def timed(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            self.calls[label] = self.calls.get(label, 0) + 1
            try:
                return await original(*args, **kwargs)
            finally:
                elapsed = (time.perf_counter() - started) * 1000
                self.current[label] = self.current.get(label, 0.0) + elapsed

        setattr(owner, name, timed)
        self._undo.append((owner, name, original))

    def attach(self, store: MemoryStore) -> None:
        for name in self.STORE_STAGES:
            self._wrap(store, name, name)
        self._wrap(store.keyword_index, "search", "keyword_search")
        for name, label in self.KEYWORD_STAGES.items():
            self._wrap(recall_index, name, label)

    def detach(self) -> None:
        while self._undo:
            owner, name, original = self._undo.pop()
            setattr(owner, name, original)
        self.current, self.calls, self.samples = {}, {}, []

    def start(self) -> None:
        self.current, self.calls = {}, {}

    def stop(self) -> None:
        sample = dict(self.current)
        windowed = "keyword_window_lookup" in self.calls
        sample["keyword_window"] = float(windowed)
        sample["keyword_skipped"] = float(windowed and "keyword_bm25" not in self.calls)
        self.samples.append(sample)

    def summary(self) -> dict[str, Any]:
        shares = ("keyword_window", "keyword_skipped")
        names = sorted({k for s in self.samples for k in s} - set(shares))
        out: dict[str, Any] = {}
        for name in names:
            values = np.array([s.get(name, 0.0) for s in self.samples])
            out[name] = [round(float(np.percentile(values, 50)), 1),
                         round(float(np.percentile(values, 95)), 1)]
        for name in shares:
            out[name] = round(float(np.mean([s[name] for s in self.samples])), 3)
        return out


async def measure(args: argparse.Namespace) -> dict[str, Any]:
    """One temporary directory holds the twin and the database, and goes away on any exit
    (`--data DIR` keeps the database in DIR instead, for the next run to reuse)."""
    with tempfile.TemporaryDirectory(prefix="rumi-latency-") as tmp:
        return await _measure(args, Path(tmp))


async def _measure(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    sizes = sorted(int(s) for s in args.sizes.split(","))
    settings = MemorySettings(embedding_model_path=args.model_path,
                              embedding_model=args.model_name or (
                                  Path(args.model_path).name if args.model_path
                                  else MemorySettings().embedding_model),
                              embedding_threads=getattr(args, "embedding_threads", None),
                              **({"recall_keyword_doc_budget": args.keyword_doc_budget}
                                 if getattr(args, "keyword_doc_budget", None) else {}),
                              **({"recall_keyword_engine": args.keyword_engine}
                                 if getattr(args, "keyword_engine", None) else {}))
    twin = None
    if args.query_model == "int8" and args.model_path is not None:
        twin = work / "twin"
        # in a child process, so quantization's peak memory stays out of the reported RSS
        with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as child:
            await asyncio.get_running_loop().run_in_executor(
                child, quantize_model, args.model_path, "model.onnx", twin,
                vector_model_name(settings))
    embedder = Embedder(settings, query_model_path=twin)
    if not await embedder.warm_up():
        raise SystemExit(f"embedding model unavailable: {embedder.reason}")
    if twin is not None and embedder.query_twin.model is None:
        raise SystemExit(f"query twin unusable: {embedder.query_twin.reason}")
    maker = TextMaker()
    rng = np.random.default_rng(11)
    pool_texts = [maker.sentence(12) for _ in range(args.pool)]
    warmup, queries = make_queries(maker, rng, args.warmup, args.queries)
    results: list[dict[str, Any]] = []
    data = getattr(args, "data", None) or work / "data"
    data.mkdir(parents=True, exist_ok=True)
    have = await stored(data, settings)
    if have > sizes[0]:
        raise SystemExit(f"{data} holds {have} memories, more than the smallest size")
    # embedded only when memories are to be added (a kept database has its vectors)
    pool_vectors = await embedder.embed(pool_texts) if have < sizes[-1] else None
    for size in sizes:
        started = time.perf_counter()
        bulk = await MemoryStore.open(data / "rumi.db", settings, None,
                                      bot_index(data, embedder, settings))
        try:
            if size > have:   # a kept database's index was saved by its last rebuild
                assert pool_vectors is not None
                await fill(bulk, maker, pool_texts, pool_vectors, have, size, rng)
                await bulk.index.rebuild(CHAT)
        finally:
            await bulk.close()
        fill_seconds = time.perf_counter() - started
        have = size
        store = await MemoryStore.open(data / "rumi.db", settings, embedder,
                                       bot_index(data, embedder, settings))
        try:
            recall = MemoryRecall(store, settings)
            await recall.load_word_lists()   # as a bot that has answered once has them
            clock = StageClock() if getattr(args, "stages", False) else None
            cold = time.perf_counter()
            await recall.recall(CHAT, warmup[0], k=args.k)
            first_recall_ms = (time.perf_counter() - cold) * 1000
            for q in warmup[1:]:
                await recall.recall(CHAT, q, k=args.k)
            arrays = time.perf_counter()   # the memory engine's arrays, read once per chat
            arrays_ready = await store.keyword_index.prepare(CHAT)
            arrays_ms = (time.perf_counter() - arrays) * 1000
            times: list[float] = []
            cpu: list[float] = []
            main_cpu: list[float] = []   # the event loop's thread alone (time.thread_time)
            hits = cache_hits = 0
            if clock is not None:
                clock.attach(store)
            try:
                for q in queries:
                    cache_hits += q in store._query_cache  # noqa: SLF001 - what we must avoid
                    if getattr(args, "query_vector", "embedded") == "prefetched":
                        prefetch = recall.prefetch(CHAT, q)
                        if prefetch is not None:
                            await prefetch   # the message arrived earlier: not timed
                    if clock is not None:
                        clock.start()
                    t0, c0 = time.perf_counter(), time.process_time()
                    m0 = time.thread_time()
                    found = await recall.recall(CHAT, q, k=args.k)
                    times.append((time.perf_counter() - t0) * 1000)
                    cpu.append((time.process_time() - c0) * 1000)
                    main_cpu.append((time.thread_time() - m0) * 1000)
                    if clock is not None:
                        clock.stop()
                    hits += bool(found)
                stages = clock.summary() if clock is not None else None
            finally:
                if clock is not None:
                    clock.detach()  # the keyword index's module functions are restored
            ms = np.array(times)
            results.append({
                "memories": size, "queries": len(queries), "k": args.k,
                "p50_ms": round(float(np.percentile(ms, 50)), 1),
                "p95_ms": round(float(np.percentile(ms, 95)), 1),
                "max_ms": round(float(ms.max()), 1),
                "cpu_p50_ms": round(float(np.percentile(cpu, 50)), 1),
                "cpu_p95_ms": round(float(np.percentile(cpu, 95)), 1),
                "main_cpu_p50_ms": round(float(np.percentile(main_cpu, 50)), 1),
                "main_cpu_p95_ms": round(float(np.percentile(main_cpu, 95)), 1),
                "load_avg_1m": round(os.getloadavg()[0], 1),
                "queries_with_results": hits, "embed_cache_hits": cache_hits,
                "keyword_engine": settings.recall_keyword_engine,
                "keyword_arrays_ready": arrays_ready,
                "keyword_arrays_wait_ms": round(arrays_ms, 1),
                "rss_mb": rss_mb(),
                "fill_seconds": round(fill_seconds, 1),
                "first_recall_ms": round(first_recall_ms, 1),
                **({"stages_ms": stages} if stages is not None else {}),
            })
            print(json.dumps(results[-1]), file=sys.stderr, flush=True)
        finally:
            await store.close()
    threads = embedder._threads  # noqa: SLF001 - report what really ran
    return {"chat": CHAT, "model": embedder.model_name, "embedding_threads": threads,
            "query_model": "int8 twin" if embedder.query_twin.model is not None else "full",
            "query_vector": getattr(args, "query_vector", "embedded"),
            "keyword_doc_budget": settings.recall_keyword_doc_budget,
            "pool_embedded_texts": args.pool, "results": results}


def make_queries(maker: TextMaker, rng: np.random.Generator, warmup: int,
                 measured: int) -> tuple[list[str], list[str]]:
    """Distinct warm-up and measured queries: no measured query is ever embedded beforehand."""
    seen: set[str] = set()
    out: list[str] = []
    while len(out) < warmup + measured:
        text = maker.sentence(int(rng.integers(4, 10)))
        if text not in seen:
            seen.add(text)
            out.append(text)
    return out[:warmup], out[warmup:]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model-path", type=Path, default=None)
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--queries", type=positive, default=200,
                        help="measured queries per size (p95 of 50 would be its 3rd-worst value)")
    parser.add_argument("--warmup", type=positive, default=5,
                        help="unmeasured queries run first (model load, index load)")
    parser.add_argument("--model-name", default=None,
                        help="label of the --model-path vectors (default: the directory name)")
    parser.add_argument("--k", type=int, default=6)
    parser.add_argument("--embedding-threads", type=int, default=None,
                        help="ONNX threads (memory.embedding_threads; default cores - 1, 1 to 4)")
    parser.add_argument("--pool", type=int, default=512)
    parser.add_argument("--query-model", choices=("int8", "full"), default="int8",
                        help="embed queries with an int8 twin of --model-path made for this "
                             "run (what `rumi models quantize` sets up), or the model itself")
    parser.add_argument("--query-vector", choices=("embedded", "prefetched"),
                        default="embedded",
                        help="embedded: each timed recall embeds its query; prefetched: the "
                             "query was embedded before (MemoryRecall.prefetch, as the bot "
                             "does when the message arrives), so the time is the rest")
    parser.add_argument("--data", type=Path, default=None,
                        help="keep the filled database in this directory and reuse what it "
                             "holds next time (the memories are the same: seeded generator)")
    parser.add_argument("--keyword-doc-budget", type=positive, default=None,
                        help="memory.recall_keyword_doc_budget for this run (default: the "
                             "setting's default)")
    parser.add_argument("--keyword-engine", choices=("fts5", "memory"), default=None,
                        help="memory.recall_keyword_engine for this run (default: the "
                             "setting's default); with memory the chat's arrays are read "
                             "after the warm-up, before the measured queries")
    parser.add_argument("--stages", action="store_true",
                        help="also report each stage's wall time per query (see the docstring)")
    args = parser.parse_args(argv)
    result = asyncio.run(measure(args))
    json.dump(result, sys.stdout, indent=2)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

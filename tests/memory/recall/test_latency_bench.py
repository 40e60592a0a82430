"""benchmarks/recall_latency.py on a tiny chat: measured queries really embed (no cache hits)."""

from __future__ import annotations

import argparse
import sys

from tests.conftest import MODEL_DIR, REPO, require

sys.path.insert(0, str(REPO / "benchmarks"))
import recall_latency as bench  # noqa: E402


async def test_measured_queries_never_hit_the_query_embedding_cache() -> None:
    """The warm-up used to replay the first measured queries, so 10% of the "query embedding
    included" samples skipped the embedding (LRU cache in MemoryStore.embed_query)."""
    require((MODEL_DIR / "model.onnx").exists(), "shared embedding model missing")
    args = argparse.Namespace(model_path=MODEL_DIR, model_name=None, sizes="40", queries=6,
                              warmup=3, k=3, pool=8, query_model="int8")
    result = await bench.measure(args)
    [row] = result["results"]
    assert row["memories"] == 40 and row["queries"] == 6
    assert row["embed_cache_hits"] == 0
    # the event loop's own CPU is part of the process's (the embedding ran in ONNX's threads)
    assert 0 < row["main_cpu_p50_ms"] <= row["main_cpu_p95_ms"]
    assert row["main_cpu_p50_ms"] < row["cpu_p50_ms"]
    assert result["model"] == f"local/{MODEL_DIR.name}"  # labelled as what was loaded
    assert result["query_model"] == "int8 twin"  # made for the run, and really loaded
    warm, measured = bench.make_queries(bench.TextMaker(), bench.np.random.default_rng(1), 5, 50)
    assert len(set(measured)) == 50 and not set(warm) & set(measured)


async def test_stages_are_reported_and_the_wrappers_removed() -> None:
    """`--stages` times each stage by wrapping the store's and the keyword index's functions;
    the module functions must be the real ones again afterwards (this test process goes on)."""
    require((MODEL_DIR / "model.onnx").exists(), "shared embedding model missing")
    originals = {name: getattr(bench.recall_index, name)
                 for name in bench.StageClock.KEYWORD_STAGES}
    args = argparse.Namespace(model_path=MODEL_DIR, model_name=None, sizes="40", queries=6,
                              warmup=2, k=3, pool=8, query_model="int8", stages=True)
    result = await bench.measure(args)
    [row] = result["results"]
    stages = row["stages_ms"]
    for name in ("embed_query", "keyword_search", "keyword_term_counts",
                 "recall_rows_with_vectors"):
        assert stages[name][0] > 0 and stages[name][1] >= stages[name][0], name
    assert 0 <= stages["keyword_skipped"] <= stages["keyword_window"] <= 1
    for name, function in originals.items():
        assert getattr(bench.recall_index, name) is function


async def test_the_keyword_budget_of_the_run_is_the_one_used_and_reported() -> None:
    """`--keyword-doc-budget` sets memory.recall_keyword_doc_budget for the run (a ranking
    setting measured for its cost before it is changed), and the JSON says which ran."""
    require((MODEL_DIR / "model.onnx").exists(), "shared embedding model missing")
    budgets: list[int] = []
    search = bench.recall_index.RecallIndex.search

    async def spy(self, chat, query, limit, doc_budget=2_000, **kwargs):  # noqa: ANN001, ANN202
        budgets.append(doc_budget)
        return await search(self, chat, query, limit, doc_budget, **kwargs)

    bench.recall_index.RecallIndex.search = spy  # type: ignore[method-assign]
    try:
        args = argparse.Namespace(model_path=MODEL_DIR, model_name=None, sizes="40", queries=3,
                                  warmup=1, k=3, pool=8, query_model="int8",
                                  keyword_doc_budget=7)
        result = await bench.measure(args)
    finally:
        bench.recall_index.RecallIndex.search = search  # type: ignore[method-assign]
    assert result["keyword_doc_budget"] == 7
    assert budgets and set(budgets) == {7}

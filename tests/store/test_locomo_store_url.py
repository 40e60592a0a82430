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

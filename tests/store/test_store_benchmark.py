"""benchmarks/store_backends.py end to end on a small chat: both stores in one run, and the
PostgreSQL bulk fill goes through the store's own triggers (word statistics, context)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import psycopg

from tests.conftest import MODEL_DIR, REPO, require


def test_both_stores_in_one_run_and_the_bulk_fill_keeps_word_statistics(
        tmp_path: Path, pg_url: str) -> None:
    require((MODEL_DIR / "model.onnx").exists(), "shared embedding model missing")
    proc = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "store_backends.py"), "--model-path",
         str(MODEL_DIR), "--memories", "300", "--queries", "3", "--warmup", "1", "--ops", "1",
         "--pool", "8", "--store-url", pg_url],
        capture_output=True, text=True, timeout=900, check=False, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["rumi"] == str(REPO / "rumi")
    assert set(out["stores"]) == {"sqlite", "postgres"}
    for store in out["stores"].values():
        assert store["recall"]["queries_with_results"] == 3
        assert store["remember"]["ops"] == store["forget"]["ops"] == 1
    with psycopg.connect(pg_url) as conn:
        docs = conn.execute("SELECT docs FROM rumi.word_totals").fetchall()
        with_context = conn.execute(
            "SELECT count(*) FROM cto.memory WHERE ctx1 IS NOT NULL").fetchone()[0]
        recounted = conn.execute(
            "SELECT count(*) FROM (SELECT u.lexeme FROM cto.memory m, unnest(m.tsv_en) u "
            "WHERE m.status = 'active' AND u.weights && '{A,B,C}' GROUP BY u.lexeme "
            "EXCEPT SELECT lexeme FROM rumi.word_stats WHERE config = 'en' AND df > 0) x"
        ).fetchone()[0]
    assert docs == [(300,)]          # the 300 filled; the /remember was forgotten again
    assert with_context >= 290       # the context trigger ran on the bulk rows
    assert recounted == 0            # every English recall stem of the rows is counted


def test_the_benchmark_measures_the_rumi_beside_it_not_another_on_the_path(
        tmp_path: Path) -> None:
    """The 100k run of both stores failed with `relation "rumi.word_stats" does not exist`: the
    script was new, the `rumi` it imported (the venv's editable install of another checkout)
    was older and had migrated a schema without word statistics."""
    older = tmp_path / "older" / "rumi"
    older.mkdir(parents=True)
    (older / "__init__.py").write_text(
        'raise ImportError("another checkout\'s rumi was imported")\n', encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(older.parent)}
    proc = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "store_backends.py"), "--help"],
        capture_output=True, text=True, timeout=300, check=False, cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr
    assert "--stores" in proc.stdout

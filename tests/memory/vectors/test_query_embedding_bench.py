"""benchmarks/query_embedding.py on a handful of questions: both paths run and are compared."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.conftest import MODEL_DIR, REPO, require

TINY = REPO / "tests" / "data" / "locomo-tiny.json"


def test_times_the_model_and_its_twin_on_the_same_questions() -> None:
    require((MODEL_DIR / "model.onnx").exists(), "shared embedding model missing")
    proc = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "query_embedding.py"), "--model-path",
         str(MODEL_DIR), "--questions", str(TINY), "--rounds", "2"],
        capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["queries"] == 7 and result["rounds"] == 2
    assert result["full"]["p50_ms"] > 0 and result["twin"]["p50_ms"] > 0
    assert 0.9 <= result["cosine_twin_vs_full"]["min"] < 1.0  # the twin's own vectors
    assert result["twin_mb"] < result["model_mb"] / 3

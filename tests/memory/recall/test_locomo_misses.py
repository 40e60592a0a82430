"""benchmarks/locomo_misses.py: which questions a results file missed, and why, on a tiny file."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO

sys.path.insert(0, str(REPO / "benchmarks"))
import locomo_misses as misses_cli  # noqa: E402

TINY = REPO / "tests" / "data" / "locomo-tiny.json"
RESULTS = [
    # D1:2 first: a hit at every k
    {"sample_id": "tiny-1", "question_index": 0, "category": 4, "ranked": ["D1:2", "D1:1"]},
    # evidence D1:3 first, D1:4 sixth: a miss at 5, a hit at 10
    {"sample_id": "tiny-1", "question_index": 1, "category": 1,
     "ranked": ["D1:3", "D1:1", "D1:2", "D2:1", "D2:2", "D1:4"]},
    # evidence D2:1 never ranked
    {"sample_id": "tiny-1", "question_index": 2, "category": 2, "ranked": ["D1:1"]},
    {"sample_id": "tiny-2", "question_index": 1, "category": 5, "ranked": ["D1:2", "D1:3"]},
    # another question set of the same run: never mixed with the English one
    {"sample_id": "tiny-1", "question_index": 0, "category": 4, "ranked": ["D1:1"],
     "memories": "en", "questions": "es"},
]


def test_misses_name_the_evidence_its_rank_and_what_ranked_above() -> None:
    data = json.loads(TINY.read_text())
    found = misses_cli.misses(data, RESULTS, k=5)
    assert [(m.sample_id, m.question_index) for m in found] == [("tiny-1", 1), ("tiny-1", 2)]
    multi = found[0]
    assert multi.question == "Which instrument is Ana learning?" and multi.answer == "cello"
    assert [(e["id"], e["rank"]) for e in multi.evidence] == [("D1:3", 1), ("D1:4", 6)]
    assert multi.evidence[1]["text"] == ("Bruno: Nice, which teacher? [comparte una foto: "
                                         "a photo of a cello leaning on a chair]")
    assert [t["id"] for t in multi.top] == ["D1:3", "D1:1", "D1:2", "D2:1", "D2:2"]
    assert [(e["id"], e["rank"]) for e in found[1].evidence] == [("D2:1", None)]
    # at 10 the multi-hop question is a hit; only the never-ranked evidence is left
    assert [m.question_index for m in misses_cli.misses(data, RESULTS, k=10)] == [2]
    assert [m.question_index for m in misses_cli.misses(data, RESULTS, k=5, category=2)] == [2]


def test_the_spanish_set_reads_only_its_own_lines() -> None:
    data = json.loads(TINY.read_text())
    es = {("tiny-1", 0): {"question": "¿Cómo se llama el gatito de Bruno?"}}
    found = misses_cli.misses(data, RESULTS, k=5, which=("en", "es"), es_questions=es)
    assert [(m.sample_id, m.question_index, m.question) for m in found] == [
        ("tiny-1", 0, "¿Cómo se llama el gatito de Bruno?")]


def test_command_prints_one_json_line_per_miss(tmp_path: Path) -> None:
    results = tmp_path / "ranked.jsonl"
    results.write_text("\n".join(json.dumps(r) for r in RESULTS) + "\n")
    proc = subprocess.run([sys.executable, str(REPO / "benchmarks" / "locomo_misses.py"),
                           str(TINY), str(results), "--k", "5", "--limit", "1"],
                          capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    [line] = proc.stdout.splitlines()
    assert json.loads(line)["question_index"] == 1
    bad = subprocess.run([sys.executable, str(REPO / "benchmarks" / "locomo_misses.py"),
                          str(TINY), str(results), "--k", "0"],
                         capture_output=True, text=True, timeout=60, check=False)
    assert bad.returncode == 2 and "--k must be at least 1" in bad.stderr

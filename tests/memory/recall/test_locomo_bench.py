"""benchmarks/locomo_recall.py end to end on a tiny LoCoMo-format file, plus its scoring."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.conftest import MODEL_DIR, REPO, SHARED, require

sys.path.insert(0, str(REPO / "benchmarks"))
import locomo_recall as bench  # noqa: E402

TINY = REPO / "tests" / "data" / "locomo-tiny.json"


def run_bench(tmp_path: Path, *extra: str) -> tuple[dict, list[dict]]:
    out = tmp_path / "ranked.jsonl"
    proc = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "locomo_recall.py"), str(TINY),
         "--out", str(out), *extra],
        capture_output=True, text=True, timeout=600, check=False, cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout), [json.loads(line) for line in out.read_text().splitlines()]


def check_consistent(summary: dict, lines: list[dict]) -> None:
    """The printed recall@k must be what the written rankings and cleaned evidence give."""
    data = json.loads(TINY.read_text())
    evidence = {}
    for sample in data:
        valid = {t["id"] for t in bench.turns_of(sample["conversation"])}
        for n, qa in enumerate(sample["qa"]):
            evidence[(sample["sample_id"], n)] = bench.clean_evidence(qa["evidence"], valid)
    for k in bench.KS:
        values = [bench.recall_at(line["ranked"], evidence[(line["sample_id"],
                                                            line["question_index"])], k)
                  for line in lines]
        assert summary[f"recall@{k}"] == round(100 * sum(values) / len(values), 1)


def test_keyword_mode_end_to_end(tmp_path: Path) -> None:
    summary, lines = run_bench(tmp_path, "--mode", "bm25")
    assert [(x["sample_id"], x["question_index"]) for x in lines] == [
        ("tiny-1", 0), ("tiny-1", 1), ("tiny-1", 2), ("tiny-2", 0), ("tiny-2", 1)]
    assert summary["questions"] == 5 and summary["turns"] == 10
    assert [x["category"] for x in lines] == [4, 1, 2, 4, 5]
    ranked = {(x["sample_id"], x["question_index"]): x["ranked"] for x in lines}
    assert ranked[("tiny-1", 0)][0] == "D1:2"
    assert ranked[("tiny-1", 2)][0] == "D2:1"
    assert ranked[("tiny-2", 0)][0] == "D1:1"
    assert {"D1:3", "D1:4"} <= set(ranked[("tiny-1", 1)][:5])  # D1:4 only via its context
    assert all(len(x["ranked"]) == len(set(x["ranked"])) <= 50 for x in lines)
    assert summary["recall@5"] == 100.0
    assert set(summary["per_category"]) == {"1 multi-hop", "2 temporal", "4 single-hop",
                                            "5 adversarial"}
    assert summary["per_category"]["4 single-hop"]["questions"] == 2
    assert summary["queries_per_second"] > 0
    check_consistent(summary, lines)


def test_hybrid_mode_end_to_end(tmp_path: Path) -> None:
    require((MODEL_DIR / "model.onnx").exists(), "shared embedding model missing")
    summary, lines = run_bench(tmp_path, "--model-path", str(MODEL_DIR))
    assert summary["mode"] == "hybrid" and summary["questions"] == 5
    assert summary["model"] == f"local/{MODEL_DIR.name}"  # not the configured default's name
    assert summary["query_model"] == "int8 twin"  # made where the bot looks, and loaded
    assert lines[0]["ranked"][0] == "D1:2"
    check_consistent(summary, lines)
    full, full_lines = run_bench(tmp_path, "--model-path", str(MODEL_DIR), "--query-model",
                                 "full")
    assert full["query_model"].startswith("full") and full_lines[0]["ranked"][0] == "D1:2"


def test_evidence_cleaning() -> None:
    valid = {"D1:3", "D8:6", "D9:17", "D11:26"}
    assert bench.clean_evidence(["D8:6; D9:17"], valid) == ["D8:6", "D9:17"]
    assert bench.clean_evidence(["D:11:26", "D", "D10:19", "D1:3", "D1:3"], valid) == [
        "D11:26", "D1:3"]
    assert bench.clean_evidence("D1:3", valid) == ["D1:3"]
    assert bench.clean_evidence([], valid) == []


def test_recall_at_and_summary() -> None:
    ranked = ["D1:1", "D1:2", "D1:3", "D1:4", "D1:5", "D1:6", "D1:7"]
    assert bench.recall_at(ranked, ["D1:2", "D1:7"], 5) == 0.5
    assert bench.recall_at(ranked, ["D1:2", "D1:7"], 10) == 1.0
    assert bench.recall_at(ranked, ["D9:9"], 25) == 0.0
    scores = {"all@5": [0.5, 1.0], "all@10": [1.0, 1.0], "all@25": [1.0, 1.0],
              "2@5": [0.5], "2@10": [1.0], "2@25": [1.0],
              "4@5": [1.0], "4@10": [1.0], "4@25": [1.0]}
    args = argparse.Namespace(data="x.json", mode="bm25", now="wall")
    summary = bench.summarise(scores, args, 2, 7, 7, 1.0, 0.5)
    assert summary["recall@5"] == 75.0 and summary["recall@10"] == 100.0
    assert summary["per_category"]["2 temporal"]["recall@5"] == 50.0
    assert summary["queries_per_second"] == 4.0


def test_session_dates_and_turn_text() -> None:
    when = bench.parse_session_date("1:56 pm on 8 May, 2023")
    assert when is not None and (when.year, when.month, when.day, when.hour) == (2023, 5, 8, 13)
    assert bench.parse_session_date("not a date") is None
    turn = {"speaker": "Ana", "text": "Look!", "caption": "a photo of a cat"}
    assert bench.memory_text(turn) == "Ana: Look! [comparte una foto: a photo of a cat]"
    assert bench.chat_id_for("conv-26", 0) == "conv_26_0"


def test_set_overrides_memory_settings(tmp_path: Path) -> None:
    """Every ablation row in docs/benchmarks-history.md is `--set key=value` on one pipeline."""
    assert bench.parse_override("recall_date_boost=0") == ("recall_date_boost", 0)
    assert bench.parse_override("recall_gate_by_relevance=false") == (
        "recall_gate_by_relevance", False)
    assert bench.parse_override("embedding_model=a/b") == ("embedding_model", "a/b")
    args = argparse.Namespace(mode="hybrid", model_path=None, model_name=None,
                              overrides=[("recall_date_boost", 0),
                                         ("recall_gate_by_relevance", False)])
    settings = bench.memory_settings(args)
    assert settings.recall_date_boost == 0 and settings.recall_gate_by_relevance is False
    summary, _ = run_bench(tmp_path, "--mode", "bm25", "--set", "recall_date_boost=0")
    assert summary["settings"] == {"recall_date_boost": 0} and summary["model"] is None
    # and whether the question's translation ran, as for the model (Apertium where installed)
    assert (summary["machine_translation"] == "apertium"
            or summary["machine_translation"].startswith("unavailable: "))
    for bad in ("nonsense=1", "recall_k=-3"):
        proc = subprocess.run(
            [sys.executable, str(REPO / "benchmarks" / "locomo_recall.py"), str(TINY),
             "--out", str(tmp_path / "x.jsonl"), "--mode", "bm25", "--set", bad],
            capture_output=True, text=True, timeout=120, check=False)
        assert proc.returncode != 0 and "Traceback" not in proc.stderr, proc.stderr


def test_touch_marks_what_a_chat_message_would(tmp_path: Path) -> None:
    """Default: each question marks only the top recall_k (6) as accessed, like a message's
    prompt block; `--touch all` marks all ranked memories (50 here: the tiny chats have 5)."""
    prompt, _ = run_bench(tmp_path, "--mode", "bm25", "--set", "recall_k=2")
    every, _ = run_bench(tmp_path, "--mode", "bm25", "--touch", "all")
    none, _ = run_bench(tmp_path, "--mode", "bm25", "--touch", "none")
    assert prompt["touch"] == "prompt" and 0 < prompt["accesses_recorded"] <= 2 * 5
    assert every["accesses_recorded"] > prompt["accesses_recorded"]
    assert none["accesses_recorded"] == 0


def test_question_days_spread_a_chat_s_questions_in_order_over_days(tmp_path: Path) -> None:
    """`--question-days N`: a chat's questions in order over N days (day ⌊n·N/total⌋), so a
    memory every question uses counts one day of use per day, not one in all."""
    start = datetime(2026, 3, 2, 9, tzinfo=UTC)
    assert [(bench.asked_at(start, n, 10, 7) - start).days for n in range(10)] == [
        0, 0, 1, 2, 2, 3, 4, 4, 5, 6]
    assert {bench.asked_at(start, n, 3, 1) for n in range(3)} == {start}
    one, _ = run_bench(tmp_path, "--mode", "bm25")
    three, _ = run_bench(tmp_path, "--mode", "bm25", "--question-days", "3")
    assert (one["question_days"], three["question_days"]) == (1, 3)
    # one moment: a touched memory is one day at most (10 memories in the two tiny chats)
    assert 0 < one["access_days_recorded"] <= 10 < one["accesses_recorded"]
    assert one["access_days_recorded"] < three["access_days_recorded"] \
        <= three["accesses_recorded"]
    proc = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "locomo_recall.py"), str(TINY),
         "--out", str(tmp_path / "x.jsonl"), "--mode", "bm25", "--question-days", "0"],
        capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode != 0 and "--question-days" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_ablations_switch_one_design_choice_off(tmp_path: Path) -> None:
    """Each row of the ablation table is a command: `--ablate context` indexes turns alone, so
    the answer found only through the turn before it drops out."""
    summary, lines = run_bench(tmp_path, "--mode", "bm25", "--ablate", "context")
    assert summary["ablated"] == ["context"]
    ranked = {(x["sample_id"], x["question_index"]): x["ranked"] for x in lines}
    assert "D1:4" not in ranked[("tiny-1", 1)][:5]
    kept, kept_lines = run_bench(tmp_path, "--mode", "bm25", "--ablate", "stopwords")
    assert kept["ablated"] == ["stopwords"]
    assert kept_lines[0]["ranked"][0] != "D1:2"  # "what"/"is" now count as evidence words
    with pytest.raises(SystemExit, match="unknown 'nonsense'"):
        bench.ablate("nonsense")


def test_rrf_fuses_by_rank_not_by_score() -> None:
    keyword = [(1, 9.0), (2, 1.0)]
    cosines = {1: 0.30, 2: 0.90, 3: 0.80, 4: 0.10}
    fused = bench.rrf_fuse(keyword, cosines, vector_weight=1.0, min_similarity=0.25)
    assert [f.memory_id for f in fused] == [2, 1, 3]  # 4 is below min_similarity
    # 2: keyword rank 2 + cosine rank 1 beats 1: keyword rank 1 (9× the score) + cosine rank 3
    assert fused[0].relevance == 1.0
    assert fused[1].relevance == pytest.approx((1 / 61 + 1 / 63) / (1 / 62 + 1 / 61))
    boosted = bench.rrf_fuse(keyword, cosines, vector_weight=1.0, min_similarity=0.25,
                             date_boost=1.2, in_date_range=frozenset({3}))
    assert boosted[0].memory_id == 3  # 2 · 0.496 + 1.2 > 2: the boost on fuse's 0..1+w scale
    weak = bench.rrf_fuse(keyword, cosines, vector_weight=1.0, min_similarity=0.25,
                          date_boost=0.6, in_date_range=frozenset({3}))
    assert weak[0].memory_id == 2
    assert bench.rrf_fuse([], {5: 0.1}, vector_weight=0.7, min_similarity=0.25) == []


def test_a_model_that_cannot_load_is_reported_as_keyword_only(tmp_path: Path) -> None:
    """The JSON names what was measured: a configured model that fails to load is never
    reported by its name; the run says keyword-only and why."""
    empty = tmp_path / "no-model"
    empty.mkdir()
    summary, lines = run_bench(tmp_path, "--model-path", str(empty))
    assert summary["model"] == "keyword-only" and summary["query_model"] is None
    assert "no model.onnx" in summary["model_unavailable"]
    assert lines[0]["ranked"][0] == "D1:2"  # the keyword half still ranks
    out = tmp_path / "v.jsonl"
    proc = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "locomo_recall.py"), str(TINY),
         "--out", str(out), "--mode", "vector", "--model-path", str(empty)],
        capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode != 0 and "needs a model" in proc.stderr
    assert "Traceback" not in proc.stderr


TINY_ES_QUESTIONS = REPO / "tests" / "data" / "locomo-tiny-questions-es.json"
TINY_ES_MEMORIES = REPO / "tests" / "data" / "locomo-tiny-1-es.json"


def test_spanish_questions_and_spanish_memories_beside_english(tmp_path: Path) -> None:
    """One run reports three directions: the English questions (the top-level figures, as
    before), the same questions in Spanish over the English turns, and one conversation saved
    in Spanish asked in English and in Spanish. Each question set starts from the same access
    statistics, so the English figures do not move when Spanish is added."""
    english, english_lines = run_bench(tmp_path, "--mode", "bm25")
    summary, lines = run_bench(tmp_path, "--mode", "bm25",
                               "--es-questions", str(TINY_ES_QUESTIONS),
                               "--es-memories", str(TINY_ES_MEMORIES))
    for key in ("questions", "recall@5", "recall@10", "per_category"):
        assert summary[key] == english[key]
    assert [x for x in lines if "questions" not in x] == english_lines
    es = summary["spanish_questions"]
    assert es["questions"] == 5 and set(es["per_category"]) == set(english["per_category"])
    by_set = {(x.get("memories", "en"), x.get("questions", "en"), x["sample_id"],
               x["question_index"]): x["ranked"] for x in lines}
    # names survive translation, so BM25 still finds "Carla … sailboat with my father" …
    assert by_set[("en", "es", "tiny-2", 0)][0] == "D1:1"
    # … while Spanish words meet Spanish turns: "gatito" finds D1:2 in the Spanish chat
    assert by_set[("es", "es", "tiny-1", 0)][0] == "D1:2"
    reverse = summary["spanish_memories"]
    assert reverse["sample_id"] == "tiny-1"
    assert reverse["english_questions"]["questions"] == 3
    assert reverse["spanish_questions"]["questions"] == 3
    assert len([x for x in lines if x.get("memories") == "es"]) == 6


def test_stale_spanish_questions_stop_the_run(tmp_path: Path) -> None:
    """A translation whose evidence no longer matches the data would measure the wrong turns:
    the run stops with one line instead."""
    raw = json.loads(TINY_ES_QUESTIONS.read_text(encoding="utf-8"))
    raw["questions"][0]["evidence"] = ["D1:1"]
    stale = tmp_path / "stale.json"
    stale.write_text(json.dumps(raw), encoding="utf-8")
    proc = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "locomo_recall.py"), str(TINY),
         "--out", str(tmp_path / "x.jsonl"), "--mode", "bm25", "--es-questions", str(stale)],
        capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode != 0 and "tiny-1#0" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_shipped_translations_match_the_dev_set() -> None:
    """Every dev question with evidence has its Spanish twin, with the same cleaned evidence,
    and the Spanish conversation translates every turn of its sample."""
    dev = SHARED / "bench" / "locomo-dev.json"
    require(dev.is_file(), "LoCoMo dev file missing")
    data = json.loads(dev.read_text(encoding="utf-8"))
    es = bench.load_es_questions(bench.ES_QUESTIONS)
    assert es is not None
    asked = 0
    for sample in data:
        sample_id = str(sample["sample_id"])
        valid = {t["id"] for t in bench.turns_of(sample["conversation"])}
        english = bench.questions_of(sample_id, sample, valid, None)
        spanish = bench.questions_of(sample_id, sample, valid, es)
        assert [q[0] for q in spanish] == [q[0] for q in english]
        assert all(e[1] != s[1] for e, s in zip(english, spanish, strict=True))
        asked += len(spanish)
    assert asked == len(es) == 997
    memories = bench.load_es_memories(bench.ES_MEMORIES)
    assert memories is not None
    sample = next(s for s in data if s["sample_id"] == memories["sample_id"])
    turns = bench.turns_of(sample["conversation"])
    spanish_turns = bench.turns_of(bench.in_spanish(sample, memories)["conversation"])
    assert [t["id"] for t in spanish_turns] == [t["id"] for t in turns]
    assert [t["when"] for t in spanish_turns] == [t["when"] for t in turns]
    assert sum(a["text"] != b["text"] for a, b in zip(turns, spanish_turns, strict=True)) >= 360


def test_embedding_cache_gives_the_rankings_of_an_uncached_run(tmp_path: Path) -> None:
    """`--embedding-cache` only saves time: a second run reads every vector from the file and
    ranks exactly as the first, which embedded them."""
    require((MODEL_DIR / "model.onnx").exists(), "shared embedding model missing")
    cache = tmp_path / "cache"
    args = ("--model-path", str(MODEL_DIR), "--es-questions", str(TINY_ES_QUESTIONS),
            "--embedding-cache", str(cache))
    first, first_lines = run_bench(tmp_path, *args)
    [saved] = cache.glob("*.npz")
    assert "int8-queries" in saved.name  # twin-embedded questions never mix with full ones
    stamp = saved.stat().st_mtime_ns
    again, again_lines = run_bench(tmp_path, *args)
    assert again_lines == first_lines and again["recall@5"] == first["recall@5"]
    assert saved.stat().st_mtime_ns == stamp  # nothing new to embed, nothing rewritten

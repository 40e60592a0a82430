"""The questions `locomo_recall.py` missed, to read by hand: each with its evidence turns, where
they ranked, and what ranked above them.

    python benchmarks/locomo_misses.py DATA.json RESULTS.jsonl [--k 5] [--category N]
        [--set en|es-questions|es-memories|es-es] [--limit 20] [--seed S]

RESULTS.jsonl is a `locomo_recall.py --out` file of the same DATA.json. A question is a miss
when some of its evidence is not in the top `--k`. `--set` picks which questions of a
bilingual run (`--es-questions`, `--es-memories`) to read: the Spanish question text and the
Spanish turns come from the same files the benchmark used. `--seed` shuffles before `--limit`
(a sample across conversations rather than the first chat's misses). Prints JSON lines, one
per miss (question, answer, evidence with rank — null when not in the 50 ranked — and the
top k), so a step's misses can be compared with another's; `--text` prints them for reading.

Why: every ranking step of issue 35 began by reading misses (docs/benchmarks.md, "More steps
tried"); this makes that reading a command instead of a scratch script.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from locomo_recall import (
    ES_MEMORIES,
    ES_QUESTIONS,
    clean_evidence,
    in_spanish,
    load_es_memories,
    load_es_questions,
    memory_text,
    turns_of,
)

SETS = {"en": ("en", "en"), "es-questions": ("en", "es"), "es-memories": ("es", "en"),
        "es-es": ("es", "es")}


@dataclass(frozen=True)
class Miss:
    sample_id: str
    question_index: int
    category: Any
    question: str
    answer: Any
    evidence: list[dict[str, Any]]   # {"id", "rank" (1-based, None past the ranked list), "text"}
    top: list[dict[str, Any]]        # {"id", "text"} of the top k


def misses(data: list[dict[str, Any]], lines: Iterable[Mapping[str, Any]], *, k: int = 5,
           category: int | None = None, which: tuple[str, str] = ("en", "en"),
           es_questions: Mapping[tuple[str, int], Mapping[str, Any]] | None = None,
           es_memories: Mapping[str, Any] | None = None) -> list[Miss]:
    """The misses at `k` of one question set (`which` = (memories, questions) language), in
    the results' order."""
    memories_in, asked = which
    samples = {str(s.get("sample_id")): s for s in data}
    if memories_in == "es":
        if es_memories is None:
            raise ValueError("the Spanish memories' file is needed for this set")
        wanted = str(es_memories["sample_id"])
        samples = {wanted: in_spanish(samples[wanted], dict(es_memories))}
    texts: dict[str, dict[str, str]] = {}
    out: list[Miss] = []
    for line in lines:
        if (line.get("memories", "en"), line.get("questions", "en")) != which:
            continue
        if category is not None and line.get("category") != category:
            continue
        sample_id = str(line["sample_id"])
        sample = samples.get(sample_id)
        if sample is None:
            continue
        if sample_id not in texts:
            texts[sample_id] = {t["id"]: memory_text(t)
                                for t in turns_of(sample.get("conversation", {}))}
        turns = texts[sample_id]
        index = int(line["question_index"])
        qa = sample["qa"][index]
        evidence = clean_evidence(qa.get("evidence", []), set(turns))
        ranked = list(line["ranked"])
        if not evidence or all(e in ranked[:k] for e in evidence):
            continue
        question = qa.get("question")
        if asked == "es":
            if es_questions is None:
                raise ValueError("the Spanish questions' file is needed for this set")
            question = es_questions[(sample_id, index)]["question"]
        out.append(Miss(
            sample_id, index, line.get("category"), str(question),
            qa.get("answer", qa.get("adversarial_answer")),
            [{"id": e, "rank": ranked.index(e) + 1 if e in ranked else None,
              "text": turns[e]} for e in evidence],
            [{"id": d, "text": turns.get(d, "")} for d in ranked[:k]]))
    return out


def as_text(miss: Miss) -> str:
    rows = [f"== {miss.sample_id} #{miss.question_index} (category {miss.category}) "
            f"Q: {miss.question}  A: {miss.answer}"]
    rows += [f"  evidence {e['id']} rank {e['rank'] or '-'}: {e['text']}" for e in miss.evidence]
    rows += [f"  top {n} {t['id']}: {t['text']}" for n, t in enumerate(miss.top, start=1)]
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("data", type=Path)
    parser.add_argument("results", type=Path)
    parser.add_argument("--k", type=int, default=5)
    parser.add_argument("--category", type=int)
    parser.add_argument("--set", dest="which", choices=sorted(SETS), default="en")
    parser.add_argument("--limit", type=int)
    parser.add_argument("--seed", type=int)
    parser.add_argument("--text", action="store_true", help="readable text, not JSON lines")
    args = parser.parse_args(argv)
    if args.k < 1:
        parser.error("--k must be at least 1")
    which = SETS[args.which]
    data = json.loads(args.data.read_text(encoding="utf-8"))
    lines = [json.loads(x) for x in args.results.read_text(encoding="utf-8").splitlines() if x]
    found = misses(data, lines, k=args.k, category=args.category, which=which,
                   es_questions=load_es_questions(ES_QUESTIONS) if which[1] == "es" else None,
                   es_memories=load_es_memories(ES_MEMORIES) if which[0] == "es" else None)
    if args.seed is not None:
        random.Random(args.seed).shuffle(found)
    for miss in found[:args.limit]:
        print(as_text(miss) if args.text else json.dumps(asdict(miss), ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())

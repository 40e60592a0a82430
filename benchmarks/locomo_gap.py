"""Why the Spanish questions find less than the English ones: a paired reading of runs.

    python benchmarks/locomo_gap.py DATA.json BASE.jsonl [--vector VEC.jsonl]
        [--keyword KW.jsonl] [--untouched NT.jsonl] [--k 10] [--translate] [--text N]

Every file is a `locomo_recall.py --es-questions --out` file of DATA.json: BASE the default
run, VEC the same with `--mode vector --touch none --set recall_session_weight=0` (the vector
half alone), KW with `--mode bm25 --touch none --set recall_session_weight=0` (the keyword
half alone, the machine translation included), NT with `--touch none` (no access is recorded,
so the frequency term is 0 for every question). The same questions are asked in English and
in Spanish over the same English turns, so every point the Spanish set loses is a question
where the Spanish wording found less of the same evidence. A question *lost* is one whose
Spanish recall@k is below its English recall@k in BASE; each is put under the first cause
that explains it:

1. frequency — in NT the Spanish question finds as much as the English one did in BASE: an
   earlier Spanish question's touches (the frequency term) pushed the evidence out;
2. both halves — VEC and KW each find more for the English question than for the Spanish;
3. vector half — only VEC does;
4. keyword half — only KW does (the translation or the cross-language words missed);
5. fusion — neither half alone finds less for the Spanish question: how the halves combine.

`--translate` runs the real Apertium pipeline (`MachineTranslator`) over the lost questions
and counts, for the keyword-half causes, the English question's content words the
translation lacks (stemmed as the keyword index does): the words to fix. `--text N` prints N
lost questions to read (English question, Spanish, translation, cause). Prints JSON.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from locomo_recall import ES_QUESTIONS, clean_evidence, load_es_questions, turns_of

from rumi.memory.recall.query import search_terms

CAUSES = ("frequency", "both halves", "vector half", "keyword half", "fusion")
Key = tuple[str, int]


@dataclass
class Lost:
    key: Key
    category: Any
    english: float    # recall@k of the English question (BASE)
    spanish: float    # of the Spanish one
    cause: str
    question: str = ""
    es_question: str = ""
    translation: str = ""
    missing: list[str] = field(default_factory=list)


def recalls(lines: Iterable[Mapping[str, Any]], evidence: Mapping[Key, list[str]], k: int
            ) -> tuple[dict[Key, float], dict[Key, float], dict[Key, Any]]:
    """recall@k per question of the English set and of the Spanish-questions set."""
    en: dict[Key, float] = {}
    es: dict[Key, float] = {}
    category: dict[Key, Any] = {}
    for line in lines:
        which = (line.get("memories", "en"), line.get("questions", "en"))
        if which not in (("en", "en"), ("en", "es")):
            continue
        key = (str(line["sample_id"]), int(line["question_index"]))
        wanted = evidence.get(key)
        if not wanted:
            continue
        top = set(line["ranked"][:k])
        value = sum(e in top for e in wanted) / len(wanted)
        (en if which == ("en", "en") else es)[key] = value
        category[key] = line.get("category")
    return en, es, category


def read(path: Path | None) -> list[dict[str, Any]] | None:
    if path is None:
        return None
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x]


def classify(base: tuple[dict[Key, float], dict[Key, float]],
             vector: tuple[dict[Key, float], dict[Key, float]] | None,
             keyword: tuple[dict[Key, float], dict[Key, float]] | None,
             untouched: tuple[dict[Key, float], dict[Key, float]] | None,
             key: Key) -> str:
    """The first cause (CAUSES) that explains the Spanish question's loss on `key`."""
    en, _ = base
    if untouched is not None and untouched[1].get(key, 0.0) >= en[key]:
        return "frequency"
    vec = vector is not None and vector[0].get(key, 0.0) > vector[1].get(key, 0.0)
    kw = keyword is not None and keyword[0].get(key, 0.0) > keyword[1].get(key, 0.0)
    if vec and kw:
        return "both halves"
    if vec:
        return "vector half"
    if kw:
        return "keyword half"
    return "fusion"


def stems(text: str) -> set[str]:
    from snowballstemmer.english_stemmer import EnglishStemmer

    stem = EnglishStemmer().stemWord
    return {stem(w) for w in search_terms(text)}


async def translations(texts: list[str]) -> list[str]:
    from rumi.memory.recall.machine_translation import MachineTranslator

    translator = MachineTranslator(timeout=30.0)
    try:
        out = []
        for text in texts:
            found = await translator.translate(text, "es", "en")
            out.append(found.text if found is not None else "")
        return out
    finally:
        await translator.close()


def analyse(data: list[dict[str, Any]], base: list[dict[str, Any]], *,
            vector: list[dict[str, Any]] | None = None,
            keyword: list[dict[str, Any]] | None = None,
            untouched: list[dict[str, Any]] | None = None, k: int = 10,
            es_questions: Mapping[Key, Mapping[str, Any]] | None = None,
            translate: bool = False) -> tuple[dict[str, Any], list[Lost]]:
    """The summary (points lost and gained, lost questions by cause and category) and the
    lost questions themselves."""
    evidence: dict[Key, list[str]] = {}
    questions: dict[Key, str] = {}
    for n, sample in enumerate(data):
        sample_id = str(sample.get("sample_id", f"sample-{n}"))
        valid = {t["id"] for t in turns_of(sample.get("conversation", {}))}
        for index, qa in enumerate(sample.get("qa", [])):
            evidence[(sample_id, index)] = clean_evidence(qa.get("evidence", []), valid)
            questions[(sample_id, index)] = str(qa.get("question", ""))
    b_en, b_es, category = recalls(base, evidence, k)
    runs = {name: recalls(lines, evidence, k)[:2] if lines is not None else None
            for name, lines in (("vector", vector), ("keyword", keyword),
                                ("untouched", untouched))}
    paired = [key for key in b_en if key in b_es]
    lost: list[Lost] = []
    gained = 0.0
    for key in paired:
        if b_es[key] > b_en[key]:
            gained += b_es[key] - b_en[key]
        if b_es[key] >= b_en[key]:
            continue
        cause = classify((b_en, b_es), runs["vector"], runs["keyword"], runs["untouched"], key)
        es_text = str(es_questions[key]["question"]) if es_questions and key in es_questions \
            else ""
        lost.append(Lost(key, category[key], b_en[key], b_es[key], cause, questions[key],
                         es_text))
    if translate:
        for item, text in zip(lost, asyncio.run(translations([x.es_question for x in lost])),
                              strict=True):
            item.translation = text
            item.missing = sorted(stems(item.question) - stems(text))
    n = len(paired) or 1
    points = sum(x.english - x.spanish for x in lost)
    summary: dict[str, Any] = {
        "k": k, "questions": len(paired),
        "english": round(100 * sum(b_en[q] for q in paired) / n, 1),
        "spanish": round(100 * sum(b_es[q] for q in paired) / n, 1),
        "questions_lost": len(lost), "points_lost": round(100 * points / n, 1),
        "points_gained": round(100 * gained / n, 1),
        "by_cause": {c: {"questions": sum(x.cause == c for x in lost),
                         "points": round(100 * sum(x.english - x.spanish for x in lost
                                                   if x.cause == c) / n, 1)}
                     for c in CAUSES},
        "by_category": dict(sorted(Counter(str(x.category) for x in lost).items())),
    }
    for name, run in runs.items():
        if run is not None:
            en, es = run
            summary[f"{name}_run"] = {
                "english": round(100 * sum(en.get(q, 0.0) for q in paired) / n, 1),
                "spanish": round(100 * sum(es.get(q, 0.0) for q in paired) / n, 1)}
    if translate:
        keyword_lost = [x for x in lost if x.cause in ("both halves", "keyword half")]
        summary["keyword_lost_with_words_missing"] = sum(bool(x.missing) for x in keyword_lost)
        summary["words_missing_most"] = Counter(
            w for x in keyword_lost for w in x.missing).most_common(25)
    return summary, lost


def as_text(item: Lost) -> str:
    return (f"== {item.key[0]} #{item.key[1]} (category {item.category}) {item.cause}: "
            f"EN {item.english:.2f} ES {item.spanish:.2f}\n  EN: {item.question}\n"
            f"  ES: {item.es_question}\n  MT: {item.translation}\n"
            f"  missing: {' '.join(item.missing)}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("data", type=Path)
    parser.add_argument("base", type=Path)
    parser.add_argument("--vector", type=Path)
    parser.add_argument("--keyword", type=Path)
    parser.add_argument("--untouched", type=Path)
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--translate", action="store_true")
    parser.add_argument("--text", type=int, default=0, metavar="N")
    args = parser.parse_args(argv)
    if args.k < 1:
        parser.error("--k must be at least 1")
    data = json.loads(args.data.read_text(encoding="utf-8"))
    summary, lost = analyse(data, read(args.base) or [], vector=read(args.vector),
                            keyword=read(args.keyword), untouched=read(args.untouched),
                            k=args.k, es_questions=load_es_questions(ES_QUESTIONS),
                            translate=args.translate)
    for item in lost[:args.text]:
        print(as_text(item))
    print(json.dumps(summary, ensure_ascii=False, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())

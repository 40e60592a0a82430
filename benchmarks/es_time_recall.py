"""Spanish recall benchmark with relative-time questions ("¿qué cené ayer?", "la semana pasada").

    python benchmarks/es_time_recall.py [DATA] [--model-path DIR] [--mode hybrid|bm25]
        [--out RANKED.jsonl] [--set KEY=VALUE ...]

DATA (default `benchmarks/data/rumi_es_tiempo.json`, hand-written for Rumi) is one chat over
eight weeks: sessions of dated turns `[id, local time, speaker, text]` in the file's timezone,
and questions with their evidence turn ids, a flag `relative` and the local time `asked_at`
each is asked at. Every turn is saved into the real `MemoryStore` as an episodic memory
"Speaker: text" whose time is the turn's; the questions are asked in time order, each right
after the turns said before it were saved (so "la semana pasada" never sees later turns), with
the real `MemoryRecall.recall(now=asked_at)` twice: with relative time understood (the
assistant's default; the chat's zone is the file's) and without it (`relative_dates=False`,
the pipeline before issue 17). Nothing is marked as accessed, so the two runs cannot influence
each other.

Prints JSON: recall@5 / recall@10 (fraction of a question's evidence turns in the top k,
averaged) over all questions, the relative-time ones and the others, with and without time.
Queries are embedded by the model itself (no int8 twin); the median time of one recall (the
first question of the "with" run includes loading dateparser's language data) and the
machine's load are reported.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from pydantic import ValidationError

from rumi.config import MemorySettings, Settings
from rumi.memory.factory import open_memory_store
from rumi.memory.recall.retrieval import MemoryRecall
from rumi.memory.store.models import MemoryType, NewMemory

DEFAULT_DATA = Path(__file__).resolve().parent / "data" / "rumi_es_tiempo.json"
KS = (5, 10)
RANKED = 50


class DataError(ValueError):
    """The data file is not what this benchmark expects (ids, counts, times)."""


def load(path: Path) -> dict[str, Any]:
    """The data file, checked: unique turn ids, evidence that exists, times that parse,
    and every question asked after its evidence was said. Turns and questions come back
    with aware datetimes (`when`, `asked`) and sorted by them."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    zone = ZoneInfo(data["timezone"])
    turns: list[dict[str, Any]] = []
    for session in data["sessions"]:
        for turn_id, clock, speaker, text in session["turns"]:
            if not str(turn_id).startswith(f"{session['id']}:"):
                raise DataError(f"turn {turn_id} is not in session {session['id']}")
            if not str(text).strip():
                raise DataError(f"turn {turn_id} is empty")
            when = datetime.fromisoformat(f"{session['date']}T{clock}").replace(tzinfo=zone)
            turns.append({"id": turn_id, "speaker": speaker, "text": text, "when": when})
    ids = [t["id"] for t in turns]
    if len(ids) != len(set(ids)):
        raise DataError("duplicate turn ids")
    said = {t["id"]: t["when"] for t in turns}
    questions: list[dict[str, Any]] = []
    for q in data["questions"]:
        asked = datetime.fromisoformat(q["asked_at"]).replace(tzinfo=zone)
        if not q["evidence"]:
            raise DataError(f"question {q['id']} has no evidence")
        for turn_id in q["evidence"]:
            if turn_id not in said:
                raise DataError(f"question {q['id']}: unknown evidence {turn_id}")
            if said[turn_id] > asked:
                raise DataError(f"question {q['id']} is asked before {turn_id} was said")
        questions.append({**q, "asked": asked})
    qids = [q["id"] for q in questions]
    if len(qids) != len(set(qids)):
        raise DataError("duplicate question ids")
    turns.sort(key=lambda t: t["when"])
    questions.sort(key=lambda q: q["asked"])
    return {"timezone": zone, "turns": turns, "questions": questions}


def recall_at(ranked: list[str], evidence: list[str], k: int) -> float:
    top = set(ranked[:k])
    return sum(e in top for e in evidence) / len(evidence)


async def run(args: argparse.Namespace) -> dict[str, Any]:
    data = load(args.data)
    zone: ZoneInfo = data["timezone"]

    async def chat_zone(chat_id: str) -> ZoneInfo:
        return zone

    mode = {"hybrid": "hybrid", "bm25": "keyword"}[args.mode]
    scores: dict[str, list[float]] = defaultdict(list)
    spent: dict[str, list[float]] = defaultdict(list)
    lines: list[str] = []
    with tempfile.TemporaryDirectory(prefix="rumi-es-time-") as tmp:
        memory = memory_settings(args)
        store = await open_memory_store(Settings(data_dir=Path(tmp), memory=memory))
        try:
            if args.mode != "bm25" and not store.index.can_embed:
                raise SystemExit(f"embeddings unavailable: {store.embeddings_status()['reason']}")
            model = store.embeddings_status().get("model") if args.mode != "bm25" else None
            runs = {"with_time": MemoryRecall(store, memory, mode=mode, timezone=chat_zone),
                    "without_time": MemoryRecall(store, memory, mode=mode, timezone=chat_zone,
                                                 relative_dates=False)}
            turn_of: dict[int, str] = {}
            pending = list(data["turns"])
            for q in data["questions"]:
                said = [t for t in pending if t["when"] <= q["asked"]]
                pending = pending[len(said):]
                if said:
                    saved = await store.save_many("es", [
                        NewMemory(content=f"{t['speaker']}: {t['text']}",
                                  type=MemoryType.EPISODIC, importance=0.5,
                                  created_at=t["when"].astimezone(UTC),
                                  metadata={"turn": t["id"]}) for t in said])
                    turn_of.update((r.memory.id, t["id"]) for t, r in zip(said, saved,
                                                                         strict=True))
                group = "relative" if q["relative"] else "other"
                row: dict[str, Any] = {"id": q["id"], "relative": q["relative"]}
                for name, recall in runs.items():
                    started = time.perf_counter()
                    found = await recall.recall("es", q["question"], k=RANKED, now=q["asked"],
                                                touch=False)
                    spent[name].append(time.perf_counter() - started)
                    ranked = [turn_of[s.memory.id] for s in found if s.memory.id in turn_of]
                    row[name] = ranked
                    for k in KS:
                        value = recall_at(ranked, q["evidence"], k)
                        scores[f"{name}/all@{k}"].append(value)
                        scores[f"{name}/{group}@{k}"].append(value)
                lines.append(json.dumps(row, ensure_ascii=False))
        finally:
            await store.close()
    if args.out is not None:
        Path(args.out).write_text("\n".join(lines) + "\n", encoding="utf-8")
    return summarise(scores, spent, args, data, model)


def summarise(scores: dict[str, list[float]], spent: dict[str, list[float]],
              args: argparse.Namespace, data: dict[str, Any],
              model: str | None) -> dict[str, Any]:
    def pct(key: str) -> float | None:
        values = scores.get(key)
        return round(100 * sum(values) / len(values), 1) if values else None

    questions = data["questions"]
    out: dict[str, Any] = {
        "data": str(args.data), "mode": args.mode, "model": model,
        "turns": len(data["turns"]), "questions": len(questions),
        "relative_questions": sum(1 for q in questions if q["relative"]),
        "settings": dict(args.overrides),
    }
    for name in ("with_time", "without_time"):
        out[name] = {group: {f"recall@{k}": pct(f"{name}/{group}@{k}") for k in KS}
                     for group in ("all", "relative", "other")}
        times = sorted(spent.get(name, []))
        out[name]["median_ms"] = round(1000 * times[len(times) // 2], 1) if times else None
    out["load_avg_1m"] = round(os.getloadavg()[0], 2)
    return out


def parse_override(text: str) -> tuple[str, Any]:
    key, sep, raw = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    try:
        value: Any = json.loads(raw)
    except json.JSONDecodeError:
        value = raw.strip()
    return key.strip(), value


def memory_settings(args: argparse.Namespace) -> MemorySettings:
    values: dict[str, Any] = {"embeddings_enabled": args.mode != "bm25",
                              "embedding_load_wait_seconds": None}
    if args.model_path is not None:
        values["embedding_model_path"] = args.model_path
        values["embedding_model"] = Path(args.model_path).name
    for key, value in args.overrides:
        if key not in MemorySettings.model_fields:
            raise SystemExit(f"--set {key}: not a [memory] setting")
        values[key] = value
    try:
        return MemorySettings(**values)
    except ValidationError as exc:
        raise SystemExit(f"invalid --set value: {exc}") from exc


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("data", nargs="?", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--model-path", type=Path, default=None,
                        help="local fastembed ONNX model directory (offline)")
    parser.add_argument("--mode", choices=("hybrid", "bm25"), default="hybrid")
    parser.add_argument("--out", type=Path, default=None,
                        help="JSONL file: per question, the turn ids ranked with and without")
    parser.add_argument("--set", dest="overrides", action="append", type=parse_override,
                        default=[], metavar="KEY=VALUE",
                        help="override a [memory] setting (repeatable)")
    args = parser.parse_args(argv)
    result = asyncio.run(run(args))
    json.dump(result, sys.stdout, indent=2, ensure_ascii=False)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

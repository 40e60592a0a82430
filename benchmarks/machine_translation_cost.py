"""What recall's machine translation (Apertium, `recall/machine_translation.py`) costs: the
pipelines' start and memory, one question's translation through them against one `apertium`
command per question, and which recalls of one LoCoMo chat translate at all.

    python benchmarks/machine_translation_cost.py ../shared/bench/locomo-dev.json [--sample 0]
        [--one-shot 20] [--senses off|search|replace]

Prints JSON: the two pipelines' start time and memory (all their processes), p50 / p95
milliseconds per translation of the dev set's 997 English and 997 Spanish questions (each a
distinct text, so no cache hit), p50 of `apertium -u` run once per question on the first
`--one-shot` Spanish questions, and for sample `--sample` (keyword-only recall, no model,
FreeDict's word lists loaded) how many of its English and Spanish questions were translated
and recall's p50 / p95 with and without machine translation; with the 1-minute load average.
`--senses` (default: the setting's default, `recall_translation_senses`) runs each direction's
senses pipeline too (Step 9: every sense the bilingual dictionary gives a word) and recall
with that setting.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.keyword_half_cost import conversation_store, quantiles  # noqa: E402
from benchmarks.locomo_recall import (  # noqa: E402
    ES_QUESTIONS,
    load_es_questions,
    questions_of,
    turns_of,
)
from rumi.config import MemorySettings  # noqa: E402
from rumi.memory.recall.machine_translation import MachineTranslator  # noqa: E402
from rumi.memory.recall.retrieval import MemoryRecall  # noqa: E402


def pipelines_memory(translator: MachineTranslator) -> dict[str, float]:
    """MiB of every process of the running pipelines (bash and the programs it started):
    summed RSS (counts each shared library once per process) and summed PSS (shared pages
    split between the processes that map them: what the pipelines add to the machine)."""
    rss = pss = 0
    count = 0
    for pid in translator.running().values():
        root = psutil.Process(pid)
        for proc in [root, *root.children(recursive=True)]:
            info = proc.memory_full_info()
            rss += info.rss
            pss += getattr(info, "pss", info.rss)
            count += 1
    return {"processes": count, "rss_sum_mib": round(rss / 2**20, 1),
            "pss_sum_mib": round(pss / 2**20, 1)}


async def one_shot(question: str) -> float:
    started = time.perf_counter()
    proc = await asyncio.create_subprocess_exec(
        "apertium", "-u", "spa-eng", stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL)
    await proc.communicate(question.encode())
    return time.perf_counter() - started


async def run(args: argparse.Namespace) -> dict[str, Any]:
    data = json.loads(Path(args.data).read_text(encoding="utf-8"))
    es = load_es_questions(ES_QUESTIONS)
    asked: dict[str, list[str]] = {"en": [], "es": []}
    for sample in data:
        sample_id = str(sample.get("sample_id"))
        valid = {t["id"] for t in turns_of(sample["conversation"])}
        asked["en"] += [q for _, q, _, _ in questions_of(sample_id, sample, valid, None)]
        asked["es"] += [q for _, q, _, _ in questions_of(sample_id, sample, valid, es)]
    out: dict[str, Any] = {}
    translator = MachineTranslator(timeout=60.0, senses=args.senses != "off")
    if not translator.available:
        raise SystemExit(f"no machine translation here: {translator.unavailable()}")
    try:
        started = time.perf_counter()
        await translator.start()
        out["pipelines_start_s"] = round(time.perf_counter() - started, 3)
        out["pipelines_memory"] = pipelines_memory(translator)
        for source, target in (("en", "es"), ("es", "en")):
            times = []
            for question in asked[source]:
                t0 = time.perf_counter()
                await translator.translate(question, source, target)
                times.append(time.perf_counter() - t0)
            out[f"translate_{source}_{target}"] = {"questions": len(times), **quantiles(times)}
        out["pipelines_memory_after"] = pipelines_memory(translator)
    finally:
        await translator.close()
    if args.one_shot:
        shots = [await one_shot(q) for q in asked["es"][:args.one_shot]]
        out["apertium_command_per_question"] = {"questions": len(shots), **quantiles(shots)}
    out["senses"] = args.senses
    out["recall"] = await recalls(data[args.sample], es, args.senses)
    out["load_avg_1m"] = round(os.getloadavg()[0], 2)
    return out


async def recalls(sample: dict[str, Any], es: Any, senses: str) -> dict[str, Any]:
    sample_id = str(sample.get("sample_id"))
    turns = turns_of(sample["conversation"])
    valid = {t["id"] for t in turns}
    out: dict[str, Any] = {"sample_id": sample_id, "memories": len(turns)}
    with tempfile.TemporaryDirectory(prefix="rumi-mtcost-") as tmp:
        store = await conversation_store(Path(tmp), turns)
        translator = MachineTranslator(timeout=60.0, senses=senses != "off")
        try:
            with_mt = MemoryRecall(store, store.settings.model_copy(
                update={"recall_translation_senses": senses}), machine_translator=translator)
            without = MemoryRecall(store, store.settings.model_copy(
                update={"recall_machine_translation": False}))
            for recall in (with_mt, without):
                await recall.load_word_lists()
            await with_mt.start_translation()
            for language, table in (("en", None), ("es", es)):
                questions = [q for _, q, _, _ in questions_of(sample_id, sample, valid, table)]
                before = translator.calls
                times: dict[str, list[float]] = {"with": [], "without": []}
                for question in questions:
                    for name, recall in (("with", with_mt), ("without", without)):
                        t0 = time.perf_counter()
                        await recall.recall("chat", question, k=10, touch=False)
                        times[name].append(time.perf_counter() - t0)
                out[language] = {"questions": len(questions),
                                 "translated": translator.calls - before,
                                 "recall_with_machine_translation": quantiles(times["with"]),
                                 "recall_without": quantiles(times["without"])}
        finally:
            await translator.close()
            await store.close()
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("data")
    parser.add_argument("--sample", type=int, default=0)
    parser.add_argument("--one-shot", type=int, default=20)
    parser.add_argument("--senses", choices=("off", "search", "replace"),
                        default=MemorySettings().recall_translation_senses)
    result = asyncio.run(run(parser.parse_args()))
    json.dump(result, sys.stdout, indent=2)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

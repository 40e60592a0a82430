"""What a redaction costs: it reads every file of the chat's conversation (tape, daily logs,
snapshots, session) and rewrites, atomically, the ones that held the text. The tape dominates:
it is never trimmed, so its size is the chat's whole history (~1 KB a message).

    python benchmarks/redaction_cost.py --messages 10000 --hits 8
    python benchmarks/redaction_cost.py --messages 36500 --hits 8    # a year at 100 a day

A synthetic chat of N messages on the tape (and its last 60 in the session), 30 daily logs, 10
snapshots and 200 memories; the secret is in `--hits` messages, one log line, one snapshot and
one memory. Measures `survey` (what `/redact` shows before asking) and `redact`. One JSON object.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import tempfile
import time
from pathlib import Path

from _cli import positive

from rumi.config import MemorySettings, SessionSettings
from rumi.memory.files.journal import Journal
from rumi.memory.learning.consolidation import Consolidator
from rumi.memory.learning.extraction import Extractor
from rumi.memory.learning.lifecycle import MemoryLifecycle
from rumi.memory.redaction.redactor import Redactor
from rumi.memory.store.memories import MemoryStore
from rumi.memory.store.models import NewMemory
from rumi.paths import ChatPaths
from rumi.sessions.manager import SessionManager
from rumi.sessions.state import ContextItem

WORDS = ["gato", "casa", "música", "viaje", "trabajo", "café", "libro", "jardín", "ciudad",
         "amigo", "río", "montaña", "tren", "carta", "proyecto", "reunión"]
CHAT = "4242"
SECRET = "zqsecret7781"


def sentence(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words))


def plant(data: Path, n: int, hits: int, rng: random.Random) -> int:
    paths = ChatPaths(data, CHAT)
    paths.smma.mkdir(parents=True)
    secret_at = set(rng.sample(range(1, n + 1), hits))
    with open(paths.tape, "w", encoding="utf-8") as fh:
        for i in range(1, n + 1):
            text = sentence(rng, 150)   # ~1 KB a line, as docs/memory-lifecycle.md estimates
            if i in secret_at:
                text += f" mi clave es {SECRET}"
            record = {"id": i, "timestamp": "2026-06-01T10:00:00Z",
                      "role": "user" if i % 2 else "assistant", "content": text,
                      "token_count": 200}
            fh.write(json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n")
    paths.snapshots.mkdir(parents=True)
    for d in range(1, 31):
        lines = "".join(f"- 10:{m:02d} {sentence(rng, 12)}\n" for m in range(20))
        if d == 30:
            lines += f"- 11:00 Dio su clave {SECRET}\n"
        (paths.daily_dir / f"2026-05-{d:02d}.md").write_text(f"# 2026-05-{d:02d}\n\n{lines}")
    for s in range(10):
        body = "".join(f"**Usuario** [#{k}]: {sentence(rng, 40)}\n\n" for k in range(15))
        if s == 9:
            body += f"**Usuario** [#99]: mi clave es {SECRET}\n\n"
        (paths.snapshots / f"2026-05-{s + 1:02d}-charla.md").write_text(f"# t — charla\n\n{body}")
    return paths.tape.stat().st_size


async def run(args: argparse.Namespace) -> dict:
    rng = random.Random(7)
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp)
        tape_bytes = await asyncio.to_thread(plant, data, args.messages, args.hits, rng)
        store = await MemoryStore.open(data / "rumi.db", MemorySettings(embeddings_enabled=False))
        sessions = SessionManager(data, SessionSettings())
        try:
            await store.save_many(CHAT, [NewMemory(sentence(rng, 12) + f" #{i}")
                                         for i in range(199)])
            await store.save(CHAT, NewMemory(f"Su clave es {SECRET}"))
            session = await sessions.acquire(CHAT, wait=True)
            assert session is not None
            start = max(1, args.messages - 59)
            session.items = [ContextItem(id=i, role="user", content=sentence(rng, 150))
                             for i in range(start, args.messages + 1)]
            session.next_id = args.messages + 1
            journal = Journal(data)
            lifecycle = MemoryLifecycle(data, store=store, extractor=Extractor(None),  # type: ignore[arg-type]
                                        consolidator=Consolidator(store, None), journal=journal)
            redactor = Redactor(data, store=store, lifecycle=lifecycle, sessions=sessions)
            t0 = time.perf_counter()
            survey = await redactor.survey(CHAT, [SECRET], session)
            t1 = time.perf_counter()
            report = await redactor.redact(CHAT, [SECRET], session)
            t2 = time.perf_counter()
            await sessions.release(CHAT)
        finally:
            await store.close()
        left = sum(p.read_bytes().count(SECRET.encode())
                   for p in data.rglob("*") if p.is_file())
    return {
        "messages": args.messages, "tape_mb": round(tape_bytes / 2**20, 1), "hits": args.hits,
        "survey_s": round(t1 - t0, 3), "redact_s": round(t2 - t1, 3),
        "mentions": survey.mentions, "messages_redacted": len(report.message_ids),
        "memories_erased": len(report.memory_ids), "secret_left": left,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=positive, default=10_000)
    parser.add_argument("--hits", type=positive, default=8)
    print(json.dumps(asyncio.run(run(parser.parse_args()))))


if __name__ == "__main__":
    main()

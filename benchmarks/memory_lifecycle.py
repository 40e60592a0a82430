"""Memory lifecycle costs that run on every learn/edit/export: MEMORY.md render and sync,
archive export and validation. Keyword-only store (no model), temp data dir. Prints JSON.

    python benchmarks/memory_lifecycle.py --memories 500 --days 60 --runs 20
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from rumi.config import MemorySettings
from rumi.memory.archive.chat_archive import build_archive, collect_files
from rumi.memory.archive.safety import validate_archive
from rumi.memory.files.journal import Journal
from rumi.memory.files.markdown_format import parse, render
from rumi.memory.files.markdown_sync import MarkdownSync
from rumi.memory.store.memories import MemoryStore
from rumi.memory.store.models import MemoryType, NewMemory
from rumi.paths import ChatPaths

TYPES = [MemoryType.FACT, MemoryType.PREFERENCE, MemoryType.DECISION]


def ms(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {"p50_ms": round(statistics.median(ordered) * 1000, 2),
            "p95_ms": round(ordered[int(len(ordered) * 0.95) - 1] * 1000, 2)}


async def main(n: int, days: int, runs: int) -> dict[str, object]:
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp)
        store = await MemoryStore.open(data / "rumi.db", MemorySettings(embeddings_enabled=False))
        chat = "bench"
        await store.save_many(chat, [
            NewMemory(f"Recuerdo número {i} sobre el proyecto y sus detalles {i * 7}",
                      type=TYPES[i % 3], key=f"clave_{i}" if i % 4 == 0 else None)
            for i in range(n)])
        journal = Journal(data, "UTC")
        for d in range(days):
            when = datetime(2026, 1, 1, tzinfo=UTC) + timedelta(days=d)
            await journal.append_events(chat, [f"evento {k} del día {d}" for k in range(20)],
                                        now=when)
        memories = await store.list(chat, limit=100_000)
        render_t, parse_t = [], []
        for _ in range(runs):
            t = time.perf_counter()
            text = render(memories)
            render_t.append(time.perf_counter() - t)
            t = time.perf_counter()
            parse(text)
            parse_t.append(time.perf_counter() - t)

        sync = MarkdownSync(data, store)
        await sync.write(chat)
        md = ChatPaths(data, chat).memory_md
        edit_t = []
        for r in range(runs):
            text = md.read_text(encoding="utf-8")
            md.write_text(text.replace("## Hechos\n", f"## Hechos\n\n- Nota nueva {r}\n", 1),
                          encoding="utf-8")
            t = time.perf_counter()
            report = await sync.sync_from_file(chat)
            edit_t.append(time.perf_counter() - t)
            assert report.added == 1, report

        export_t, validate_t = [], []
        size = 0
        for _ in range(max(3, runs // 4)):
            t = time.perf_counter()
            files = await asyncio.to_thread(collect_files, ChatPaths(data, chat))
            lines = await store.export_jsonl(chat)
            blob = build_archive(chat, files, lines)
            export_t.append(time.perf_counter() - t)
            size = len(blob)
            t = time.perf_counter()
            validate_archive(blob)
            validate_t.append(time.perf_counter() - t)
        await store.close()
        return {
            "memories": len(memories) + runs, "daily_logs": days,
            "memory_md_bytes": md.stat().st_size,
            "render": ms(render_t), "parse": ms(parse_t),
            "edit_sync_incl_rewrite": ms(edit_t),
            "archive_bytes": size, "export": ms(export_t), "validate": ms(validate_t),
        }


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--memories", type=int, default=500)
    ap.add_argument("--days", type=int, default=60)
    ap.add_argument("--runs", type=int, default=20)
    args = ap.parse_args()
    print(json.dumps(asyncio.run(main(args.memories, args.days, args.runs)), indent=1))

"""What Rumi does before its first answer costs, on a data dir that looks like a year of use.

    python benchmarks/startup_cost.py --chats 5 --memories 2000 --messages 36500

Builds `--chats` chats, each with `--memories` memories in the real store (rendered into
its MEMORY.md) and a tape of `--messages` lines (100 a day is 36,500 a year; every fifth line
a ~2 KB tool result, the rest 10–60 word messages). Then starts the real bot three times,
each in a fresh child process (`build_app` + `App.start` + `App.stop` from rumi/app.py,
sandbox off, no channel; embeddings off unless `--model-path` names a local model): the first
start after an upgrade (the tape index is empty, so every tape is read), a normal restart
(nothing changed), and a start after `rumi.db` was deleted (rebuilt from the MEMORY.md files
and the tapes). Each reports wall time (from the child's first line, so the interpreter and
imports count; and of build_app and of start alone) and peak RSS (the child's VmHWM).
Timed alone, in this process: `PRAGMA quick_check` (what `inspect_database` runs at every
start), the MEMORY.md cross-check, and the two halves of the rebuild (MEMORY.md files read
back; tapes indexed again). The path of the run is `--workdir` (kept) or a temporary folder.
Prints one JSON object.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import random
import resource
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _cli import positive

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from rumi.config import Settings  # noqa: E402
from rumi.config_load import load_settings  # noqa: E402
from rumi.memory.factory import open_memory_store  # noqa: E402
from rumi.memory.files.healing import Recovery, cross_check, rebuild_from_markdown  # noqa: E402
from rumi.memory.files.markdown_sync import MarkdownSync  # noqa: E402
from rumi.memory.store.health import DbHealth  # noqa: E402
from rumi.memory.store.memories import MemoryStore  # noqa: E402
from rumi.memory.store.models import MemorySource, MemoryType, NewMemory  # noqa: E402
from rumi.memory.store.tape_index import TapeIndex  # noqa: E402
from rumi.paths import ChatPaths  # noqa: E402

WORDS = ["gato", "perro", "casa", "música", "viaje", "trabajo", "café", "libro", "película",
         "jardín", "ciudad", "amiga", "río", "montaña", "tren", "carta", "novela", "cerámica",
         "madre", "médico", "huerto", "bicicleta", "cumpleaños", "receta", "vecino", "playa"]
TYPES = [MemoryType.FACT, MemoryType.PREFERENCE, MemoryType.ENTITY, MemoryType.DECISION,
         MemoryType.PROFILE]
FIRST_CHAT = 7_000_001
MB = 1024 * 1024

CHILD = """
import asyncio, json, resource, sys, time
start = time.perf_counter()
from pathlib import Path
from rumi.app import build_app
from rumi.config_load import load_settings

async def main() -> dict:
    imported = time.perf_counter()
    settings = load_settings(Path(sys.argv[1]))
    app = await build_app(settings)
    built = time.perf_counter()
    await app.start()
    started = time.perf_counter()
    cpu = time.process_time()   # the whole process's CPU until ready: steadier under load
    await app.stop()
    stopped = time.perf_counter()
    recovery = app.parts["memory_store"].recovery
    return {"imports_s": imported - start, "build_app_s": built - imported,
            "start_s": started - built, "ready_s": started - start, "ready_cpu_s": cpu,
            "stop_s": stopped - started,
            "db_state": recovery.health.state, "rebuilt_memories": sum(recovery.rebuilt.values()),
            "reindexed_messages": sum(recovery.tapes.values()),
            "peak_rss_kib": peak_rss_kib()}

def peak_rss_kib() -> int:
    # VmHWM belongs to this process's own memory map; ru_maxrss would also count the
    # benchmark's RSS at the fork that started it (Linux keeps it across exec)
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss

print(json.dumps(asyncio.run(main())))
"""


def tape_line(n: int, rng: random.Random) -> str:
    """One tape record of a chat at 100 messages a day (as benchmarks/tape_search.py)."""
    day = n // 100
    stamp = f"2026-{1 + (day // 31) % 12:02d}-{1 + day % 28:02d}T{8 + n % 14:02d}:00:00Z"
    if n % 5 == 4:
        rec = {"id": n, "timestamp": stamp, "role": "tool", "name": "shell",
               "content": "x" * 2_000}
    else:
        words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(10, 60)))
        rec = {"id": n, "timestamp": stamp, "role": "user" if n % 2 else "assistant",
               "content": f"{words} marca{n}"}
    return json.dumps(rec, ensure_ascii=False) + "\n"


def write_tape(path: Path, messages: int, seed: int) -> None:
    rng = random.Random(seed)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as fh:
        for n in range(1, messages + 1):
            fh.write(tape_line(n, rng))


def memory(n: int, rng: random.Random) -> NewMemory:
    """A distinct memory of 8–30 words; one in four has a key, as extraction gives them."""
    words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 30)))
    kind = TYPES[n % len(TYPES)]
    key = f"{kind.value}.tema{n}" if n % 4 == 0 else None
    return NewMemory(content=f"{words} (recuerdo {n})".capitalize(), type=kind, key=key,
                     source=MemorySource.AUTO, importance=0.5, confidence=0.8)


async def build_data_dir(settings: Settings, chats: int, memories: int, messages: int) -> dict:
    """The data dir of a year of use, written by the store the bot opens (the same settings,
    so with `--model-path` every memory has its vector) and MarkdownSync; the tape index is
    left empty (as after an upgrade from 0.5.0, which had none)."""
    data = settings.data_dir
    store = await open_memory_store(settings)
    try:
        sync = MarkdownSync(data, store)
        for c in range(chats):
            chat = str(FIRST_CHAT + c)
            rng = random.Random(c)
            items = [memory(n, rng) for n in range(memories)]
            for at in range(0, len(items), 500):
                await store.save_many(chat, items[at:at + 500])
            await sync.write(chat)
            await asyncio.to_thread(write_tape, ChatPaths(data, chat).tape, messages, 100 + c)
        await store.connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        await store.close()
    return sizes(data, chats)


def sizes(data: Path, chats: int) -> dict:
    ids = [str(FIRST_CHAT + c) for c in range(chats)]
    db = data / "rumi.db"
    return {
        "rumi_db_bytes": db.stat().st_size if db.exists() else 0,
        "tape_bytes": sum(ChatPaths(data, i).tape.stat().st_size for i in ids),
        "memory_md_bytes": sum(ChatPaths(data, i).memory_md.stat().st_size for i in ids),
    }


def quick_check_s(db: Path) -> float:
    """`PRAGMA quick_check` alone, read-only, as store.health.inspect_database runs it."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        start = time.perf_counter()
        result = conn.execute("PRAGMA quick_check").fetchall()
        took = time.perf_counter() - start
    finally:
        conn.close()
    if result != [("ok",)]:
        raise SystemExit(f"quick_check says {result[:3]}")
    return took


def cross_check_s(db: Path, data: Path) -> float:
    start = time.perf_counter()
    problems = cross_check(db, data)
    took = time.perf_counter() - start
    if problems:
        raise SystemExit(f"the built data dir does not cross-check: {problems[:3]}")
    return took


def child_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RUMI_")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    shared = REPO.parent / "shared" / "tiktoken"   # the dev layout; a Pi uses its own cache
    if shared.is_dir():
        env.setdefault("TIKTOKEN_CACHE_DIR", str(shared))
    return env


def start_once(config: Path) -> dict:
    """One start and stop of the real bot in a fresh interpreter."""
    began = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", CHILD, str(config)], capture_output=True,
                          text=True, timeout=3600, cwd=REPO, env=child_env(), check=False)
    wall = time.perf_counter() - began
    if done.returncode != 0:
        raise SystemExit(f"the bot did not start and stop cleanly:\n{done.stderr[-3000:]}")
    child = json.loads(done.stdout.strip().splitlines()[-1])
    row: dict[str, Any] = {k: round(v, 3) for k, v in child.items()
                           if k.endswith("_s") and isinstance(v, float)}
    row["process_wall_s"] = round(wall, 3)
    row["peak_rss_mb"] = round(child["peak_rss_kib"] / 1024, 1)
    row.update({k: child[k] for k in ("db_state", "rebuilt_memories", "reindexed_messages")})
    return row


def indexed_messages(db: Path) -> int:
    """Tape messages the conversation index holds (`tape_sources.messages`, all chats)."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return int(conn.execute("SELECT coalesce(sum(messages), 0) FROM tape_sources")
                   .fetchone()[0])
    finally:
        conn.close()


def remove_database(data: Path) -> None:
    for name in ("rumi.db", "rumi.db-wal", "rumi.db-shm"):
        (data / name).unlink(missing_ok=True)


async def rebuild_parts_alone(data: Path, memory: Any) -> dict:
    """The two halves of the lost-database rebuild, timed apart on a new keyword-only store
    (no embedding: with a model, the real rebuild also embeds every memory)."""
    remove_database(data)
    store = await MemoryStore.open(data / "rumi.db", memory.model_copy(
        update={"embeddings_enabled": False}))
    try:
        start = time.perf_counter()
        await rebuild_from_markdown(data, store, Recovery(DbHealth("missing")))
        markdown = time.perf_counter() - start
        start = time.perf_counter()
        await TapeIndex(data, store.tape_db).sync_all()
        tapes = time.perf_counter() - start
    finally:
        await store.close()
    return {"memory_md_rebuild_s": round(markdown, 3), "tape_reindex_s": round(tapes, 3)}


def write_config(folder: Path, data: Path, model_path: Path | None, model_name: str) -> Path:
    memory = ("[memory]\nembeddings_enabled = false\n" if model_path is None else
              f'[memory]\nembedding_model_path = "{model_path}"\n'
              f'embedding_model = "{model_name}"\n')
    config = folder / "config.toml"
    config.write_text(f'data_dir = "{data}"\n'
                      '[llm]\napi_key = "gsk_startup_bench"\nbase_url = "http://127.0.0.1:9"\n'
                      "[sandbox]\nenabled = false\n" + memory, encoding="utf-8")
    return config


async def measure(args: argparse.Namespace, folder: Path) -> dict:
    data = folder / "data"
    data.mkdir()
    config = write_config(folder, data, args.model_path, args.model_name)
    settings = load_settings(config, env={})
    began = time.perf_counter()
    built = await build_data_dir(settings, args.chats, args.memories, args.messages)
    build_s = time.perf_counter() - began
    db = data / "rumi.db"
    checks = {"quick_check_s": round(quick_check_s(db), 3),
              "cross_check_s": round(cross_check_s(db, data), 3)}
    before = indexed_messages(db)
    upgrade = start_once(config)
    upgrade["indexed_messages_before"] = before
    upgrade["indexed_messages_after"] = indexed_messages(db)
    upgrade_db = sizes(data, args.chats)["rumi_db_bytes"]
    checks_indexed = {"quick_check_s": round(quick_check_s(db), 3),
                      "cross_check_s": round(cross_check_s(db, data), 3)}
    restart = start_once(config)
    remove_database(data)
    lost = start_once(config)
    lost["indexed_messages_after"] = indexed_messages(db)
    parts = await rebuild_parts_alone(data, settings.memory)
    return {
        "chats": args.chats, "memories_per_chat": args.memories,
        "messages_per_chat": args.messages, "data_dir": built | {"rumi_db_bytes_indexed":
                                                                 upgrade_db},
        "build_data_dir_s": round(build_s, 1),
        "embeddings": "off" if args.model_path is None else f"{args.model_name} (local files)",
        "alone_before_index": checks, "alone_after_index": checks_indexed,
        "rebuild_parts_alone": parts,
        "starts": {"first_after_upgrade": upgrade, "restart_unchanged": restart,
                   "after_rumi_db_deleted": lost},
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "cpus": os.cpu_count(), "python": sys.version.split()[0],
        "bench_peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chats", type=positive, default=5)
    parser.add_argument("--memories", type=positive, default=2_000,
                        help="memories per chat (MEMORY.md renders up to 10,000)")
    parser.add_argument("--messages", type=positive, default=36_500, help="tape lines per chat")
    parser.add_argument("--model-path", type=Path, default=None,
                        help="an embedding model's folder: embeddings on (default: off)")
    parser.add_argument("--model-name", default="sentence-transformers/all-MiniLM-L6-v2",
                        help="the model that folder holds")
    parser.add_argument("--small", action="store_true",
                        help="the small case: 2 chats x 50 memories x 500 messages")
    parser.add_argument("--workdir", type=Path, default=None,
                        help="build the data dir here (kept) instead of a temporary folder")
    args = parser.parse_args(argv)
    if args.small:
        args.chats, args.memories, args.messages = 2, 50, 500
    logging.disable(logging.WARNING)   # the rebuild's own warnings, here expected
    try:
        if args.workdir is not None:
            args.workdir.mkdir(parents=True, exist_ok=False)
            result = asyncio.run(measure(args, args.workdir))
        else:
            with tempfile.TemporaryDirectory() as tmp:
                result = asyncio.run(measure(args, Path(tmp)))
    finally:   # run in-process by a test: the tests after it must hear warnings again
        logging.disable(logging.NOTSET)
    print(json.dumps(result, indent=2))
    return result


if __name__ == "__main__":
    main()

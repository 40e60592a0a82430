"""`rumi memory stats|list|search|forget|purge|reindex|export|import`: inspect and maintain a
chat's long-term memory from the shell (the same store the bot uses; safe while it runs,
SQLite's WAL and busy timeout serialise the writers)."""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from rumi.cli import add_action, add_group
from rumi.config import Settings
from rumi.memory.factory import open_memory_store
from rumi.memory.files.markdown_sync import MarkdownSync
from rumi.memory.store.api import MemoryStoreAPI
from rumi.memory.store.codec import clip
from rumi.memory.store.models import Memory, MemoryInputError, MemoryStatus, MemoryType
from rumi.paths import ChatPaths

EXIT_FAIL = 1
log = logging.getLogger(__name__)


def register(subparsers: argparse._SubParsersAction) -> None:
    sub = add_group(subparsers, "memory", "inspect and maintain long-term memory", __doc__)

    def action(name: str, handler: Any, text: str, *, chat: bool = True) -> argparse.ArgumentParser:
        p = add_action(sub, name, handler, text)
        if chat:
            p.add_argument("--chat", required=True, help="chat id (Telegram chat id or 'terminal')")
        return p

    p = action("stats", stats, "counts by type and status, embedding status")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p = action("list", list_memories, "list memories, newest first")
    p.add_argument("--type", action="append", choices=[t.value for t in MemoryType])
    p.add_argument("--status", default="active",
                   choices=[s.value for s in MemoryStatus] + ["all"])
    p.add_argument("--limit", type=int, default=50)
    p = action("search", search, "recall memories for a query (hybrid when available)")
    p.add_argument("query", nargs="+")
    p.add_argument("-k", "--limit", type=int, default=10)
    p.add_argument("--mode", choices=["recall", "keyword", "vector"], default="recall",
                   help="recall = the bot's own ranking (falls back to keyword)")
    p = action("forget", forget, "delete memories by id, key or phrase")
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument("--id", type=int, dest="memory_id")
    which.add_argument("--key")
    which.add_argument("--text")
    p = action("purge", purge, "expire memories past their TTL and compact vector indexes",
               chat=False)
    p.add_argument("--chat", help="only this chat (default: every chat)")
    action("reindex", reindex, "embed what lacks a vector and rebuild the chat's index")
    p = action("export", export, "write the chat's memories as JSON lines")
    p.add_argument("--out", type=Path, help="file to write (default: stdout)")
    p = action("import", import_, "merge JSON lines into the chat's memories")
    p.add_argument("file", type=Path)


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """Plain aligned columns (the last column is not padded)."""
    cells = [[str(h) for h in headers]] + [[str(c) for c in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    lines = []
    for n, row in enumerate(cells):
        lines.append("  ".join(c.ljust(widths[i]) if i < len(row) - 1 else c
                               for i, c in enumerate(row)).rstrip())
        if n == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _memory_rows(memories: Sequence[Memory], scores: dict[int, float] | None = None) -> str:
    headers = ["id", "type", "status", "imp", "key", "updated", "content"]
    if scores is not None:
        headers.insert(1, "score")
    rows = []
    for m in memories:
        row: list[Any] = [m.id, m.type.value, m.status.value, f"{m.importance:.2f}", m.key or "",
                          m.updated_at.strftime("%Y-%m-%d"), clip(m.content, 70)]
        if scores is not None:
            row.insert(1, f"{scores.get(m.id, 0.0):.3f}")
        rows.append(row)
    return table(headers, rows)


def _write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("w", encoding="utf-8") as fh:
        fh.write(text)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def _fail(text: str) -> int:
    print(f"rumi memory: {text}", file=sys.stderr)
    return EXIT_FAIL


async def _run(settings: Settings, fn: Any) -> int:
    # an operator's command waits for the model however long it takes; the bot does not
    memory = settings.memory.model_copy(update={"embedding_load_wait_seconds": None})
    try:
        store = await open_memory_store(settings.model_copy(update={"memory": memory}))
    except Exception as exc:  # noqa: BLE001 - e.g. unreadable data dir: one line, no traceback
        return _fail(f"cannot open {settings.data_dir / 'rumi.db'}: {exc}")
    try:
        return await fn(store)
    except MemoryInputError as exc:
        return _fail(str(exc))
    finally:
        await store.close()


async def _refresh_memory_md(settings: Settings, store: MemoryStoreAPI, chats: Sequence[str],
                             *, create: bool = False) -> None:
    """Rewrite MEMORY.md after the store changed from the shell.

    Otherwise the file keeps ids that are no longer active and a person editing it would
    be working on a stale copy. Only chats that already have the file, unless `create`.
    A pending human edit is applied first (MarkdownSync.write); a broken one is left alone.
    """
    sync = MarkdownSync(settings.data_dir, store)
    for chat in chats:
        path = ChatPaths(settings.data_dir, chat).memory_md
        if not create and not await asyncio.to_thread(path.exists):
            continue
        if not await sync.write(chat):
            print(f"warning: {path} has an edit that cannot be read; left as it is "
                  f"({sync.problems.get(chat, 'see the bot log')})", file=sys.stderr)


async def stats(args: argparse.Namespace, settings: Settings) -> int:
    async def go(store: MemoryStoreAPI) -> int:
        if store.embedder is not None and store.has_vectors:
            await store.embedder.warm_up()  # report what a search would really get
        data = await store.stats(args.chat)
        if args.json:
            print(json.dumps(data, ensure_ascii=False, indent=2, default=str))
            return 0
        print(f"chat {data['chat_id']}: {data['total']} memories, {data['active']} active, "
              f"{data['embedded']} with vectors")
        if data["by_status"]:
            print(table(["status", "count"], sorted(data["by_status"].items())))
        if data["by_type"]:
            print()
            print(table(["type (active)", "count"], sorted(data["by_type"].items())))
        emb = data["embeddings"]
        state = "available" if emb["available"] else f"unavailable ({emb['reason']})"
        recipe = f" (each vector with the question before it: {emb['recipe']})" \
            if emb.get("recipe") else ""
        print(f"\nembeddings: {emb.get('model')}{recipe} — {state}")
        return 0
    return await _run(settings, go)


async def list_memories(args: argparse.Namespace, settings: Settings) -> int:
    async def go(store: MemoryStoreAPI) -> int:
        status = None if args.status == "all" else args.status
        memories = await store.list(args.chat, types=args.type, status=status, limit=args.limit)
        print(_memory_rows(memories) if memories else "(no memories)")
        return 0
    return await _run(settings, go)


async def _recall(store: MemoryStoreAPI, settings: Settings, chat: str, query: str,
                  k: int) -> list[tuple[Memory, float]] | None:
    """The bot's own recall (rumi.memory.recall.retrieval) when that module is installed."""
    try:
        from rumi.memory.recall import retrieval
    except ImportError:
        return None
    zone = ZoneInfo(settings.timezone)

    async def timezone(chat_id: str) -> ZoneInfo:
        return zone  # "ayer" in the configured zone (a chat's /timezone is the bot's)

    try:
        recall = retrieval.MemoryRecall(store, settings.memory, timezone=timezone)
        try:
            scored = await recall.recall(chat, query, k=k, touch=False)
        finally:
            await recall.close()   # a translation pipeline the question started
    except (TypeError, AttributeError):
        log.debug("MemoryRecall not usable from the CLI; keyword search instead", exc_info=True)
        return None
    return [(s.memory, s.score.total) for s in scored]


async def search(args: argparse.Namespace, settings: Settings) -> int:
    query = " ".join(args.query)

    async def go(store: MemoryStoreAPI) -> int:
        found: list[tuple[Memory, float]] | None = None
        how = args.mode
        if args.mode == "recall":
            found = await _recall(store, settings, args.chat, query, args.limit)
            if found is None:
                how = "keyword"
        if found is None:
            if how == "vector":
                hits = await store.vector_search(args.chat, query, args.limit)
                if not hits and not store.embeddings_status()["available"]:
                    return _fail(f"semantic search unavailable: "
                                 f"{store.embeddings_status()['reason']}")
            else:
                hits = await store.keyword_search(args.chat, query, args.limit)
            by_id = {m.id: m for m in await store.get_many(args.chat, [i for i, _ in hits])}
            found = [(by_id[i], s) for i, s in hits if i in by_id]
        if not found:
            print(f"(nothing found; {how} search)")
            return 0
        print(f"{how} search, {len(found)} results")
        print(_memory_rows([m for m, _ in found], {m.id: s for m, s in found}))
        return 0
    return await _run(settings, go)


async def forget(args: argparse.Namespace, settings: Settings) -> int:
    async def go(store: MemoryStoreAPI) -> int:
        gone = await store.forget(args.chat, memory_id=args.memory_id, key=args.key,
                                  text=args.text)
        if not gone:
            print("nothing to forget")
            return 0
        print(f"forgot {len(gone)} memories")
        print(_memory_rows(gone))
        await _refresh_memory_md(settings, store, [args.chat])
        return 0
    return await _run(settings, go)


async def purge(args: argparse.Namespace, settings: Settings) -> int:
    async def go(store: MemoryStoreAPI) -> int:
        count = await store.purge_expired(chat_id=args.chat)
        where = f"chat {args.chat}" if args.chat else "all chats"
        print(f"expired {count} memories ({where}); vector indexes compacted")
        if count:
            chats = [args.chat] if args.chat else await store.chats()
            await _refresh_memory_md(settings, store, chats)
        return 0
    return await _run(settings, go)


async def reindex(args: argparse.Namespace, settings: Settings) -> int:
    async def go(store: MemoryStoreAPI) -> int:
        if not store.has_vectors:
            return _fail("embeddings are disabled in the config (memory.embeddings_enabled)")
        result = await store.reindex(args.chat)
        status = store.embeddings_status()
        print(f"embedded {result['embedded']} memories; index holds {result['indexed']} vectors")
        if not status["available"]:
            print(f"warning: embeddings unavailable ({status['reason']})", file=sys.stderr)
            return EXIT_FAIL
        return 0
    return await _run(settings, go)


async def export(args: argparse.Namespace, settings: Settings) -> int:
    async def go(store: MemoryStoreAPI) -> int:
        lines = await store.export_jsonl(args.chat)
        text = "".join(line + "\n" for line in lines)
        if args.out is None:
            sys.stdout.write(text)
            return 0
        await asyncio.to_thread(_write_atomic, args.out, text)
        print(f"wrote {len(lines)} memories to {args.out}", file=sys.stderr)
        return 0
    return await _run(settings, go)


async def import_(args: argparse.Namespace, settings: Settings) -> int:
    try:
        text = await asyncio.to_thread(args.file.read_text, encoding="utf-8", errors="replace")
        lines = text.splitlines()
    except OSError as exc:
        return _fail(f"cannot read {args.file}: {exc.strerror}")

    async def go(store: MemoryStoreAPI) -> int:
        report = await store.import_report(args.chat, lines)
        print(f"imported {report.imported}, skipped {report.duplicates} duplicates, "
              f"{len(report.errors)} bad lines")
        for line_no, problem in report.errors[:20]:
            print(f"  line {line_no}: {problem}", file=sys.stderr)
        if report.imported:
            await _refresh_memory_md(settings, store, [args.chat], create=True)
        return 0
    return await _run(settings, go)

"""`rumi export --chat ID [--out FILE]` and `rumi import FILE --chat ID`: a chat's whole memory
(.smma files, tape, MEMORY.md, daily logs, snapshots, memories) as one checked `.tar.gz`.

The same archive `/export` sends in Telegram; import validates the manifest and checksums and
refuses unsafe archives before writing anything, then merges without duplicates.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

from rumi.base.chats import validate_chat_id
from rumi.cli import add_config_argument
from rumi.config import Settings
from rumi.fileio import ArchiveFileTooLarge, ensure_private_dir, read_archive_file
from rumi.memory.archive.chat_archive import export_to_file, import_archive
from rumi.memory.archive.safety import ArchiveLimits, ArchiveRejected
from rumi.memory.factory import open_memory_store
from rumi.memory.files.markdown_sync import MarkdownSync
from rumi.memory.store.models import MemoryInputError

EXIT_FAIL = 1


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("export", help="export a chat's memory as one .tar.gz",
                              description=__doc__)
    add_config_argument(p)
    p.add_argument("--chat", required=True, help="chat id (Telegram chat id or 'terminal')")
    p.add_argument("--out", type=Path, default=None, help="archive path (default: ./rumi-…)")
    p.set_defaults(handler=export_command)
    p = subparsers.add_parser("import", help="import an exported archive into a chat",
                              description=__doc__)
    add_config_argument(p)
    p.add_argument("file", type=Path, help="the .tar.gz made by /export or `rumi export`")
    p.add_argument("--chat", required=True, help="chat id to merge into")
    p.set_defaults(handler=import_command)


def _fail(text: str) -> int:
    print(f"rumi: {text}", file=sys.stderr)
    return EXIT_FAIL


def _chat(value: str) -> str | None:
    try:
        return validate_chat_id(value)
    except ValueError:
        return None


async def export_command(args: argparse.Namespace, settings: Settings) -> int:
    chat = _chat(args.chat)
    if chat is None:
        return _fail(f"invalid chat id {args.chat!r}")
    if not await asyncio.to_thread(settings.data_dir.is_dir):
        return _fail(f"no data directory at {settings.data_dir}")
    store = await open_memory_store(settings)
    try:
        await MarkdownSync(settings.data_dir, store).write(chat)
        target = await export_to_file(settings.data_dir, chat, store, args.out)
    except OSError as exc:
        return _fail(f"cannot write the archive: {exc.strerror or exc}")
    finally:
        await store.close()
    print(f"wrote {target}")
    return 0


async def import_command(args: argparse.Namespace, settings: Settings) -> int:
    chat = _chat(args.chat)
    if chat is None:
        return _fail(f"invalid chat id {args.chat!r}")
    limits = ArchiveLimits()
    try:
        data = await asyncio.to_thread(read_archive_file, args.file, limits.max_archive_bytes)
    except ArchiveFileTooLarge as exc:
        return _fail(f"refused: the file is too large ({exc.size} bytes)")
    except OSError as exc:
        return _fail(f"cannot read {args.file}: {exc.strerror or exc}")
    await asyncio.to_thread(ensure_private_dir, settings.data_dir)
    store = await open_memory_store(settings)
    try:
        report = await import_archive(settings.data_dir, chat, data, store, limits)
        await MarkdownSync(settings.data_dir, store).write(chat)
    except ArchiveRejected as exc:
        return _fail(f"refused: {exc}; nothing was changed")
    except MemoryInputError as exc:
        return _fail(f"refused: {exc}; nothing was changed")
    finally:
        await store.close()
    print(f"imported into chat {chat}: {report.memories_added} new memories, "
          f"{len(report.files_written)} files added, {len(report.files_merged)} merged, "
          f"{len(report.files_kept)} kept as they were")
    for line_no, problem in report.memory_errors[:20]:
        print(f"  memories.jsonl line {line_no} not imported: {problem}", file=sys.stderr)
    return 0

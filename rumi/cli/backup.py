"""`rumi backup [--out DIR]` and `rumi restore FILE`: the whole data dir in one archive.

Backup is safe while Rumi runs (SQLite's online backup API for rumi.db). Restore must run with
Rumi stopped; nothing is deleted: what the archive replaces is renamed `*.before-restore-<time>`.
The logs it copies are scrubbed of secrets first (lines an older version wrote unmasked).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tarfile
from pathlib import Path

from rumi.cli import add_config_argument
from rumi.cli.logs import scrub_logs
from rumi.config import Settings
from rumi.memory.archive.backup import RestoreRejected, make_backup, restore_backup

EXIT_FAIL = 1


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("backup", help="back up the data dir (safe while running)",
                              description=__doc__)
    add_config_argument(p)
    p.add_argument("--out", type=Path, default=None,
                   help="folder for the archive (default: memory.backup_dir or data_dir/backups)")
    p.add_argument("--workspaces", action="store_true",
                   help="also copy the chats' sandbox workspaces (large; left out by default)")
    p.set_defaults(handler=backup_command)
    p = subparsers.add_parser("restore", help="restore a backup into the data dir (stop Rumi)",
                              description=__doc__)
    add_config_argument(p)
    p.add_argument("file", type=Path, help="a rumi-backup-*.tar.gz")
    p.set_defaults(handler=restore_command)


async def backup_command(args: argparse.Namespace, settings: Settings) -> int:
    folder = args.out or settings.memory.backup_dir or settings.data_dir / "backups"
    try:
        await asyncio.to_thread(scrub_logs, settings.data_dir, settings.secrets())
        info = await asyncio.to_thread(make_backup, settings.data_dir, folder.expanduser(),
                                       workspaces=args.workspaces)
    except OSError as exc:
        print(f"rumi: backup failed: {exc}", file=sys.stderr)
        return EXIT_FAIL
    print(f"{info.path} ({info.files} files, {info.size} bytes)")
    return 0


async def restore_command(args: argparse.Namespace, settings: Settings) -> int:
    archive = args.file.expanduser()
    if not archive.is_file():
        print(f"rumi: {archive} is not a file", file=sys.stderr)
        return EXIT_FAIL
    try:
        restored = await asyncio.to_thread(restore_backup, archive, settings.data_dir)
    except (RestoreRejected, tarfile.TarError, OSError, EOFError) as exc:
        print(f"rumi: not restored: {exc}", file=sys.stderr)
        return EXIT_FAIL
    print(f"restored {', '.join(restored)} into {settings.data_dir}; "
          "the replaced files are kept as *.before-restore-*")
    return 0

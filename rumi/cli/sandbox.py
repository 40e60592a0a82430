"""`rumi sandbox build|ls|prune|shell` — operator commands for the per-chat containers."""

from __future__ import annotations

import argparse
import asyncio
import sys

from rumi.cli import add_config_argument, add_group
from rumi.cli.build_job import build_in_foreground
from rumi.config import Settings
from rumi.sandbox.containers import SandboxInfo
from rumi.sandbox.errors import SandboxError
from rumi.sandbox.manager import SandboxManager


def register(subparsers: argparse._SubParsersAction) -> None:
    sub = add_group(subparsers, "sandbox", "manage the per-chat Docker sandboxes",
                    "Build the sandbox image and inspect, prune or enter the per-chat "
                    "containers.")

    build = sub.add_parser("build", help="build the sandbox image (sandbox.image)")
    add_config_argument(build)
    build.add_argument("--tag", help="image tag (default: sandbox.image from the config)")
    build.add_argument("--offline", action="store_true",
                       help="no registry: debootstrap a Debian root locally (needs root)")
    build.add_argument("--minimal", action="store_true",
                       help="busybox-only image for quick tests (no bash/python3)")
    build.add_argument("--base",
                       help="base image for the Dockerfile (default debian:bookworm-slim)")
    build.add_argument("--no-fallback", action="store_true",
                       help="when Docker Hub is unreachable, stop (and say so) instead of "
                            "building the offline recipe")
    build.set_defaults(handler=build_image)

    ls = sub.add_parser("ls", help="list Rumi's sandbox containers")
    add_config_argument(ls)
    ls.add_argument("--all", action="store_true", help="include other Rumi instances' containers")
    ls.set_defaults(handler=list_sandboxes)

    prune = sub.add_parser("prune", help="remove this Rumi's leftover sandbox containers")
    add_config_argument(prune)
    prune.add_argument("--all", action="store_true", help="also remove running ones")
    prune.add_argument("--volumes", action="store_true",
                       help="also delete workspaces no container uses (files are lost; asks "
                            "first)")
    prune.add_argument("--yes", "-y", action="store_true",
                       help="with --volumes: delete without asking")
    prune.set_defaults(handler=prune_sandboxes)

    shell = sub.add_parser("shell", help="open a shell inside a chat's sandbox (as uid 1000)")
    add_config_argument(shell)
    shell.add_argument("chat", help="chat id, e.g. 12345 or terminal")
    shell.set_defaults(handler=open_shell)


async def build_image(args: argparse.Namespace, settings: Settings) -> int:
    tag = args.tag or settings.sandbox.image
    return await build_in_foreground(tag, settings.data_dir, offline=args.offline,
                                     minimal=args.minimal, base=args.base,
                                     fallback=not args.no_fallback)


async def list_sandboxes(args: argparse.Namespace, settings: Settings) -> int:
    manager = SandboxManager(settings.sandbox, settings.data_dir)
    try:
        available, reason = await manager.status()
        if not available:
            print(f"sandbox unavailable: {reason}", file=sys.stderr)
        try:
            infos = await manager.list_sandboxes(all_instances=args.all)
        except SandboxError as exc:
            print(f"rumi: {exc}", file=sys.stderr)
            return 1
    finally:
        await manager.aclose()
    if not infos:
        print("no sandbox containers")
        return 0
    rows = [("NAME", "CHAT", "STATUS", "CREATED", "VERSION", "INSTANCE")]
    for info in infos:
        mine = "this" if info.instance == manager.instance else info.instance
        rows.append((info.name, info.chat_id, info.status, info.created, info.version, mine))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        cells = (cell.ljust(width) for cell, width in zip(row, widths, strict=True))
        print("  ".join(cells).rstrip())
    return 0


async def prune_sandboxes(args: argparse.Namespace, settings: Settings) -> int:
    """Remove this Rumi's leftover containers; with --volumes also the workspaces no container
    uses any more, after the person confirms (their files are lost)."""
    manager = SandboxManager(settings.sandbox, settings.data_dir)
    try:
        infos = await manager.list_sandboxes()
        orphans = not await manager.in_use_by_a_running_rumi()  # its process was killed
        removed, kept = [], []
        for info in infos:
            if args.all or orphans or info.status != "running":
                await manager.remove(info.chat_id, workspace=args.volumes)
                removed.append(info.name)
            else:
                kept.append(info)
        print(f"removed {len(removed)} container(s)"
              + (": " + ", ".join(removed) if removed else ""))
        if kept:
            print(f"kept {len(kept)} running container(s) of the Rumi running on this data "
                  "dir (--all removes them too): " + ", ".join(i.name for i in kept))
        if args.volumes:
            return await _prune_volumes(manager, kept, assume_yes=args.yes)
    except SandboxError as exc:
        print(f"rumi: {exc}", file=sys.stderr)
        return 1
    finally:
        await manager.aclose()
    return 0


async def _prune_volumes(manager: SandboxManager, kept: list[SandboxInfo], *,
                         assume_yes: bool) -> int:
    in_use = {manager.identity(info.chat_id).volume_name for info in kept}
    idle = [name for name in await manager.list_workspaces() if name not in in_use]
    images = await manager.list_orphaned_images()
    if not idle and not images:
        print("no unused workspace volumes")
        return 0
    if idle:
        print(f"{len(idle)} workspace volume(s) no container uses: " + ", ".join(idle))
    if images:
        print(f"{len(images)} workspace image(s) whose workspace volume is gone: "
              + ", ".join(images))
    if not assume_yes:
        if not sys.stdin.isatty():
            print("rumi: not deleted; their files would be lost: run again with --yes to "
                  "delete them", file=sys.stderr)
            return 1
        answer = await asyncio.to_thread(input, "delete them and every file in them? [y/N] ")
        if answer.strip().lower() not in ("y", "yes", "s", "si", "sí"):
            print("nothing deleted")
            return 0
    deleted = [name for name in idle if await manager.remove_workspace_volume(name)]
    print(f"deleted {len(deleted)} workspace volume(s)"
          + (": " + ", ".join(deleted) if deleted else ""))
    if images:
        gone = [name for name in images if await manager.remove_image_store(name)]
        print(f"deleted {len(gone)} orphaned workspace image(s)"
              + (": " + ", ".join(gone) if gone else ""))
    return 0


async def open_shell(args: argparse.Namespace, settings: Settings) -> int:
    manager = SandboxManager(settings.sandbox, settings.data_dir)
    try:
        container = await manager.ensure(args.chat)
    except (SandboxError, ValueError) as exc:
        print(f"rumi: {exc}", file=sys.stderr)
        return 1
    finally:
        await manager.aclose()
    flags = "-it" if sys.stdin.isatty() else "-i"
    argv = ["docker", "exec", flags, "-u", settings.sandbox.user, "-w", "/workspace",
            container.name, "sh", "-c", "command -v bash >/dev/null && exec bash -l || exec sh"]
    return await _run(argv)


async def _run(argv: list[str]) -> int:
    try:
        process = await asyncio.create_subprocess_exec(*argv)
    except FileNotFoundError:
        print(f"rumi: {argv[0]} not found", file=sys.stderr)
        return 1
    return await process.wait()

"""The MEMORY.md watcher: `watchfiles` on `chats/` and each chat's `memory/` directory.

Directory watches, so editors that save by atomic rename are seen; only those directories, so
a chat's workspace never costs inotify watches. Every change is handed to
`MarkdownSync.sync_from_file`, which does the merging.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any, Protocol

from rumi.paths import ChatPaths, chats_root

log = logging.getLogger(__name__)

PROBE_NAME = ".rumi-watch-probe"


class WatchedFiles(Protocol):
    """What the watcher reads from `MarkdownSync`: where, how often, and whom to tell."""

    data_dir: Path
    debounce_ms: int
    force_polling: bool | None
    rescan_ms: int

    async def sync_from_file(self, chat_id: str) -> Any: ...


class MemoryFileWatcher:
    """Watches every chat's MEMORY.md and applies each save through `files.sync_from_file`."""

    def __init__(self, files: WatchedFiles) -> None:
        self.files = files
        self._task: asyncio.Task[None] | None = None
        self._stop: asyncio.Event | None = None
        self._ready: asyncio.Event = asyncio.Event()
        self._restart: asyncio.Event = asyncio.Event()
        self._watched: set[str] = set()
        self._confirm: asyncio.Task[None] | None = None

    def new_chat(self, chat_id: str) -> None:
        """A chat just got its first MEMORY.md: restart the watch so it covers that one too."""
        if self._task is not None and chat_id not in self._watched:
            self._restart.set()

    async def start(self) -> None:
        """Start watching (directory watches, so atomic-rename saves are seen)."""
        if self._task is not None:
            return
        root = chats_root(self.files.data_dir)
        await asyncio.to_thread(root.mkdir, parents=True, exist_ok=True)
        self._stop = asyncio.Event()
        self._ready = asyncio.Event()
        self._task = asyncio.create_task(self._watch(root), name="memory-md-watcher")
        await self._wait_until_watching(root)
        await self.catch_up()

    async def _wait_until_watching(self, root: Path) -> None:
        """Touch a probe file until the watcher reports it, so no edit after start is missed."""
        probe = root / PROBE_NAME
        for _ in range(100):
            await asyncio.to_thread(probe.write_text, "probe", encoding="utf-8")
            try:
                await asyncio.wait_for(asyncio.shield(self._ready.wait()), timeout=0.2)
                break
            except TimeoutError:
                continue
        else:
            log.warning("MEMORY.md watcher did not confirm it is running")
        await asyncio.to_thread(probe.unlink, missing_ok=True)

    async def catch_up(self) -> None:
        """Apply edits made while Rumi was not running."""
        root = chats_root(self.files.data_dir)
        names = await asyncio.to_thread(
            lambda: [p.parent.parent.name for p in root.glob("*/memory/MEMORY.md")])
        for chat_id in names:
            try:
                await self.files.sync_from_file(chat_id)
            except Exception:
                log.exception("MEMORY.md catch-up failed for chat %s", chat_id)

    async def stop(self) -> None:
        if self._task is None:
            return
        assert self._stop is not None
        self._stop.set()
        self._restart.set()
        if self._confirm is not None:
            self._confirm.cancel()
            await asyncio.gather(self._confirm, return_exceptions=True)
            self._confirm = None
        try:
            await asyncio.wait_for(self._task, timeout=5)
        except (TimeoutError, asyncio.CancelledError):
            self._task.cancel()
        self._task = None

    async def _confirm_and_catch_up(self, root: Path) -> None:
        """After a restart: once the new watch is confirmed live, apply what changed meanwhile."""
        await self._wait_until_watching(root)
        await self.catch_up()

    def _memory_dirs(self, root: Path) -> list[Path]:
        return sorted(p for p in root.glob("*/memory") if p.is_dir() and not p.is_symlink())

    async def _watch(self, root: Path) -> None:
        """Watch `chats/` and each `chats/<id>/memory/` non-recursively.

        Only those directories, so a chat's workspace (maybe thousands of files) never costs
        inotify watches; a chat that gets its first MEMORY.md (or any new memory/ directory,
        found by a rescan every `rescan_ms`) triggers a restart that adds it.
        """
        from watchfiles import awatch

        def only_memory_md(_change: Any, path: str) -> bool:
            return Path(path).name in ("MEMORY.md", PROBE_NAME)

        assert self._stop is not None
        files = self.files
        first = True
        while not self._stop.is_set():
            self._restart = asyncio.Event()
            dirs = await asyncio.to_thread(self._memory_dirs, root)
            self._watched = {d.parent.name for d in dirs}
            if not first:
                self._ready = asyncio.Event()
                self._confirm = asyncio.create_task(self._confirm_and_catch_up(root))
            first = False
            try:
                async for changes in awatch(
                    root, *dirs, watch_filter=only_memory_md, stop_event=self._restart,
                    debounce=files.debounce_ms, step=50, force_polling=files.force_polling,
                    recursive=False, rust_timeout=files.rescan_ms, yield_on_timeout=True,
                ):
                    if not changes:
                        now = await asyncio.to_thread(self._memory_dirs, root)
                        if {d.parent.name for d in now} != self._watched:
                            self._restart.set()  # a chat got a memory/ dir: watch it too
                        continue
                    if any(Path(p).name == PROBE_NAME for _, p in changes):
                        self._ready.set()
                    chats = {Path(p).parent.parent.name for _, p in changes
                             if Path(p).name == "MEMORY.md"}
                    for chat_id in sorted(chats):
                        await self._handle_change(chat_id)
            except Exception:
                log.exception("MEMORY.md watcher failed; restarting in 2s")
                try:
                    await asyncio.wait_for(self._stop.wait(), timeout=2)
                except TimeoutError:
                    continue

    async def _handle_change(self, chat_id: str) -> None:
        try:
            ChatPaths(self.files.data_dir, chat_id)
        except ValueError:
            return
        try:
            await self.files.sync_from_file(chat_id)
        except Exception:
            log.exception("applying MEMORY.md edit failed for chat %s", chat_id)

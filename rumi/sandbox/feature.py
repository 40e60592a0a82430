"""The per-chat sandbox as a feature: its tools, its /status line, the idle-prune job, the
chat's container removed when its session ends, orphans cleaned at start and every container
stopped at exit. It offers `STOP_SANDBOX` (memory's /reset) and `SANDBOX_FILES` (documents)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rumi import messages as msg
from rumi.base.checks import DoctorCheck
from rumi.base.feature import (
    SANDBOX_FILES,
    STOP_SANDBOX,
    FeatureHost,
    SandboxFiles,
    SaveFailed,
)

if TYPE_CHECKING:  # the docker SDK is imported only when the sandbox is enabled
    from rumi.sandbox.manager import SandboxManager

log = logging.getLogger(__name__)


class SandboxFeature:
    name = "sandbox"

    def doctor_checks(self) -> list[DoctorCheck]:
        """Whether this host can limit each chat's workspace (Docker itself is the doctor's)."""
        from rumi.sandbox.checks import doctor_checks

        return doctor_checks()

    async def setup(self, host: FeatureHost) -> None:
        settings = host.settings.sandbox
        if not settings.enabled:
            log.info("sandbox disabled (sandbox.enabled = false): no command tools")
            return
        # imported only when enabled: the docker SDK stays out of a sandbox-less start
        from rumi.sandbox.errors import SandboxError
        from rumi.sandbox.manager import SandboxManager
        from rumi.sandbox.tools import sandbox_tools

        manager = SandboxManager(settings, host.settings.data_dir)
        host.expose("sandbox", manager)
        for tool in sandbox_tools(manager):
            host.add_tool(tool)

        async def stop_sandbox(chat_id: str) -> None:
            try:
                await manager.remove(chat_id)
            except SandboxError as exc:
                log.warning("could not remove the sandbox of chat %s: %s", chat_id, exc)

        async def on_ended(event: Any) -> None:
            await stop_sandbox(event.chat_id)

        async def start() -> None:
            # Orphans of a previous run go now, or when the engine first answers.
            available, reason = await manager.start(sweep_in_background=True)
            if available:
                return
            building = await image_being_built(manager)
            if building is not None:   # `rumi setup` started it: nothing for anyone to do
                log.warning("sandbox image %s is being built (log: %s); command tools appear "
                            "when it is ready", manager.settings.image, building)
            else:
                log.warning("sandbox unavailable: %s", reason)

        async def stop_all() -> None:
            removed = await manager.remove_all()
            if removed:
                log.info("stopped %d sandbox container(s) on exit", len(removed))

        host.offer(STOP_SANDBOX, stop_sandbox)
        host.offer(SANDBOX_FILES, SandboxFiles(file_saver(manager), manager.available))
        host.on_session("ended", on_ended)
        host.add_status_provider(status_line(manager))
        host.add_job("sandbox.prune_idle", manager.prune_idle,
                     minutes=min(5.0, settings.idle_prune_minutes))
        host.on_start(start)
        host.on_stop(stop_all)
        host.on_close(manager.aclose)


def status_line(manager: SandboxManager) -> Callable[[str, object], Awaitable[str]]:
    """The chat's /status line: the sandbox is down (and why), running, or ready."""

    async def line(chat_id: str, session: object) -> str:
        state = manager.last_status
        if state is None:
            state = await manager.status()
        if not state[0]:
            if await image_being_built(manager) is not None:
                return msg.STATUS_SANDBOX_DOWN.format(
                    reason=msg.SANDBOX_PROBLEM_IMAGE_BUILDING.format(image=manager.settings.image))
            return msg.STATUS_SANDBOX_DOWN.format(reason=sandbox_problem(manager))
        if manager.has_container(chat_id):
            return msg.STATUS_SANDBOX_RUNNING
        return msg.STATUS_SANDBOX_OK

    return line


async def image_being_built(manager: SandboxManager) -> Path | None:
    """The build log while the missing image is being built in the background (the build
    holds its tag's lock: rumi/sandbox/build_job.py), else None."""
    from rumi.sandbox.build_job import BuildFiles, being_built
    from rumi.sandbox.errors import PROBLEM_IMAGE

    if manager.last_problem != PROBLEM_IMAGE:
        return None
    files = BuildFiles.of(manager.data_dir, manager.settings.image)
    return files.log if await asyncio.to_thread(being_built, files) else None


def file_saver(manager: SandboxManager) -> Callable[[str, str, str, bytes], Awaitable[str]]:
    """Save a received file into the chat's workspace, failures as `SaveFailed`."""
    from rumi.sandbox.errors import SandboxError, SandboxUnavailable
    from rumi.sandbox.tools import save_new_file

    async def save(chat_id: str, directory: str, name: str, data: bytes) -> str:
        try:
            return await save_new_file(manager, chat_id, directory, name, data)
        except SandboxUnavailable as exc:
            raise SaveFailed(str(exc), unavailable=True) from exc
        except SandboxError as exc:
            raise SaveFailed(str(exc)) from exc

    return save


def sandbox_problem(manager: SandboxManager) -> str:
    """Why the sandbox is down, in the chat's language (the English reason is in the log)."""
    from rumi.sandbox.errors import PROBLEM_DISABLED, PROBLEM_ENGINE, PROBLEM_IMAGE

    problem = manager.last_problem
    if problem == PROBLEM_ENGINE:
        return msg.SANDBOX_PROBLEM_ENGINE
    if problem == PROBLEM_IMAGE:
        return msg.SANDBOX_PROBLEM_IMAGE.format(image=manager.settings.image)
    if problem == PROBLEM_DISABLED:
        return msg.SANDBOX_PROBLEM_DISABLED
    return msg.SANDBOX_PROBLEM_UNKNOWN

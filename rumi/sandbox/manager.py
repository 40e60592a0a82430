"""One hardened container per chat: created on first use, reused, pruned when idle.

Every Docker call is blocking (docker-py), so each runs in `asyncio.to_thread`. A per-chat
lock serialises creation so concurrent calls never race to create the same container. Any
engine failure (socket gone, daemon stopped) becomes `SandboxUnavailable` with a friendly
message and flips the cached status, so the tools stop being offered to the model until a
later status check sees the engine again.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import hashlib
import json
import logging
import os
import shutil
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import requests
from docker.errors import APIError, DockerException, ImageNotFound, NotFound

import docker
from rumi import __version__
from rumi.base.chats import validate_chat_id
from rumi.config import SandboxSettings
from rumi.sandbox import diskimage, loopvolume, ownerlock
from rumi.sandbox.diskimage import DiskImageError
from rumi.sandbox.exec import (
    CannotFork,
    ContainerNotRunning,
    ContainerRemoved,
    ExecResult,
    run_in_container,
    wrap_command,
)
from rumi.sandbox.loopvolume import LoopVolumeError
from rumi.sandbox.policy import Identity, check_safe, container_options, parse_size

log = logging.getLogger(__name__)

ENGINE_ERRORS = (DockerException, requests.RequestException, OSError)
STATUS_TTL = 30.0  # seconds a cached status is trusted by `available()`

ClientFactory = Callable[[], docker.DockerClient]

# Why the sandbox is unavailable, as a kind the chat can phrase in its own language
# (`last_problem`); the English `reason` next to it is for logs, doctor and the CLI.
PROBLEM_DISABLED = "disabled"
PROBLEM_ENGINE = "engine"
PROBLEM_IMAGE = "image"

RESTARTED_NOTE = ("The sandbox could not start new processes (something had used up its process "
                  "limit), so it was restarted before running this command; files in /workspace "
                  "are kept, running programs were stopped.")


class SandboxError(Exception):
    """A sandbox failure phrased for the model/user (never a traceback)."""


class SandboxUnavailable(SandboxError):
    """The Docker engine (or the image) cannot be used right now."""


@dataclass(frozen=True)
class SandboxInfo:
    """One Rumi container as listed by `rumi sandbox ls`."""

    name: str
    chat_id: str
    status: str
    instance: str
    version: str
    created: str


class SandboxManager:
    """Owns the chats' containers on one Docker engine (see docs/sandbox.md)."""

    def __init__(
        self,
        settings: SandboxSettings,
        data_dir: Path,
        *,
        docker_client_factory: ClientFactory | None = None,
        clock: Callable[[], float] = time.monotonic,
        version: str = __version__,
    ) -> None:
        check_safe(settings)
        self.settings = settings
        self.data_dir = Path(data_dir).expanduser()
        self.instance = hashlib.sha256(str(self.data_dir.resolve()).encode()).hexdigest()[:12]
        self.version = version
        # this process's containers carry it: at start they are never an earlier run's orphans
        self.run_id = uuid.uuid4().hex[:12]
        self._factory = docker_client_factory or _default_factory(settings)
        self._clock = clock
        self._client: docker.DockerClient | None = None
        self._containers: dict[str, Any] = {}
        self._locks: dict[str, asyncio.Lock] = {}
        self._exec_locks: dict[str, asyncio.Lock] = {}
        self._last_used: dict[str, float] = {}
        self._busy: dict[str, int] = {}
        self._status: tuple[bool, str | None] | None = None
        self._problem: str | None = None
        self._orphans_pending = False
        self._orphan_lock = asyncio.Lock()
        self._checked_at = float("-inf")
        self._refresh: asyncio.Task[tuple[bool, str | None]] | None = None
        self._config_hash = _options_hash(settings)
        self._warned_no_quota = False
        self._limited_ok = True
        self.limit_problem: str | None = None  # why workspaces cannot be limited, for doctor
        self._owner_lock: int | None = None

    # ---------------------------------------------------------------- status

    async def start(self) -> tuple[bool, str | None]:
        """At start: check the engine and remove the containers a previous run left behind.

        If the engine is down now, the cleanup happens the first time a status check finds it
        up (before the tools are offered again), never later: by then live chats own containers.
        """
        self._orphans_pending = True
        if self._owner_lock is None:
            self._owner_lock = await asyncio.to_thread(ownerlock.take, self.data_dir)
        return await self.status()

    async def in_use_by_a_running_rumi(self) -> bool:
        """Whether a started Rumi (this process or another) owns this data dir's containers:
        if not, running ones are orphans of a killed process (`rumi sandbox prune`)."""
        return await asyncio.to_thread(ownerlock.held_elsewhere, self.data_dir)

    async def status(self) -> tuple[bool, str | None]:
        """(available, reason): the engine answers and the image exists. Cached for tools."""
        problem: str | None = None
        if not self.settings.enabled:
            result: tuple[bool, str | None] = (False, "sandbox disabled (sandbox.enabled = false)")
            problem = PROBLEM_DISABLED
        else:
            try:
                client = await self._get_client()
                await asyncio.to_thread(client.ping)
                await asyncio.to_thread(client.images.get, self.settings.image)
                if self._orphans_pending:
                    await self._remove_orphans(client, only_if_pending=True)
                result = (True, None)
            except ImageNotFound:
                result = (False, f"sandbox image {self.settings.image} not found "
                                 "(build it with `rumi sandbox build`)")
                problem = PROBLEM_IMAGE
            except ENGINE_ERRORS as exc:
                await self._drop_client()
                result = (False, f"Docker engine not reachable ({_short(exc)})")
                problem = PROBLEM_ENGINE
        self._set_status(result, problem)
        return result

    def available(self) -> bool:
        """Synchronous and cheap (used by Tool.available): the cached status, refreshed lazily."""
        if self._clock() - self._checked_at > STATUS_TTL:
            self._schedule_refresh()
        return bool(self._status and self._status[0])

    @property
    def last_status(self) -> tuple[bool, str | None] | None:
        return self._status

    def has_container(self, chat_id: str) -> bool:
        """This chat's container is running as far as this manager knows (for /status)."""
        return chat_id in self._containers

    @property
    def last_problem(self) -> str | None:
        """PROBLEM_ENGINE, PROBLEM_IMAGE or PROBLEM_DISABLED while unavailable, else None."""
        return None if self._status is None or self._status[0] else self._problem

    def _set_status(self, result: tuple[bool, str | None], problem: str | None = None) -> None:
        if self._status != result:
            log.info("sandbox status: %s", "available" if result[0] else result[1])
        self._status = result
        self._problem = None if result[0] else problem
        self._checked_at = self._clock()

    def _schedule_refresh(self) -> None:
        if self._refresh is not None and not self._refresh.done():
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        self._refresh = loop.create_task(self.status(), name="rumi-sandbox-status")

    async def aclose(self) -> None:
        """Cancel the background status check and close the Docker client."""
        if self._refresh is not None and not self._refresh.done():
            self._refresh.cancel()
            with contextlib.suppress(asyncio.CancelledError, *ENGINE_ERRORS):
                await self._refresh
        if self._client is not None:
            with contextlib.suppress(*ENGINE_ERRORS):
                await asyncio.to_thread(self._client.close)
            self._client = None
        ownerlock.release(self._owner_lock)
        self._owner_lock = None

    async def _get_client(self) -> docker.DockerClient:
        if self._client is None:
            self._client = await asyncio.to_thread(self._factory)
        return self._client

    async def _drop_client(self) -> None:
        """Forget the client after an engine failure; the next call builds a new one.

        Closing only drops pooled sockets, but it is a blocking call like any other SDK call,
        so it runs off the event loop.
        """
        old, self._client = self._client, None
        if old is not None:
            with contextlib.suppress(Exception):
                await asyncio.to_thread(old.close)

    async def _engine_down(self, exc: BaseException) -> SandboxUnavailable:
        log.warning("Docker engine failure: %s", _short(exc))
        await self._drop_client()
        self._containers.clear()
        self._set_status((False, f"Docker engine not reachable ({_short(exc)})"), PROBLEM_ENGINE)
        return SandboxUnavailable(
            "The sandbox is unavailable right now (the Docker engine does not answer); "
            "commands cannot run until it is back."
        )

    # ------------------------------------------------------------- lifecycle

    def identity(self, chat_id: str) -> Identity:
        return Identity(validate_chat_id(chat_id), self.instance, self.version)

    async def ensure(self, chat_id: str) -> Any:
        """The chat's running container, created (and its workspace volume) on first use."""
        if not self.settings.enabled:
            raise SandboxUnavailable("The sandbox is disabled in this Rumi's configuration.")
        ident = self.identity(chat_id)
        lock = self._locks.setdefault(chat_id, asyncio.Lock())
        async with lock:
            known = self._containers.get(chat_id)
            if known is not None:
                return known
            try:
                client = await self._get_client()
                if self._orphans_pending:  # never create while a cleanup could take it for one
                    await self._remove_orphans(client, only_if_pending=True)
                container = await asyncio.to_thread(self._ensure_sync, client, ident)
            except SandboxError:
                raise
            except ImageNotFound as exc:
                self._set_status((False, f"sandbox image {self.settings.image} not found"),
                                 PROBLEM_IMAGE)
                raise SandboxUnavailable(
                    f"The sandbox image {self.settings.image} is missing; the operator must run "
                    "`rumi sandbox build`."
                ) from exc
            except ENGINE_ERRORS as exc:
                raise await self._engine_down(exc) from exc
            self._containers[chat_id] = container
            self._set_status((True, None))
            return container

    def _ensure_sync(self, client: docker.DockerClient, ident: Identity) -> Any:
        try:
            container = client.containers.get(ident.container_name)
        except NotFound:
            container = None
        if container is not None:
            self._check_ours(container, ident)
            image_id = client.images.get(self.settings.image).id
            if (container.labels.get("rumi.config") != self._config_hash
                    or container.attrs.get("Image") != image_id):
                log.info("sandbox settings or image changed: recreating %s",
                         ident.container_name)
                container.remove(force=True)
                container = None
        if container is not None:
            if container.status != "running":
                container.start()
                container.reload()
            return container
        options = container_options(self.settings, ident, self._workspace_source(client, ident))
        options["labels"] = {**ident.labels, "rumi.config": self._config_hash,
                             "rumi.run": self.run_id}
        try:
            container = client.containers.create(**options)
        except APIError as exc:
            if exc.status_code != 409:
                raise
            container = client.containers.get(ident.container_name)
            self._check_ours(container, ident)
        if container.status != "running":
            container.start()
            container.reload()
        log.info("sandbox %s started", ident.container_name)
        return container

    def _is_ours(self, labels: dict[str, str] | None) -> bool:
        """Whether a container or volume was made by this installation: the one test used
        before anything is reused or removed, so a same-named resource of another Rumi (or of
        anything else) on a shared engine is never touched."""
        labels = labels or {}
        return labels.get("rumi.managed") == "1" and labels.get("rumi.instance") == self.instance

    def _check_ours(self, container: Any, ident: Identity) -> None:
        if not self._is_ours(container.labels):
            raise SandboxError(
                f"A container named {ident.container_name} already exists and was not created "
                "by this Rumi; the operator must remove or rename it."
            )

    def _workspace_source(self, client: docker.DockerClient, ident: Identity) -> str:
        mode = self.settings.workspace_mode
        if mode == "image":
            legacy = (self._our_volume(client, ident.volume_name)
                      or self._our_volume(client, ident.legacy_volume_name))
            legacy_dir = Path(legacy.attrs["Mountpoint"]) if legacy is not None else None
            try:
                with contextlib.ExitStack() as stack:
                    if legacy is not None and loopvolume.is_limited(legacy):
                        store = self._our_volume(client, loopvolume.store_name(legacy.name))
                        legacy_dir = None if store is None else stack.enter_context(
                            diskimage.mounted_readonly(
                                Path(store.attrs["Mountpoint"]) / "workspace.img",
                                self._chat_dir(ident) / "workspace.old"))
                    path = diskimage.ensure_mounted(
                        self._chat_dir(ident), parse_size(self.settings.workspace_size,
                                                          "workspace_size"),
                        self.settings.user, legacy_dir)
            except (DiskImageError, OSError) as exc:
                log.warning("workspace image of chat %s: %s", ident.chat_id, exc)
                raise SandboxError(
                    "This chat's workspace could not be mounted (the operator's log says why); "
                    "commands cannot run until it is fixed."
                ) from exc
            return str(path.resolve())
        if mode == "bind":
            path = self._chat_dir(ident) / "workspace"
            path.mkdir(parents=True, exist_ok=True)
            with contextlib.suppress(PermissionError):
                os.chown(path, 1000, 1000)
            return str(path.resolve())
        volume = self._existing_volume(client, ident.volume_name)
        if volume is None and (legacy := self._our_volume(client, ident.legacy_volume_name)):
            return str(legacy.name)  # an upgrade: the workspace keeps its pre-instance name
        if volume is not None and not loopvolume.is_limited(volume):
            log.warning("workspace of chat %s predates the size limit and keeps its files "
                        "without one; /reset with the workspace gives it a limited one",
                        ident.chat_id)
            return ident.volume_name
        if self._limited_ok:
            labels = {k: v for k, v in ident.labels.items() if k != "rumi.version"}
            try:
                return loopvolume.ensure(
                    client, self.settings.image, ident.volume_name, labels,
                    parse_size(self.settings.workspace_size, "workspace_size"),
                    self.settings.user)
            except LoopVolumeError as exc:
                self._limited_ok = False
                self.limit_problem = str(exc)
                log.warning("the workspace size limit cannot be set up here (%s); new "
                            "workspaces are plain volumes without a hard limit", exc)
        if volume is None:
            labels = {k: v for k, v in ident.labels.items() if k != "rumi.version"}
            try:  # a hard cap needs the local driver on xfs with pquota; most hosts lack it
                client.volumes.create(ident.volume_name, labels=labels,
                                      driver_opts={"size": self.settings.workspace_size})
            except APIError as exc:
                if "quota" not in str(exc).lower():
                    raise
                if not self._warned_no_quota:
                    log.info("Docker cannot cap volume sizes here (%s); /workspace is limited "
                             "by the write_file quota and the fsize ulimit (workspace_mode = "
                             "\"image\" is a hard cap)", _short(exc))
                    self._warned_no_quota = True
                client.volumes.create(ident.volume_name, labels=labels)
        return ident.volume_name

    def _chat_dir(self, ident: Identity) -> Path:
        return self.data_dir / "chats" / ident.chat_id

    def _existing_volume(self, client: docker.DockerClient, name: str) -> Any:
        """The named volume if it exists and is ours; a foreign one with our name is refused."""
        try:
            volume = client.volumes.get(name)
        except NotFound:
            return None
        if not self._is_ours(volume.attrs.get("Labels")):
            raise SandboxError(
                f"A volume named {name} already exists and was not created by this Rumi; this "
                "chat's sandbox will not use it. The operator must remove or rename it."
            )
        return volume

    def _our_volume(self, client: docker.DockerClient, name: str) -> Any:
        """The named volume only if this installation made it (never raises for foreign ones)."""
        try:
            volume = client.volumes.get(name)
        except NotFound:
            return None
        return volume if self._is_ours(volume.attrs.get("Labels")) else None

    async def remove(
        self, chat_id: str, *, workspace: bool = False, only_if_idle: bool = False
    ) -> bool:
        """Remove the chat's container (the /reset and session-expiry path).

        The workspace survives unless `workspace=True`. Returns whether a container was
        removed. `only_if_idle` (the prune job) re-checks, under the chat's lock, that no
        command is running and none ran within idle_prune_minutes: the prune decided from a
        snapshot, and removing a container mid-command loses that command's result.
        """
        ident = self.identity(chat_id)
        lock = self._locks.setdefault(chat_id, asyncio.Lock())
        async with lock:
            if only_if_idle and not self._is_idle(chat_id):
                return False
            self._containers.pop(chat_id, None)
            self._last_used.pop(chat_id, None)
            try:
                client = await self._get_client()
                return await asyncio.to_thread(self._remove_sync, client, ident, workspace)
            except SandboxError:
                raise
            except ENGINE_ERRORS as exc:
                raise await self._engine_down(exc) from exc

    def _remove_sync(self, client: docker.DockerClient, ident: Identity, workspace: bool) -> bool:
        removed = False
        try:
            container = client.containers.get(ident.container_name)
        except NotFound:
            container = None
        if container is not None and self._is_ours(container.labels):
            container.remove(force=True)
            removed = True
            log.info("sandbox %s removed", ident.container_name)
        if workspace:
            mode = self.settings.workspace_mode
            if mode == "image":
                try:
                    diskimage.destroy(self._chat_dir(ident))
                except DiskImageError as exc:
                    raise SandboxError(f"The workspace could not be removed: {exc}") from exc
            elif mode == "bind":
                shutil.rmtree(self._chat_dir(ident) / "workspace", ignore_errors=True)
            if mode != "bind":  # a limited volume, or one image mode copied from
                labels = {k: v for k, v in ident.labels.items() if k != "rumi.version"}
                try:
                    loopvolume.destroy(client, self.settings.image, ident.volume_name, labels)
                except LoopVolumeError as exc:
                    raise SandboxError(f"The workspace could not be removed: {exc}") from exc
            if mode != "bind":  # image mode copied, never removed, an old volume: drop it now
                for name in (ident.volume_name, ident.legacy_volume_name):
                    volume = self._our_volume(client, name)
                    if volume is not None:
                        volume.remove(force=True)
        return removed

    async def prune_idle(self) -> list[str]:
        """Remove containers of chats idle longer than sandbox.idle_prune_minutes."""
        idle = [chat for chat in list(self._last_used) if self._is_idle(chat)]
        pruned = []
        for chat in idle:
            if await self.remove(chat, only_if_idle=True):
                pruned.append(chat)
        return pruned

    def _is_idle(self, chat_id: str) -> bool:
        """No command running in the chat and none for longer than idle_prune_minutes."""
        used = self._last_used.get(chat_id)
        if used is None or self._busy.get(chat_id):
            return False
        return self._clock() - used > self.settings.idle_prune_minutes * 60

    async def cleanup_orphans(self) -> list[str]:
        """Remove containers a previous run of *this* Rumi left behind (`start` calls this).

        Only containers labelled rumi.managed=1 and rumi.instance=<this data_dir> are touched,
        and none that a chat of this process is using; workspaces (volumes) are kept. Returns
        the removed container names.
        """
        try:
            client = await self._get_client()
            return await self._remove_orphans(client, only_if_pending=False)
        except ENGINE_ERRORS as exc:
            raise await self._engine_down(exc) from exc

    async def remove_all(self) -> list[str]:
        """Remove every container of this Rumi, keeping the workspaces (`rumi run`/`rumi chat`
        call it as they exit, Ctrl-C and SIGTERM included): a container left running after its
        Rumi stopped holds memory and processes nobody can reach. An engine that is down
        is logged, not raised, so shutdown goes on."""
        if not self.settings.enabled:
            return []
        try:
            client = await self._get_client()
            async with self._orphan_lock:
                removed = await asyncio.to_thread(self._cleanup_sync, client, frozenset(),
                                                  keep_this_run=False)
        except ENGINE_ERRORS as exc:
            log.warning("could not stop this Rumi's sandboxes: %s", _short(exc))
            return []
        self._containers.clear()
        self._last_used.clear()
        return removed

    async def list_workspaces(self) -> list[str]:
        """Names of this Rumi's workspace volumes (volume mode), in use or not."""
        filters = {"label": ["rumi.managed=1", f"rumi.instance={self.instance}"]}
        try:
            client = await self._get_client()
            volumes = await asyncio.to_thread(client.volumes.list, filters=filters)
        except ENGINE_ERRORS as exc:
            raise await self._engine_down(exc) from exc
        return sorted(str(v.name) for v in volumes if self._is_ours(v.attrs.get("Labels"))
                      and "rumi.role" not in (v.attrs.get("Labels") or {}))

    async def remove_workspace_volume(self, name: str) -> bool:
        """Delete one of this Rumi's workspace volumes (its files are lost); False when it is
        gone, foreign or still mounted by a container."""
        try:
            client = await self._get_client()
            volume = await asyncio.to_thread(self._our_volume, client, name)
            if volume is None:
                return False
            await asyncio.to_thread(volume.remove, force=False)
            if loopvolume.is_limited(volume):  # its files live in the image: drop that too
                labels = {"rumi.managed": "1", "rumi.instance": self.instance}
                await asyncio.to_thread(loopvolume.destroy, client, self.settings.image,
                                        name, labels)
        except LoopVolumeError as exc:
            log.warning("workspace volume %s removed but not its image: %s", name, exc)
        except APIError as exc:
            log.info("workspace volume %s not removed: %s", name, _short(exc))
            return False
        except ENGINE_ERRORS as exc:
            raise await self._engine_down(exc) from exc
        return True

    async def _remove_orphans(self, client: docker.DockerClient, *,
                              only_if_pending: bool) -> list[str]:
        """One cleanup at a time; the live set is read here, on the event loop, not in the
        worker thread while chats change it."""
        async with self._orphan_lock:
            if only_if_pending and not self._orphans_pending:
                return []
            live = frozenset(c.id for c in self._containers.values())
            removed = await asyncio.to_thread(self._cleanup_sync, client, live,
                                              keep_this_run=True)
            self._orphans_pending = False
        if removed:
            log.info("removed %d orphaned sandbox container(s) left by an earlier run",
                     len(removed))
        return removed

    def _cleanup_sync(self, client: docker.DockerClient, live: frozenset[str], *,
                      keep_this_run: bool) -> list[str]:
        """Remove this instance's containers but the `live` ones (and, for an orphan cleanup,
        this process's own); the caller says in the log why they went."""
        filters = {"label": ["rumi.managed=1", f"rumi.instance={self.instance}"]}
        removed = []
        for container in client.containers.list(all=True, filters=filters):
            if container.id in live or not self._is_ours(container.labels):
                continue  # a chat of this process already uses it
            if keep_this_run and container.labels.get("rumi.run") == self.run_id:
                continue
            try:
                container.remove(force=True)
            except APIError as exc:  # gone already, or being removed: not an engine failure
                log.info("could not remove sandbox %s: %s", container.name, _short(exc))
                continue
            removed.append(container.name)
        return removed

    async def list_sandboxes(self, *, all_instances: bool = False) -> list[SandboxInfo]:
        """Rumi's containers on this engine (this instance's, or every Rumi's)."""
        labels = ["rumi.managed=1"]
        if not all_instances:
            labels.append(f"rumi.instance={self.instance}")
        try:
            client = await self._get_client()
            found = await asyncio.to_thread(
                client.containers.list, all=True, filters={"label": labels}
            )
        except ENGINE_ERRORS as exc:
            raise await self._engine_down(exc) from exc
        return [_info(c) for c in found]

    # ------------------------------------------------------------------ exec

    async def exec(
        self, chat_id: str, command: str, timeout: float | None = None  # noqa: ASYNC109
    ) -> ExecResult:
        """Run a shell command line in the chat's container (bash -c, or sh -c).

        `timeout` (default sandbox.exec_timeout) is enforced inside the container and by a
        host-side sweep, so the processes really die; it is not an await timeout.
        """
        seconds = timeout if timeout is not None else self.settings.exec_timeout
        return await self.exec_argv(chat_id, wrap_command(command, seconds), seconds)

    async def exec_argv(
        self, chat_id: str, argv: list[str], timeout: float  # noqa: ASYNC109
    ) -> ExecResult:
        """Run an argv (no shell) in the chat's container with the same timeout guarantees.

        One command at a time per chat: when a command ends, every process left in the
        container is killed, which would take a concurrent command with it.
        """
        self._busy[chat_id] = self._busy.get(chat_id, 0) + 1
        self._last_used[chat_id] = self._clock()
        try:
            async with self._exec_locks.setdefault(chat_id, asyncio.Lock()):
                return await self._exec_once(chat_id, argv, timeout)
        finally:
            self._busy[chat_id] -= 1
            self._last_used[chat_id] = self._clock()

    async def _exec_once(self, chat_id: str, argv: list[str], timeout: float) -> ExecResult:  # noqa: ASYNC109
        note = ""
        for attempt in (1, 2, 3):
            container = await self.ensure(chat_id)
            try:
                result = await asyncio.to_thread(
                    run_in_container, container, argv, timeout,
                    user=self.settings.user, limit=self.settings.output_max_chars,
                )
            except ContainerNotRunning as exc:  # nothing ran: recreate and retry once
                self._containers.pop(chat_id, None)
                if attempt >= 2:
                    raise SandboxError("The sandbox container stopped; try again.") from exc
                continue
            except CannotFork as exc:  # nothing ran: the pids limit is used up
                if note or attempt >= 3:
                    raise SandboxError(
                        "The sandbox cannot start new processes even after a restart."
                    ) from exc
                log.warning("sandbox of chat %s cannot fork; recreating it", chat_id)
                await self.remove(chat_id)
                note = RESTARTED_NOTE
                continue
            except (ContainerRemoved, NotFound) as exc:
                self._containers.pop(chat_id, None)
                raise SandboxError(
                    "The sandbox container was stopped or removed while the command ran, "
                    "so its result is lost; it was not run again (files in /workspace are "
                    "kept). Check what it did before running it again."
                ) from exc
            except ENGINE_ERRORS as exc:
                raise await self._engine_down(exc) from exc
            if result.container_killed:
                self._containers.pop(chat_id, None)
            return dataclasses.replace(result, note=note) if note else result
        raise AssertionError("unreachable")

    async def put_archive(self, chat_id: str, directory: str, data: bytes) -> None:
        """Extract a tar into the container (used by write_file; runs as the daemon)."""
        self._last_used[chat_id] = self._clock()
        container = await self.ensure(chat_id)
        try:
            ok = await asyncio.to_thread(container.put_archive, directory, data)
        except NotFound as exc:
            raise SandboxError(f"Directory {directory} does not exist in the sandbox.") from exc
        except APIError as exc:
            raise SandboxError(f"Could not write into the sandbox: {exc.explanation}") from exc
        except ENGINE_ERRORS as exc:
            raise await self._engine_down(exc) from exc
        if not ok:
            raise SandboxError("Could not write into the sandbox.")


def _options_hash(settings: SandboxSettings) -> str:
    """Settings that shape the container; a change means the container is recreated."""
    relevant = settings.model_dump(exclude={"exec_timeout", "idle_prune_minutes",
                                            "output_max_chars", "enabled"})
    return hashlib.sha256(json.dumps(relevant, sort_keys=True).encode()).hexdigest()[:16]


def _default_factory(settings: SandboxSettings) -> ClientFactory:
    def factory() -> docker.DockerClient:
        return docker.from_env(timeout=int(max(60, settings.exec_timeout + 30)))

    return factory


def _info(container: Any) -> SandboxInfo:
    labels = container.labels
    return SandboxInfo(
        name=container.name,
        chat_id=labels.get("rumi.chat", "?"),
        status=container.status,
        instance=labels.get("rumi.instance", "?"),
        version=labels.get("rumi.version", "?"),
        created=str(container.attrs.get("Created", ""))[:19],
    )


def _short(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return text[:160]


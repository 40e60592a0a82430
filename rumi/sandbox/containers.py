"""The chats' containers on the engine: create or reuse one, remove one, sweep this
installation's leftovers, list them. Blocking docker-py calls: run them in a worker thread.

A container is reused only while it was made from the same image and the same settings (its
`rumi.config` label); anything else is recreated. One not labelled as ours is never touched.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from docker.errors import APIError, NotFound

import docker
from rumi.config import SandboxSettings
from rumi.sandbox.errors import SandboxError, short
from rumi.sandbox.policy import Identity, container_options

log = logging.getLogger(__name__)

# removals side by side: within the docker client's pool of 10 connections
REMOVE_WORKERS = 8

IsOurs = Callable[["dict[str, str] | None"], bool]


@dataclass(frozen=True)
class SandboxInfo:
    """One Rumi container as listed by `rumi sandbox ls`."""

    name: str
    chat_id: str
    status: str
    instance: str
    version: str
    created: str


@dataclass(frozen=True)
class Blueprint:
    """What a chat's container is made from, the same for every chat of one manager."""

    settings: SandboxSettings
    config_hash: str
    run_id: str
    is_ours: IsOurs


def options_hash(settings: SandboxSettings) -> str:
    """Settings that shape the container; a change means the container is recreated."""
    relevant = settings.model_dump(exclude={"exec_timeout", "idle_prune_minutes",
                                            "stop_wait_seconds", "output_max_chars",
                                            "enabled"})
    return hashlib.sha256(json.dumps(relevant, sort_keys=True).encode()).hexdigest()[:16]


def ensure(client: docker.DockerClient, ident: Identity, plan: Blueprint,
           workspace: Callable[[], str]) -> Any:
    """The chat's running container; `workspace()` gives the /workspace source when one is
    created."""
    try:
        container = client.containers.get(ident.container_name)
    except NotFound:
        container = None
    if container is not None:
        _check_ours(container, ident, plan.is_ours)
        image_id = client.images.get(plan.settings.image).id
        if (container.labels.get("rumi.config") != plan.config_hash
                or container.attrs.get("Image") != image_id):
            log.info("sandbox settings or image changed: recreating %s", ident.container_name)
            container.remove(force=True)
            container = None
    if container is not None:
        _running(container)
        return container
    options = container_options(plan.settings, ident, workspace())
    options["labels"] = {**ident.labels, "rumi.config": plan.config_hash,
                         "rumi.run": plan.run_id}
    try:
        container = client.containers.create(**options)
    except APIError as exc:
        if exc.status_code != 409:
            raise
        container = client.containers.get(ident.container_name)
        _check_ours(container, ident, plan.is_ours)
    _running(container)
    log.info("sandbox %s started", ident.container_name)
    return container


def _running(container: Any) -> None:
    if container.status != "running":
        container.start()
        container.reload()


def _check_ours(container: Any, ident: Identity, is_ours: IsOurs) -> None:
    if not is_ours(container.labels):
        raise SandboxError(
            f"A container named {ident.container_name} already exists and was not created "
            "by this Rumi; the operator must remove or rename it."
        )


def remove(client: docker.DockerClient, ident: Identity, is_ours: IsOurs) -> bool:
    """Remove the chat's container if it is ours; whether one was removed."""
    try:
        container = client.containers.get(ident.container_name)
    except NotFound:
        return False
    if not is_ours(container.labels):
        return False
    container.remove(force=True)
    log.info("sandbox %s removed", ident.container_name)
    return True


@dataclass(frozen=True)
class Listed:
    """A container as the engine's list returns it: no inspect per container, so listing 200
    costs one call, and one removed meanwhile (by a stop's removals still under way) cannot
    make the listing fail."""

    id: str
    name: str
    labels: dict[str, str]
    api: Any

    def remove(self, force: bool = False) -> None:
        self.api.remove_container(self.id, force=force)


def leftovers(client: docker.DockerClient, instance: str, is_ours: IsOurs,
              live: frozenset[str], keep_run: str | None,
              only_run: str | None = None) -> list[Listed]:
    """This instance's containers but the `live` ones (and, when `keep_run` is given, that
    run's own; when `only_run` is, every other run's)."""
    labels = ["rumi.managed=1", f"rumi.instance={instance}"]
    if only_run is not None:
        labels.append(f"rumi.run={only_run}")
    found = []
    for row in client.api.containers(all=True, filters={"label": labels}):
        theirs = row.get("Labels") or {}
        if row["Id"] in live or not is_ours(theirs):
            continue  # a chat of this process already uses it
        if keep_run is not None and theirs.get("rumi.run") == keep_run:
            continue
        names = row.get("Names") or [row["Id"][:12]]
        found.append(Listed(row["Id"], names[0].lstrip("/"), theirs, client.api))
    return found


class Removal:
    """Containers removed by a few daemon threads at once.

    Why threads of its own: one removal costs the engine a few hundred milliseconds (kill,
    wait, unmount, cgroup), so 200 one after another took 31 s, past any supervisor's stop
    timeout; side by side they overlap. Daemon threads, so a stop that stops waiting (see
    `wait`) is never held at interpreter exit by removals still in flight: what they did not
    finish is an orphan the next start sweeps.
    """

    def __init__(self, targets: list[Any], workers: int = REMOVE_WORKERS) -> None:
        self.removed: list[str] = []
        self._pending = list(targets)
        self._left = len(self._pending)
        self._lock = threading.Lock()
        self._done = threading.Event()
        if not self._pending:
            self._done.set()
        for n in range(min(workers, len(self._pending))):
            threading.Thread(target=self._work, name=f"rumi-sandbox-rm-{n}",
                             daemon=True).start()

    def _work(self) -> None:
        while True:
            with self._lock:
                if not self._pending:
                    return
                container = self._pending.pop()
            try:
                container.remove(force=True)
            except Exception as exc:  # gone already, being removed, or the client closed
                log.info("could not remove sandbox %s: %s", container.name, short(exc))
            else:
                with self._lock:
                    self.removed.append(container.name)
            with self._lock:
                self._left -= 1
                if self._left == 0:
                    self._done.set()

    def wait(self, timeout: float | None) -> bool:  # noqa: ASYNC109
        """Block until every removal ended (True) or `timeout` seconds passed (False)."""
        return self._done.wait(timeout)

    def done(self) -> list[str]:
        """Names of the containers removed so far."""
        with self._lock:
            return list(self.removed)


def info(container: Any) -> SandboxInfo:
    labels = container.labels
    return SandboxInfo(
        name=container.name,
        chat_id=labels.get("rumi.chat", "?"),
        status=container.status,
        instance=labels.get("rumi.instance", "?"),
        version=labels.get("rumi.version", "?"),
        created=str(container.attrs.get("Created", ""))[:19],
    )

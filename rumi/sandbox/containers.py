"""The chats' containers on the engine: create or reuse one, remove one, sweep this
installation's leftovers, list them. Blocking docker-py calls: run them in a worker thread.

A container is reused only while it was made from the same image and the same settings (its
`rumi.config` label); anything else is recreated. One not labelled as ours is never touched.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from docker.errors import APIError, NotFound

import docker
from rumi.config import SandboxSettings
from rumi.sandbox.errors import SandboxError, short
from rumi.sandbox.policy import Identity, container_options

log = logging.getLogger(__name__)

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
                                            "output_max_chars", "enabled"})
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


def sweep(client: docker.DockerClient, instance: str, is_ours: IsOurs, live: frozenset[str],
          keep_run: str | None, only_run: str | None = None) -> list[str]:
    """Remove this instance's containers but the `live` ones (and, when `keep_run` is given,
    that run's own; when `only_run` is, every other run's); the caller says in the log why
    they went."""
    labels = ["rumi.managed=1", f"rumi.instance={instance}"]
    if only_run is not None:
        labels.append(f"rumi.run={only_run}")
    filters = {"label": labels}
    removed = []
    for container in client.containers.list(all=True, filters=filters):
        if container.id in live or not is_ours(container.labels):
            continue  # a chat of this process already uses it
        if keep_run is not None and container.labels.get("rumi.run") == keep_run:
            continue
        try:
            container.remove(force=True)
        except APIError as exc:  # gone already, or being removed: not an engine failure
            log.info("could not remove sandbox %s: %s", container.name, short(exc))
            continue
        removed.append(container.name)
    return removed


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

"""Sandbox fixtures: real Docker engine, unique chat ids, teardown by their chat label."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import pytest
from docker.errors import NotFound

import docker
from rumi.config import SandboxSettings
from rumi.sandbox import loopvolume
from rumi.sandbox.manager import SandboxManager
from tests.conftest import SANDBOX_TEST_IMAGE

pytestmark = pytest.mark.docker


class FakeClock:
    """Monotonic time the test moves by hand (idle prune without sleeping)."""

    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def docker_client(docker_engine: None) -> Iterator[docker.DockerClient]:
    client = docker.from_env()
    try:
        yield client
    finally:
        client.close()


@pytest.fixture
def chat_ids(docker_client: docker.DockerClient) -> Iterator[Callable[[], str]]:
    """Unique chat ids for this test; their containers and volumes are removed afterwards."""
    prefix = f"t{uuid.uuid4().hex[:10]}"
    made: list[str] = []

    def new() -> str:
        chat = f"{prefix}_{len(made)}"
        made.append(chat)
        return chat

    yield new
    for chat in made:  # by this test's unique chat label, whichever instance made them
        for container in docker_client.containers.list(
                all=True, filters={"label": f"rumi.chat={chat}"}):
            with contextlib.suppress(NotFound):
                container.remove(force=True)
        loopvolume.remove_volumes(docker_client, SANDBOX_TEST_IMAGE, docker_client.volumes.list(
            filters={"label": f"rumi.chat={chat}"}))


@pytest.fixture
def sandbox_settings() -> Callable[..., SandboxSettings]:
    def make(**overrides: object) -> SandboxSettings:
        values: dict[str, object] = {"image": SANDBOX_TEST_IMAGE, "exec_timeout": 10.0}
        values.update(overrides)
        return SandboxSettings(**values)

    return make


@pytest.fixture
async def make_manager(
    data_dir: Path, sandbox_settings: Callable[..., SandboxSettings], docker_engine: None
) -> AsyncIterator[Callable[..., SandboxManager]]:
    managers: list[SandboxManager] = []

    def make(**kwargs: object) -> SandboxManager:
        settings = kwargs.pop("settings", None) or sandbox_settings()
        manager = SandboxManager(settings, kwargs.pop("data_dir", data_dir), **kwargs)
        managers.append(manager)
        return manager

    yield make
    for manager in managers:
        await manager.aclose()


@pytest.fixture
async def manager(make_manager: Callable[..., SandboxManager]) -> SandboxManager:
    return make_manager()


def image_without_mkfs(client: docker.DockerClient) -> contextlib.AbstractContextManager[str]:
    """The sandbox test image with mkfs.ext4 removed: a host where the workspace helper cannot
    format an image (docs/sandbox.md, 'Where it cannot work')."""
    return image_without(client, "/usr/sbin/mkfs.ext4 /sbin/mkfs.ext4 /usr/sbin/mke2fs "
                                 "/sbin/mke2fs")


@contextlib.contextmanager
def image_without(client: docker.DockerClient, paths: str) -> Iterator[str]:
    """The sandbox test image with `paths` removed, labelled for this run, removed after."""
    import io

    run = uuid.uuid4().hex[:10]
    tag = f"rumi-sandbox-without:{run}"
    dockerfile = f"FROM {SANDBOX_TEST_IMAGE}\nUSER 0\nRUN rm -f {paths}\n"
    client.images.build(fileobj=io.BytesIO(dockerfile.encode()), tag=tag, rm=True,
                        labels={"rumi.test": run})
    try:
        yield tag
    finally:
        with contextlib.suppress(NotFound):
            client.images.remove(tag, force=True)

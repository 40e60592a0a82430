"""Container lifecycle: /reset removal, idle prune, orphan cleanup that spares foreign ones,
and resources of another Rumi (same names, other labels) never used or removed."""

from __future__ import annotations

import asyncio
import contextlib

import pytest
from docker.errors import NotFound

import docker
from rumi.sandbox.manager import SandboxError, SandboxUnavailable
from tests.conftest import SANDBOX_TEST_IMAGE
from tests.sandbox.conftest import FakeClock

pytestmark = pytest.mark.docker


def _exists(client, kind: str, name: str) -> bool:
    try:
        getattr(client, kind).get(name)
    except NotFound:
        return False
    return True


async def test_remove_deletes_container_and_keeps_workspace(manager, chat_ids, docker_client):
    chat = chat_ids()
    await manager.exec(chat, "echo before-reset > f")
    assert await manager.remove(chat)
    assert not _exists(docker_client, "containers", f"rumi-sbx-{chat}")
    assert _exists(docker_client, "volumes", f"rumi-ws-{chat}")
    assert not await manager.remove(chat)  # idempotent

    assert (await manager.exec(chat, "cat f")).stdout == "before-reset\n"
    assert await manager.remove(chat, workspace=True)
    assert not _exists(docker_client, "volumes", f"rumi-ws-{chat}")
    assert (await manager.exec(chat, "ls -A")).stdout == ""


async def test_idle_prune_removes_only_idle_chats(make_manager, sandbox_settings, chat_ids,
                                                 docker_client):
    clock = FakeClock()
    manager = make_manager(settings=sandbox_settings(idle_prune_minutes=10), clock=clock)
    idle, active = chat_ids(), chat_ids()
    await manager.exec(idle, "true")
    clock.advance(9 * 60)
    await manager.exec(active, "true")
    assert await manager.prune_idle() == []
    clock.advance(2 * 60)
    assert await manager.prune_idle() == [idle]
    assert not _exists(docker_client, "containers", f"rumi-sbx-{idle}")
    assert _exists(docker_client, "containers", f"rumi-sbx-{active}")
    assert (await manager.exec(idle, "echo back")).stdout == "back\n"  # recreated on use


async def test_cleanup_orphans_spares_foreign_containers(make_manager, data_dir, tmp_path,
                                                        chat_ids, docker_client):
    previous_run = make_manager()
    orphan = chat_ids()
    await previous_run.exec(orphan, "true")
    other_rumi = make_manager(data_dir=tmp_path / "other-instance")
    theirs = chat_ids()
    await other_rumi.exec(theirs, "true")
    foreign = []
    try:
        for labels in ({"app": "not-rumi"}, {"rumi.chat": "x"},
                       {"rumi.managed": "1", "rumi.instance": "someone-else"}):
            foreign.append(docker_client.containers.create(
                SANDBOX_TEST_IMAGE, ["sleep", "60"], labels=labels, network_mode="none"))

        restarted = make_manager(data_dir=data_dir)
        removed = await restarted.cleanup_orphans()

        assert removed == [f"rumi-sbx-{orphan}"]
        assert not _exists(docker_client, "containers", f"rumi-sbx-{orphan}")
        assert _exists(docker_client, "volumes", f"rumi-ws-{orphan}")  # workspace kept
        assert _exists(docker_client, "containers", f"rumi-sbx-{theirs}")
        for container in foreign:
            assert _exists(docker_client, "containers", container.id)
    finally:
        for container in foreign:
            with contextlib.suppress(NotFound):
                container.remove(force=True)


async def test_foreign_container_with_our_name_is_not_touched(manager, chat_ids, docker_client):
    chat = chat_ids()
    squatter = docker_client.containers.create(
        SANDBOX_TEST_IMAGE, ["sleep", "60"], name=f"rumi-sbx-{chat}", network_mode="none")
    try:
        with pytest.raises(Exception, match="not created by this Rumi"):
            await manager.exec(chat, "true")
        assert not await manager.remove(chat)
        assert _exists(docker_client, "containers", squatter.id)
    finally:
        squatter.remove(force=True)


async def test_list_sandboxes(manager, chat_ids):
    chat = chat_ids()
    await manager.exec(chat, "true")
    infos = await manager.list_sandboxes()
    assert [(i.chat_id, i.status) for i in infos] == [(chat, "running")]


async def test_bind_mode_workspace_lives_under_the_chat_dir(make_manager, sandbox_settings,
                                                           chat_ids, data_dir, docker_client):
    manager = make_manager(settings=sandbox_settings(workspace_mode="bind"))
    chat = chat_ids()
    assert (await manager.exec(chat, "echo on-host > f && id -u")).stdout == "1000\n"
    host_dir = data_dir / "chats" / chat / "workspace"
    assert (host_dir / "f").read_text() == "on-host\n"
    mounts = docker_client.containers.get(f"rumi-sbx-{chat}").attrs["Mounts"]
    assert [(m["Type"], m["Source"]) for m in mounts] == [("bind", str(host_dir.resolve()))]
    assert await manager.remove(chat, workspace=True)
    assert not host_dir.exists()


async def test_workspace_volume_of_another_rumi_is_refused(make_manager, data_dir, tmp_path,
                                                           chat_ids, docker_client):
    """Chat ids repeat across installs (`terminal` always): a second Rumi on the same engine
    must not mount the first one's workspace and read its files."""
    chat = chat_ids()
    other_rumi = make_manager(data_dir=tmp_path / "other-instance")
    await other_rumi.exec(chat, "echo their-secret > secret.txt")
    await other_rumi.remove(chat)  # its container goes, its workspace volume stays
    mine = make_manager(data_dir=data_dir)
    with pytest.raises(SandboxError, match="belongs to another Rumi"):
        await mine.exec(chat, "cat secret.txt")
    assert not _exists(docker_client, "containers", f"rumi-sbx-{chat}")
    assert not await mine.remove(chat, workspace=True)
    assert _exists(docker_client, "volumes", f"rumi-ws-{chat}")  # never deleted by us
    assert (await other_rumi.exec(chat, "cat secret.txt")).stdout == "their-secret\n"


async def test_unlabelled_volume_with_our_name_is_refused(manager, chat_ids, docker_client):
    chat = chat_ids()
    squatter = docker_client.volumes.create(f"rumi-ws-{chat}")
    try:
        with pytest.raises(SandboxError, match="not created by Rumi"):
            await manager.exec(chat, "true")
        assert not await manager.remove(chat, workspace=True)
        assert _exists(docker_client, "volumes", squatter.name)
    finally:
        squatter.remove(force=True)


async def test_removal_needs_both_managed_and_instance_labels(manager, chat_ids, docker_client):
    """Our instance label alone (copied, or set by hand) is not proof a resource is ours."""
    chat = chat_ids()
    half = {"rumi.instance": manager.instance, "rumi.chat": chat}
    volume = docker_client.volumes.create(f"rumi-ws-{chat}", labels=half)
    container = docker_client.containers.create(
        SANDBOX_TEST_IMAGE, ["sleep", "60"], name=f"rumi-sbx-{chat}", labels=half,
        network_mode="none")
    try:
        assert not await manager.remove(chat, workspace=True)
        assert _exists(docker_client, "containers", container.id)
        assert _exists(docker_client, "volumes", volume.name)
    finally:
        container.remove(force=True)
        volume.remove(force=True)


async def test_orphans_are_cleaned_when_the_engine_first_answers(
    make_manager, data_dir, chat_ids, docker_client, docker_relay
):
    """Docker down when Rumi starts: the previous run's containers go as soon as the engine is
    back — once, so containers of chats that are live by a later outage are kept."""
    previous_run = make_manager()
    orphan = chat_ids()
    await previous_run.exec(orphan, "true")
    await previous_run.aclose()

    await docker_relay.stop()
    restarted = make_manager(data_dir=data_dir, docker_client_factory=lambda: docker.DockerClient(
        base_url=f"unix://{docker_relay.path}", timeout=10))
    available, _ = await restarted.start()
    assert not available
    assert _exists(docker_client, "containers", f"rumi-sbx-{orphan}")

    await docker_relay.start()
    assert await restarted.status() == (True, None)
    assert not _exists(docker_client, "containers", f"rumi-sbx-{orphan}")
    assert _exists(docker_client, "volumes", f"rumi-ws-{orphan}")  # the workspace is kept

    live = chat_ids()
    await restarted.exec(live, "true")
    await docker_relay.stop()  # a later outage…
    with pytest.raises(SandboxUnavailable):
        await restarted.exec(live, "true")
    await docker_relay.start()  # …and recovery: no second cleanup
    assert await restarted.status() == (True, None)
    assert _exists(docker_client, "containers", f"rumi-sbx-{live}")


async def test_prune_rechecks_idleness_under_the_lock(make_manager, sandbox_settings, chat_ids):
    """The prune job decides from a snapshot; a chat that started a command since then keeps
    its container (removing it would lose the command's result)."""
    clock = FakeClock()
    manager = make_manager(settings=sandbox_settings(idle_prune_minutes=10), clock=clock)
    chat = chat_ids()
    await manager.exec(chat, "true")
    clock.advance(11 * 60)
    running = asyncio.create_task(manager.exec(chat, "sleep 2; echo finished"))
    await asyncio.sleep(0.5)  # the command is running: the chat is busy
    assert not await manager.remove(chat, only_if_idle=True)
    assert (await running).stdout == "finished\n"
    clock.advance(11 * 60)
    assert await manager.remove(chat, only_if_idle=True)

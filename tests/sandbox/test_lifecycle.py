"""Container lifecycle: /reset removal, idle prune, orphan cleanup that spares foreign ones,
and resources of another Rumi (same names, other labels) never used or removed."""

from __future__ import annotations

import asyncio
import contextlib

import pytest
from docker.errors import NotFound

import docker
from rumi.sandbox.errors import SandboxError, SandboxUnavailable
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
    assert not _exists(docker_client, "containers", manager.identity(chat).container_name)
    assert _exists(docker_client, "volumes", manager.identity(chat).volume_name)
    assert not await manager.remove(chat)  # idempotent

    assert (await manager.exec(chat, "cat f")).stdout == "before-reset\n"
    assert await manager.remove(chat, workspace=True)
    assert not _exists(docker_client, "volumes", manager.identity(chat).volume_name)
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
    assert not _exists(docker_client, "containers", manager.identity(idle).container_name)
    assert _exists(docker_client, "containers", manager.identity(active).container_name)
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

        gone = previous_run.identity(orphan).container_name
        assert removed == [gone]
        assert not _exists(docker_client, "containers", gone)
        # the workspace is kept
        assert _exists(docker_client, "volumes", previous_run.identity(orphan).volume_name)
        assert _exists(docker_client, "containers", other_rumi.identity(theirs).container_name)
        for container in foreign:
            assert _exists(docker_client, "containers", container.id)
    finally:
        for container in foreign:
            with contextlib.suppress(NotFound):
                container.remove(force=True)


async def test_foreign_container_with_our_name_is_not_touched(manager, chat_ids, docker_client):
    chat = chat_ids()
    squatter = docker_client.containers.create(
        SANDBOX_TEST_IMAGE, ["sleep", "60"], name=manager.identity(chat).container_name,
        network_mode="none")
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
    mounts = docker_client.containers.get(manager.identity(chat).container_name).attrs["Mounts"]
    assert [(m["Type"], m["Source"]) for m in mounts] == [("bind", str(host_dir.resolve()))]
    assert await manager.remove(chat, workspace=True)
    assert not host_dir.exists()


async def test_two_instances_with_the_same_chat_ids_never_meet(make_manager, data_dir, tmp_path,
                                                              chat_ids, docker_client):
    """Chat ids repeat across installs (`terminal` always): every name carries the instance, so
    a second Rumi on the same engine gets its own container and workspace, and its cleanup,
    /reset and prune never touch the first one's."""
    chat = chat_ids()
    theirs = make_manager(data_dir=tmp_path / "other-instance")
    mine = make_manager(data_dir=data_dir)
    assert theirs.instance != mine.instance
    await theirs.exec(chat, "echo their-secret > secret.txt")
    seen = await mine.exec(chat, "ls -A /workspace; cat /workspace/secret.txt")
    assert seen.stdout == "" and "No such file" in seen.stderr
    assert theirs.identity(chat).container_name != mine.identity(chat).container_name
    assert theirs.identity(chat).volume_name != mine.identity(chat).volume_name
    assert [i.chat_id for i in await mine.list_sandboxes()] == [chat]

    assert await mine.cleanup_orphans() == []  # its own chat is live; theirs is not its own
    assert await mine.remove(chat, workspace=True)
    assert _exists(docker_client, "containers", theirs.identity(chat).container_name)
    assert (await theirs.exec(chat, "cat secret.txt")).stdout == "their-secret\n"


async def test_pre_instance_workspace_volume_is_kept_when_ours(make_manager, chat_ids,
                                                               data_dir, tmp_path,
                                                               docker_client):
    """Rumi ≤ 0.4 named workspaces `rumi-ws-<chat>`: after the upgrade the chat still finds its
    files there, while another Rumi's volume of that old name is never mounted."""
    chat, other_chat = chat_ids(), chat_ids()
    mine = make_manager(data_dir=data_dir)
    theirs = make_manager(data_dir=tmp_path / "other-instance")
    for owner, name in ((mine, chat), (theirs, other_chat)):
        labels = {k: v for k, v in owner.identity(name).labels.items() if k != "rumi.version"}
        docker_client.volumes.create(owner.identity(name).legacy_volume_name, labels=labels)
        docker_client.containers.run(
            SANDBOX_TEST_IMAGE, ["sh", "-c", "echo old > /w/old.txt"], remove=True,
            network_mode="none", user="0",
            volumes={owner.identity(name).legacy_volume_name: {"bind": "/w", "mode": "rw"}})
    assert (await mine.exec(chat, "cat old.txt")).stdout == "old\n"
    assert (await mine.exec(other_chat, "ls -A")).stdout == ""  # not theirs
    assert await mine.remove(chat, workspace=True)
    assert not _exists(docker_client, "volumes", mine.identity(chat).legacy_volume_name)
    assert _exists(docker_client, "volumes", theirs.identity(other_chat).legacy_volume_name)


async def test_unlabelled_volume_with_our_name_is_refused(manager, chat_ids, docker_client):
    chat = chat_ids()
    squatter = docker_client.volumes.create(manager.identity(chat).volume_name)
    try:
        with pytest.raises(SandboxError, match="not created by this Rumi"):
            await manager.exec(chat, "true")
        assert not await manager.remove(chat, workspace=True)
        assert _exists(docker_client, "volumes", squatter.name)
    finally:
        squatter.remove(force=True)


async def test_removal_needs_both_managed_and_instance_labels(manager, chat_ids, docker_client):
    """Our instance label alone (copied, or set by hand) is not proof a resource is ours."""
    chat = chat_ids()
    half = {"rumi.instance": manager.instance, "rumi.chat": chat}
    volume = docker_client.volumes.create(manager.identity(chat).volume_name, labels=half)
    container = docker_client.containers.create(
        SANDBOX_TEST_IMAGE, ["sleep", "60"], name=manager.identity(chat).container_name,
        labels=half,
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
    assert _exists(docker_client, "containers", restarted.identity(orphan).container_name)

    await docker_relay.start()
    assert await restarted.status() == (True, None)
    assert not _exists(docker_client, "containers", restarted.identity(orphan).container_name)
    assert _exists(docker_client, "volumes", restarted.identity(orphan).volume_name)  # kept

    live = chat_ids()
    await restarted.exec(live, "true")
    await docker_relay.stop()  # a later outage…
    with pytest.raises(SandboxUnavailable):
        await restarted.exec(live, "true")
    await docker_relay.start()  # …and recovery: no second cleanup
    assert await restarted.status() == (True, None)
    assert _exists(docker_client, "containers", restarted.identity(live).container_name)


async def test_this_runs_container_is_never_an_orphan(make_manager, chat_ids, docker_client,
                                                      docker_relay):
    """An engine outage makes the manager forget its live containers; a cleanup afterwards
    still knows its own by the run label and keeps them."""
    mine = make_manager(docker_client_factory=lambda: docker.DockerClient(
        base_url=f"unix://{docker_relay.path}", timeout=10))
    chat = chat_ids()
    await mine.exec(chat, "true")
    await docker_relay.stop()
    with pytest.raises(SandboxUnavailable):
        await mine.exec(chat, "true")
    await docker_relay.start()
    assert await mine.cleanup_orphans() == []  # old code removed it as an "orphan"
    assert _exists(docker_client, "containers", mine.identity(chat).container_name)
    later = make_manager()  # another run of the same Rumi: for it, that one is an orphan
    assert await later.cleanup_orphans() == [mine.identity(chat).container_name]


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

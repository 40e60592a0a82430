"""Container lifecycle: /reset removal, idle prune, orphan cleanup that spares foreign ones."""

from __future__ import annotations

import contextlib

import pytest
from docker.errors import NotFound

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

"""`rumi run`/`rumi chat` exit (Ctrl-C, SIGTERM, /salir all end in App.stop): the chats'
containers of this Rumi go with it, their workspaces stay."""

from __future__ import annotations

import logging

import pytest
from docker.errors import NotFound

from rumi.app import build_app
from tests.conftest import SANDBOX_TEST_IMAGE

pytestmark = pytest.mark.docker


async def test_app_stop_removes_this_instances_containers(make_settings, chat_ids, docker_client,
                                                          tmp_path):
    settings = make_settings(
        f'[llm]\napi_key = "gsk_test"\nbase_url = "http://127.0.0.1:9"\n'
        f'[sandbox]\nimage = "{SANDBOX_TEST_IMAGE}"\nstop_wait_seconds = 120\n'
        '[memory]\nembeddings_enabled = false\n')
    app = await build_app(settings)
    await app.start()
    manager = app.parts["sandbox"]
    chat = chat_ids()
    try:
        await manager.exec(chat, "echo guardado > /workspace/f")
        name = manager.identity(chat).container_name
        assert docker_client.containers.get(name).status == "running"
    finally:
        await app.stop()
    with pytest.raises(NotFound):
        docker_client.containers.get(name)
    docker_client.volumes.get(manager.identity(chat).volume_name)  # files kept



async def test_exit_logs_say_stopped_not_orphaned(make_settings, chat_ids, docker_client,
                                                  caplog):
    """The container this run made is "stopped on exit", never also an "orphan"."""
    settings = make_settings(
        f'[llm]\napi_key = "gsk_test"\nbase_url = "http://127.0.0.1:9"\n'
        f'[sandbox]\nimage = "{SANDBOX_TEST_IMAGE}"\nstop_wait_seconds = 120\n'
        '[memory]\nembeddings_enabled = false\n')
    app = await build_app(settings)
    await app.start()
    manager = app.parts["sandbox"]
    chat = chat_ids()
    caplog.set_level(logging.INFO, logger="rumi")
    try:
        await manager.exec(chat, "true")
    finally:
        await app.stop()
    said = [r.getMessage() for r in caplog.records]
    assert "stopped 1 sandbox container(s) on exit" in said
    assert not [line for line in said if "orphan" in line]  # old code: "removed 1 orphaned …"

"""`rumi doctor`'s "workspace limit" check on the real engine: it makes and removes a small
limited volume as a chat's first start would, and says in one line why not and what to do when
the host cannot (issue 26: "where the host truly cannot, `rumi setup` and `rumi doctor` say so")."""

from __future__ import annotations

import uuid

import pytest

from rumi.base.checks import Status
from rumi.sandbox.checks import check_workspace_limit
from rumi.sandbox.loopvolume import LIMIT_FIX
from tests.conftest import SANDBOX_TEST_IMAGE
from tests.sandbox.conftest import image_without_mkfs

pytestmark = pytest.mark.docker


def _left(docker_client, run: str) -> list[str]:
    label = {"label": f"rumi.test={run}"}
    return ([v.name for v in docker_client.volumes.list(filters=label)]
            + [c.name for c in docker_client.containers.list(all=True, filters=label)])


async def test_the_limit_holds_here_and_the_probe_leaves_nothing(make_settings, docker_client):
    run = uuid.uuid4().hex[:10]
    settings = make_settings(f'[sandbox]\nimage = "{SANDBOX_TEST_IMAGE}"\nworkspace_size = "64m"\n')
    result = await check_workspace_limit(settings, labels={"rumi.test": run})
    assert result.status is Status.OK, result
    assert "64m" in result.detail and "loop device" in result.detail
    assert _left(docker_client, run) == []


async def test_a_host_that_cannot_is_told_why_and_what_to_do(make_settings, docker_client):
    run = uuid.uuid4().hex[:10]
    with image_without_mkfs(docker_client) as image:
        settings = make_settings(f'[sandbox]\nimage = "{image}"\n')
        result = await check_workspace_limit(settings, labels={"rumi.test": run})
        assert _left(docker_client, run) == []
    assert result.status is Status.WARN, result
    assert "cannot be size-limited here" in result.detail
    assert "helper failed" in result.detail
    assert result.fix == LIMIT_FIX and "modprobe loop" in result.fix


async def test_other_modes_say_what_they_promise(make_settings) -> None:
    bind = await check_workspace_limit(make_settings('[sandbox]\nworkspace_mode = "bind"\n'))
    assert bind.status is Status.WARN and "no size or file limit" in bind.detail
    off = await check_workspace_limit(make_settings("[sandbox]\nenabled = false\n"))
    assert off.status is Status.OK and "disabled" in off.detail

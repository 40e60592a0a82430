"""Issue 33: while `rumi setup`'s background build of the missing image runs (it holds its
tag's lock), `rumi run`'s start, `/status` and doctor's workspace check say "being built",
never "build it with `rumi sandbox build`"; once nobody builds it, they say what to do."""

from __future__ import annotations

import logging
import os
import uuid

import pytest

from rumi import messages as msg
from rumi.app import build_app
from rumi.base.checks import Status
from rumi.sandbox.build_job import BuildFiles, take_lock
from rumi.sandbox.checks import check_workspace_limit
from tests.conftest import docker_available, require

pytestmark = pytest.mark.docker


async def test_a_missing_image_being_built_is_said_so_everywhere(
        make_settings, fake_groq, data_dir, caplog) -> None:
    require(docker_available(), "Docker engine not reachable (start dockerd)")
    image = f"rumi-sandbox:building-{uuid.uuid4().hex[:8]}"   # never built: missing
    settings = make_settings(f'[llm]\napi_key = "k"\nbase_url = "{fake_groq.base_url}"\n'
                             f'[sandbox]\nimage = "{image}"\n'
                             "[memory]\nembeddings_enabled = false\n")
    files = BuildFiles.of(data_dir, image)
    held = take_lock(files)   # what the background build holds while it runs
    assert held is not None
    app = await build_app(settings)
    try:
        with caplog.at_level(logging.WARNING, logger="rumi.sandbox.feature"):
            await app.start()
        started = caplog.text
        with msg.use_language("es"):
            status = (await app.assistant.handle("1", "1", "/status")).text
        limit = await check_workspace_limit(settings)
        os.close(held)          # the build ended (and the image is still missing)
        held = None
        with msg.use_language("es"):
            after = (await app.assistant.handle("1", "1", "/status")).text
    finally:
        if held is not None:
            os.close(held)
        await app.stop()
    assert f"sandbox image {image} is being built (log: {files.log})" in started
    assert "rumi sandbox build" not in started
    assert msg.text("SANDBOX_PROBLEM_IMAGE_BUILDING", "es").format(image=image) in status
    assert "rumi sandbox build" not in status
    assert limit.status is Status.WARN and "being built" in limit.detail
    assert "rumi sandbox build" in after   # nobody builds it now: say how

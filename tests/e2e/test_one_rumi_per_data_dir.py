"""One data dir, one Rumi (issue 32, item 2): a second `rumi run` — or a `rumi chat` — on a
data dir a running `rumi run` serves is refused with one line naming that process, and the
first goes on answering."""

from __future__ import annotations

import asyncio
import sys

import pytest

from tests.e2e.conftest import ALICE
from tests.e2e.test_bad_updates import write_config

pytestmark = pytest.mark.e2e

MAIN = "import sys; from rumi.cli import main; sys.exit(main())"


async def second(command: str, config) -> tuple[int, str]:  # noqa: ANN001
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", MAIN, command, "--config", str(config),
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE)
    try:
        _, err = await asyncio.wait_for(proc.communicate(b"hola\n"), 60)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    return proc.returncode, err.decode()


async def test_a_second_rumi_on_a_served_data_dir_is_refused(tmp_path, fake_groq,
                                                              fake_telegram) -> None:
    config = write_config(tmp_path, fake_groq, fake_telegram)
    first = await asyncio.create_subprocess_exec(
        sys.executable, "-c", MAIN, "run", "--config", str(config),
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE)
    try:
        await fake_telegram.wait_for_call("getUpdates", timeout=60)
        for command in ("run", "chat"):
            code, err = await second(command, config)
            assert code == 1, err
            lines = err.strip().splitlines()
            assert len(lines) == 1, err
            assert f"pid {first.pid}" in lines[0] and " run --config " in lines[0]
            assert str(tmp_path / "data") in lines[0]
        polls = sum(m == "getUpdates" for m, _ in fake_telegram.calls)
        assert fake_groq.requests == []  # the refused chat never reached the model
        fake_groq.enqueue_text("sigo aquí")
        fake_telegram.push_text(ALICE, ALICE, "¿sigues?")
        [sent] = await fake_telegram.wait_for_sent(1, timeout=30)
        assert sent.text == "sigo aquí"
        assert sum(m == "getUpdates" for m, _ in fake_telegram.calls) > polls
    finally:
        first.terminate()
        await asyncio.wait_for(first.wait(), 60)
    assert first.returncode == 0
    # once the first is gone the data dir is free again
    fake_groq.enqueue_text("ahora sí")
    code, err = await second("chat", config)
    assert code == 0, err

"""`rumi run` as a real process: answers through fake Telegram, stops cleanly on SIGTERM."""

from __future__ import annotations

import asyncio
import signal
import sys

import pytest

from tests.e2e.conftest import ALICE, TOKEN

pytestmark = pytest.mark.e2e


async def test_rumi_run_process(tmp_path, fake_groq, fake_telegram) -> None:
    config = tmp_path / "config.toml"
    config.write_text(
        f'data_dir = "{tmp_path / "data"}"\n'
        f'[telegram]\ntoken = "{TOKEN}"\nbase_url = "{fake_telegram.base_url}"\n'
        f'base_file_url = "{fake_telegram.base_file_url}"\nallowed_users = [{ALICE}]\n'
        "poll_timeout = 1\n"
        f'[llm]\napi_key = "gsk_secret_value"\nbase_url = "{fake_groq.base_url}"\n'
        "[sandbox]\nenabled = false\n[memory]\nembeddings_enabled = false\n",
        encoding="utf-8")
    fake_groq.enqueue_text("hola desde el proceso")
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", "import sys; from rumi.cli import main; sys.exit(main())",
        "run", "--config", str(config),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    try:
        await fake_telegram.wait_for_call("getUpdates", timeout=60)
        fake_telegram.push_text(ALICE, ALICE, "hola")
        [sent] = await fake_telegram.wait_for_sent(1, timeout=30)
        assert sent.text == "hola desde el proceso"
        proc.send_signal(signal.SIGTERM)
        _, stderr = await asyncio.wait_for(proc.communicate(), 60)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    console = stderr.decode()
    assert proc.returncode == 0, console
    assert "Traceback" not in console
    assert " INFO " not in console and "rumi stopped" not in console  # calm: the file has it
    log = (tmp_path / "data" / "logs" / "rumi.log").read_text(encoding="utf-8")
    for text in (console, log):
        assert "gsk_secret_value" not in text and TOKEN not in text
    assert "chat=111" in log and "rumi stopped" in log


async def test_rumi_run_with_a_rejected_token_exits_2(tmp_path, fake_telegram) -> None:
    config = tmp_path / "config.toml"
    config.write_text(
        f'data_dir = "{tmp_path / "data"}"\n'
        f'[telegram]\ntoken = "999:WRONG"\nbase_url = "{fake_telegram.base_url}"\n'
        f'[llm]\napi_key = "k"\n[sandbox]\nenabled = false\n'
        "[memory]\nembeddings_enabled = false\n", encoding="utf-8")
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", "import sys; from rumi.cli import main; sys.exit(main())",
        "run", "--config", str(config),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    try:
        _, stderr = await asyncio.wait_for(proc.communicate(), 60)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    err = stderr.decode()
    assert proc.returncode == 2, err
    assert "telegram.token" in err and "Traceback" not in err and "WRONG" not in err

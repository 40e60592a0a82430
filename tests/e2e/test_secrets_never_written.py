"""Secrets are never written, at any log level (issue 32, item 3).

`rumi run` at DEBUG against the fake Bot API, which answers one send with an error body that
quotes the request path, token included; then `rumi backup` (which copies the logs) and
`rumi doctor`. On 0.7.0 the token was in the log at every start and so in every backup. The
bot token and the Groq key must appear in none of: the log files, stderr, the backup archive
(every member), doctor's output."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import tarfile

import pytest

from tests.e2e.conftest import ALICE, TOKEN
from tests.e2e.test_bad_updates import run_bot
from tests.memory.files.test_markdown_sync import eventually

pytestmark = pytest.mark.e2e

GROQ_KEY = "gsk_" + "Q7w" * 16
RUMI = [sys.executable, "-c", "import sys; from rumi.cli import main; sys.exit(main())"]


def write_config(tmp_path, fake_groq, fake_telegram):  # noqa: ANN001, ANN201
    config = tmp_path / "config.toml"
    config.write_text(
        f'data_dir = "{tmp_path / "data"}"\nlog_level = "DEBUG"\n'
        f'[telegram]\ntoken = "{TOKEN}"\nbase_url = "{fake_telegram.base_url}"\n'
        f'base_file_url = "{fake_telegram.base_file_url}"\nallowed_users = [{ALICE}]\n'
        "poll_timeout = 1\n"
        f'[llm]\napi_key = "{GROQ_KEY}"\nbase_url = "{fake_groq.base_url}"\nmax_retries = 0\n'
        "[sandbox]\nenabled = false\n[memory]\nembeddings_enabled = false\n",
        encoding="utf-8")
    return config


def leaks(blob: bytes) -> list[str]:
    """The secrets `blob` holds, in any case (PTB lower-cases the errors it quotes)."""
    secrets = (TOKEN, GROQ_KEY, TOKEN.split(":", 1)[1])
    return [s for s in secrets if s.lower().encode() in blob.lower()]


async def test_the_token_and_key_are_in_no_log_backup_or_doctor_line(
        tmp_path, fake_groq, fake_telegram) -> None:  # noqa: ANN001
    fake_groq.valid_keys = {GROQ_KEY}
    fake_groq.default_text = "**Hola**, aquí estoy."
    config = write_config(tmp_path, fake_groq, fake_telegram)
    fake_telegram.echo_path(1)
    proc = await run_bot(config)
    try:
        await fake_telegram.wait_for_call("getUpdates", timeout=60)
        fake_telegram.push_text(ALICE, ALICE, "hola")
        await eventually(lambda: any("Hola" in t for t in fake_telegram.texts(ALICE)),
                         timeout=60)
        assert fake_telegram.path_echoes == 0   # the echoing error was met
        proc.terminate()
        assert await asyncio.wait_for(proc.wait(), timeout=30) == 0
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    logs = sorted((tmp_path / "data" / "logs").iterdir())
    written = b"".join(p.read_bytes() for p in logs)
    assert b"DEBUG" in written and b"/bot***/sendmessage" in written   # the echo, masked
    assert leaks(written) == []
    assert leaks((tmp_path / "rumi.log").read_bytes()) == []   # stderr

    backup = await asyncio.to_thread(
        subprocess.run, [*RUMI, "backup", "--config", str(config), "--out", str(tmp_path / "out")],
        capture_output=True, timeout=120)
    assert backup.returncode == 0, backup.stderr[-2000:]
    [archive] = (tmp_path / "out").glob("rumi-backup-*.tar.gz")
    with tarfile.open(archive) as tar:
        members = [m for m in tar.getmembers() if m.isfile()]
        assert any(m.name.endswith("rumi.log") for m in members)
        for member in members:
            handle = tar.extractfile(member)
            assert handle is not None
            assert leaks(handle.read()) == [], member.name
    assert leaks(backup.stdout + backup.stderr) == []

    doctor = await asyncio.to_thread(
        subprocess.run, [*RUMI, "doctor", "--config", str(config)], capture_output=True,
        timeout=120)
    assert b"telegram" in doctor.stdout.lower()
    assert leaks(doctor.stdout + doctor.stderr) == []

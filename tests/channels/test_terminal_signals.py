"""`rumi chat` ends cleanly on Ctrl-C (SIGINT), while the model is thinking or at the prompt.

Issue 2: "Ctrl-C/EOF end the session cleanly". EOF is covered in tests/channels/test_terminal.py;
this drives the SIGINT path (signal handler → stop → cancel the REPL → `app.stop()`) in a real child
process whose stdin stays open, as in a terminal — so a stdin read blocking interpreter exit
would show up as a hang. Clean means: exit code 0, no traceback, the session saved, and the
message the person typed already on the tape (nothing they sent is lost).
"""

from __future__ import annotations

import asyncio
import signal
import sys
from pathlib import Path

import pytest

from tests.fakes.groq_server import FakeGroqServer


async def start_chat(tmp_path: Path, fake_groq: FakeGroqServer) -> asyncio.subprocess.Process:
    config = tmp_path / "config.toml"
    config.write_text(f'data_dir = "{tmp_path / "data"}"\n[llm]\napi_key = "k"\n'
                      f'base_url = "{fake_groq.base_url}"\nmax_retries = 0\n'
                      "[sandbox]\nenabled = false\n"
                      # offline, fastembed would retry a download for ~40 s on first use
                      "[memory]\nembeddings_enabled = false\n", encoding="utf-8")
    return await asyncio.create_subprocess_exec(
        sys.executable, "-c", "import sys; from rumi.cli import main; sys.exit(main())",
        "chat", "--config", str(config),
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE)


async def wait_until(condition, timeout: float = 60) -> None:  # noqa: ANN001 - a predicate
    async def poll() -> None:
        while not condition():
            await asyncio.sleep(0.05)

    await asyncio.wait_for(poll(), timeout)


async def interrupt(proc: asyncio.subprocess.Process) -> tuple[str, str]:
    """SIGINT with stdin still open; the process must exit by itself."""
    proc.send_signal(signal.SIGINT)
    try:
        await asyncio.wait_for(proc.wait(), 30)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    assert proc.stdout is not None and proc.stderr is not None
    out, err = await proc.stdout.read(), await proc.stderr.read()
    if proc.stdin is not None:
        proc.stdin.close()
    return out.decode(), err.decode()


@pytest.mark.parametrize("during", ["reply", "prompt"])
async def test_ctrl_c_ends_rumi_chat_cleanly(tmp_path: Path, fake_groq: FakeGroqServer,
                                             during: str) -> None:
    chat = tmp_path / "data" / "chats" / "terminal"
    if during == "reply":
        fake_groq.enqueue_text("demasiado tarde", delay=3)
    else:
        fake_groq.enqueue_text("aquí estoy")
    proc = await start_chat(tmp_path, fake_groq)
    assert proc.stdin is not None
    proc.stdin.write("¿me oyes?\n".encode())
    await proc.stdin.drain()
    shown = b""
    try:
        await wait_until(lambda: len(fake_groq.requests) >= 1)  # the turn is under way
        if during == "prompt":  # back at the prompt: the answer is printed (not just taped)
            assert proc.stdout is not None
            shown = await asyncio.wait_for(proc.stdout.readuntil("aquí estoy".encode()), 60)
    except BaseException:
        proc.kill()
        await proc.wait()
        raise
    out, err = await interrupt(proc)
    out = shown.decode() + out
    assert proc.returncode == 0, err
    assert "Traceback" not in err and "Traceback" not in out
    assert (chat / "session.json").exists()
    tape = (chat / ".smma" / "session_log.jsonl").read_text(encoding="utf-8")
    assert "¿me oyes?" in tape
    if during == "prompt":
        assert "rumi> aquí estoy" in out
    else:
        assert "demasiado tarde" not in out  # the turn was cancelled, not finished

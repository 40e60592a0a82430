"""Issue 33: every way out is immediate while the model thinks (a fake Groq 30 s slow).

`rumi chat` with its stdin on a pseudo-terminal, as when a person types: Ctrl-D, `/exit` and
`/salir` end it at once (they used to wait the 30 s for an answer nobody would read); the turn
is dropped, the message kept on the tape. `rumi run` ends as soon as it says "rumi stopped":
the interpreter's teardown (1–1.5 s here) no longer runs after it. Timings are measured by
`benchmarks/exit_latency.py`; the bounds here only tell "at once" from "after the model"
(30 s), with a wide margin for a loaded machine.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path

import pytest

from tests.e2e.conftest import ALICE, TOKEN
from tests.e2e.test_immediate_stop import killed_if_failing, telegram_section, write_config
from tests.fakes.groq_server import FakeGroqServer, ScriptedReply
from tests.fakes.telegram_server import FakeTelegramServer
from tests.memory.files.test_markdown_sync import eventually

pytestmark = pytest.mark.e2e

SLOW = 30.0
AT_ONCE = 12.0   # far below the model's 30 s: only a wait for the model goes past it
# a module-level object whose finalizer runs only if the interpreter tears itself down
CANARY = ("import sys\nfrom rumi.cli import main\n"
          "class Canary:\n"
          "    def __del__(self):\n"
          "        sys.stderr.write('TEARDOWN RAN\\n'); sys.stderr.flush()\n"
          "canary = Canary()\n"
          "sys.exit(main())\n")


def slow_model(fake_groq: FakeGroqServer) -> None:
    def respond(body):  # noqa: ANN001, ANN202 - a fake Groq responder
        return ScriptedReply({"role": "assistant", "content": "demasiado tarde"}, delay=SLOW)

    fake_groq.responder = respond


async def gone_within(proc: asyncio.subprocess.Process, seconds: float) -> bool:
    try:
        await asyncio.wait_for(proc.wait(), seconds)
        return True
    except TimeoutError:
        return False
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()


@pytest.mark.parametrize("way", ["ctrl-d", "/exit", "/salir"])
async def test_leaving_rumi_chat_while_the_model_thinks_is_immediate(
        tmp_path: Path, fake_groq: FakeGroqServer, way: str) -> None:
    slow_model(fake_groq)
    config = write_config(tmp_path, fake_groq)
    terminal, typed = os.openpty()[::-1]   # (the child's end, the person's keyboard)
    try:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-c", "import sys; from rumi.cli import main; sys.exit(main())",
            "chat", "--config", str(config), stdin=terminal,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        os.write(typed, "cuéntame algo largo sobre Lima\n".encode())
        await eventually(lambda: len(fake_groq.requests) >= 1, timeout=60)
        os.write(typed, b"\x04" if way == "ctrl-d" else f"{way}\n".encode())
        left = await gone_within(proc, AT_ONCE)
        assert proc.stdout is not None and proc.stderr is not None
        out, err = (await proc.stdout.read()).decode(), (await proc.stderr.read()).decode()
    finally:
        os.close(terminal)
        os.close(typed)
    assert left, f"{way} waited for the model"
    assert proc.returncode == 0, err
    assert "Traceback" not in out + err
    assert "demasiado tarde" not in out          # the turn was dropped…
    assert "¡Hasta luego!" in out or "See you" in out
    chat = tmp_path / "data" / "chats" / "terminal"
    tape = (chat / ".smma" / "session_log.jsonl").read_text(encoding="utf-8")
    assert "sobre Lima" in tape                  # …and the message kept
    assert (chat / "session.json").exists()


async def test_rumi_run_is_gone_once_it_says_stopped(
        tmp_path: Path, fake_groq: FakeGroqServer) -> None:
    """SIGTERM while a turn waits for the model: "rumi stopped" is logged (and written to the
    log file), then the process ends without the interpreter's teardown."""
    slow_model(fake_groq)
    telegram = await FakeTelegramServer(TOKEN).start()
    try:
        config = write_config(tmp_path, fake_groq, telegram_section(telegram))
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-c", CANARY, "run", "--verbose", "--config", str(config),
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        async with killed_if_failing(proc):
            await telegram.wait_for_call("getUpdates", timeout=60)
            telegram.push_text(ALICE, ALICE, "cuéntame algo largo")
            await eventually(lambda: len(fake_groq.requests) >= 1, timeout=60)
        proc.send_signal(signal.SIGTERM)
        left = await gone_within(proc, AT_ONCE)
    finally:
        await telegram.stop()
    assert proc.stdout is not None and proc.stderr is not None
    err = (await proc.stderr.read()).decode()
    assert left, err
    assert proc.returncode == 0, err
    assert "rumi stopped" in err and "Traceback" not in err
    assert "TEARDOWN RAN" not in err      # nothing ran after "stopped"
    logged = (tmp_path / "data" / "logs" / "rumi.log").read_text(encoding="utf-8")
    assert "rumi stopped" in logged       # the log file was flushed before the exit


async def test_called_with_an_argv_main_returns_and_the_interpreter_ends_as_usual(
        tmp_path: Path, fake_groq: FakeGroqServer) -> None:
    """Scripts and tests that call `main([...])` get the code back (the fast exit is only
    for the command itself)."""
    config = write_config(tmp_path, fake_groq)
    code = ("import sys\nfrom rumi.cli import main\n"
            f"rc = main(['chat', '--config', {str(config)!r}])\n"
            "print('RETURNED', rc)\n")
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", code, stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(), 120)
    assert proc.returncode == 0, err.decode()
    assert "RETURNED 0" in out.decode()

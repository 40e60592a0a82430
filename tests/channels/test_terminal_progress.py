"""A calm terminal (issue 20): a "thinking…" line while a turn runs, one line per tool step,
no log lines in the conversation, and a prompt exit.

In-process tests drive the real channel on the real core (fake Groq) through its stream
interfaces; one test runs `rumi chat` under a pseudo-terminal, as a person would, with a model
that fails once (a retry warning) and no tokenizer cache (a tiktoken warning).
"""

from __future__ import annotations

import asyncio
import io
import os
import pty
import stat
import subprocess
import sys
import termios
from pathlib import Path

from rumi import messages as msg
from rumi.app import build_app
from rumi.base.progress import ToolStep
from rumi.channels.terminal import TerminalChannel
from rumi.channels.thinking import ERASE_LINE
from tests.conftest import REPO
from tests.fakes.groq_server import FakeGroqServer

CONFIG = ("[sandbox]\nenabled = false\n[memory]\nembeddings_enabled = false\n")


def searches(*queries: str) -> list[tuple[str, dict[str, str], None]]:
    return [("search_memory", {"query": q}, None) for q in queries]


async def chat(make_settings, fake_groq: FakeGroqServer, lines: str, **options: object) -> str:
    settings = make_settings(f'[llm]\napi_key = "k"\nbase_url = "{fake_groq.base_url}"\n'
                             + CONFIG)
    app = await build_app(settings)
    await app.start()
    try:
        out = io.StringIO()
        await TerminalChannel(app.assistant, stdin=io.StringIO(lines), stdout=out,
                              steps=app.steps, **options).run()  # type: ignore[arg-type]
    finally:
        await app.stop()
    return out.getvalue()


async def test_tool_steps_print_one_line_each_and_the_indicator_is_gone_before_the_answer(
        make_settings, fake_groq) -> None:
    fake_groq.enqueue_tool_calls(searches("gatos", "perros"))
    fake_groq.enqueue_text("No encontré nada.")
    text = await chat(make_settings, fake_groq, "¿qué sabes de mis mascotas?\n/salir\n",
                      indicator=True)
    assert "🔧 `search_memory gatos`\n" in text and "🔧 `search_memory perros`\n" in text
    assert text.index("search_memory gatos") < text.index("search_memory perros")
    assert msg.TERMINAL_THINKING in text
    answer = text.index("rumi> No encontré nada.")
    # The indicator's line is erased right before the answer, and not drawn again after it.
    assert text[:answer].endswith(ERASE_LINE)
    assert msg.TERMINAL_THINKING not in text[answer:]
    # Each tool line starts on a clean line (the indicator erased first).
    for label in ("gatos", "perros"):
        start = text.index(f"🔧 `search_memory {label}`")
        assert text[:start].endswith(ERASE_LINE)


async def test_no_indicator_or_control_codes_when_not_a_terminal(make_settings,
                                                                 fake_groq) -> None:
    fake_groq.enqueue_tool_calls(searches("gatos"))
    fake_groq.enqueue_text("Listo.")
    text = await chat(make_settings, fake_groq, "busca\n")  # StringIO: not a TTY
    assert "\x1b" not in text and "\r" not in text and msg.TERMINAL_THINKING not in text
    assert "🔧 `search_memory gatos`\n" in text and "rumi> Listo." in text


def test_step_labels_say_what_runs() -> None:
    assert ToolStep("c", "bash", '{"command": "ls -la"}').line == "🔧 `ls -la`"
    assert ToolStep("c", "read_file", '{"path": "notas.txt"}').label == "read_file notas.txt"
    assert ToolStep("c", "remember", "not json").label == "remember"
    long = ToolStep("c", "bash", '{"command": "echo ' + "x" * 200 + '"}').label
    assert len(long) == 60 and long.endswith("…")
    multi = ToolStep("c", "bash", '{"command": "cd /tmp\\nmake all"}')
    assert multi.label == "cd /tmp…"
    assert "`" not in ToolStep("c", "bash", '{"command": "echo `date`"}').line[3:-1]


def _log_probe(tmp_path: Path, verbose: bool) -> subprocess.CompletedProcess[str]:
    code = (
        "import logging, sys, warnings\n"
        "from pathlib import Path\n"
        "from rumi.cli.logs import setup_logging\n"
        f"setup_logging('INFO', Path(sys.argv[1]), console={verbose})\n"
        "from loguru import logger\n"
        "logger.error('Could not download model from either source, sleeping for 27.0 s')\n"
        "logging.getLogger('rumi.context.tokens').warning('tiktoken encoding unavailable')\n"
        "warnings.warn('a library is unhappy')\n"
    )
    return subprocess.run([sys.executable, "-c", code, str(tmp_path / "data")],
                          capture_output=True, text=True, timeout=60, cwd=REPO, check=False)


def test_third_party_chatter_goes_to_the_private_log_file(tmp_path: Path) -> None:
    done = _log_probe(tmp_path, verbose=False)
    assert done.returncode == 0, done.stderr
    assert done.stderr == "" and done.stdout == ""
    log = tmp_path / "data" / "logs" / "rumi.log"
    content = log.read_text(encoding="utf-8")
    assert "sleeping for 27.0 s" in content and "tiktoken encoding unavailable" in content
    assert "a library is unhappy" in content
    assert stat.S_IMODE(log.stat().st_mode) == 0o600
    assert stat.S_IMODE((tmp_path / "data").stat().st_mode) == 0o700


def test_verbose_shows_the_log_lines_on_stderr_too(tmp_path: Path) -> None:
    done = _log_probe(tmp_path, verbose=True)
    assert done.returncode == 0, done.stderr
    assert "sleeping for 27.0 s" in done.stderr and "tiktoken encoding unavailable" in done.stderr
    assert "tiktoken encoding unavailable" in (
        tmp_path / "data" / "logs" / "rumi.log").read_text(encoding="utf-8")


async def _read_until(fd: int, wanted: str, seen: list[str], timeout: float = 90) -> str:
    """Read the pty until `wanted` appears (or fail with what was read)."""
    loop = asyncio.get_running_loop()

    async def pump() -> None:
        while wanted not in "".join(seen):
            try:
                chunk = await loop.run_in_executor(None, os.read, fd, 4096)
            except OSError:  # the child closed the terminal
                return
            if not chunk:
                return
            seen.append(chunk.decode("utf-8", "replace"))

    await asyncio.wait_for(pump(), timeout)
    text = "".join(seen)
    assert wanted in text, text
    return text


async def test_rumi_chat_in_a_terminal_is_calm(tmp_path: Path, fake_groq) -> None:
    """The person sees the indicator, the tool line and the answer; the 503 retry and the
    missing tokenizer are in the log file, not on the screen; /salir ends the process."""
    fake_groq.enqueue_status(503)
    fake_groq.enqueue_tool_calls(searches("gatos"))
    fake_groq.enqueue_text("No tengo nada sobre gatos.")
    data = tmp_path / "data"
    config = tmp_path / "config.toml"
    config.write_text(f'data_dir = "{data}"\n[llm]\napi_key = "k"\n'
                      f'base_url = "{fake_groq.base_url}"\nretry_base_delay = 0.2\n'
                      + CONFIG, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("RUMI_")}
    env["TIKTOKEN_CACHE_DIR"] = str(tmp_path / "no-tokenizer")  # offline: tiktoken warns
    env["PYTHONPATH"] = str(REPO)
    leader, follower = pty.openpty()
    attrs = termios.tcgetattr(follower)
    attrs[3] &= ~termios.ECHO  # what the test types is not part of what Rumi printed
    termios.tcsetattr(follower, termios.TCSANOW, attrs)
    proc = subprocess.Popen(
        [sys.executable, "-c", "import sys; from rumi.cli import main; sys.exit(main())",
         "chat", "--config", str(config)],
        stdin=follower, stdout=follower, stderr=follower, env=env, cwd=tmp_path,
        close_fds=True)
    os.close(follower)
    seen: list[str] = []
    try:
        await _read_until(leader, "tú> ", seen)
        os.write(leader, "¿qué sabes de mis gatos?\n".encode())
        await _read_until(leader, "rumi> No tengo nada sobre gatos.", seen)
        os.write(leader, b"/salir\n")
        await _read_until(leader, "¡Hasta luego!", seen)
        code = await asyncio.wait_for(asyncio.to_thread(proc.wait), 30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(leader)
    screen = "".join(seen)
    assert code == 0, screen
    assert msg.TERMINAL_THINKING in screen and "🔧 `search_memory gatos`" in screen
    for noise in ("WARNING", "ERROR", "retry", "tiktoken", "Traceback"):
        assert noise not in screen, screen
    assert "logs/rumi.log" in screen  # where the log went, said once at the start
    log = (data / "logs" / "rumi.log").read_text(encoding="utf-8")
    assert "LLM HTTP 503, retry 1" in log


async def test_leaving_asks_the_model_nothing_and_keeps_what_to_learn(make_settings,
                                                                    fake_groq) -> None:
    """After /salir nothing waits for the model (issue 27; before, a shutdown extraction
    against a failing model could wait out its backoff): what the session has not learned
    goes to the pending file, learned at the next start."""
    settings = make_settings(f'[llm]\napi_key = "k"\nbase_url = "{fake_groq.base_url}"\n'
                             "retry_base_delay = 600\nmax_retries = 3\n" + CONFIG)
    fake_groq.enqueue_text("Hola.")
    for _ in range(4):
        fake_groq.enqueue_status(503)
    app = await build_app(settings)
    await app.start()
    out = io.StringIO()
    try:
        await TerminalChannel(app.assistant, stdin=io.StringIO("hola\n/salir\n"), stdout=out,
                              steps=app.steps).run()
    finally:
        await asyncio.wait_for(app.stop(), 60)
    assert "rumi> Hola." in out.getvalue()
    assert not [r for r in fake_groq.requests if "response_format" in r]
    memory = app.settings.data_dir / "chats" / "terminal" / "memory"
    assert "hola" in (memory / "pending_extraction.jsonl").read_text(encoding="utf-8")
    assert (app.settings.data_dir / "chats" / "terminal" / "session.json").exists()

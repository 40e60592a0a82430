"""Issue 33: the first line `rumi chat` prints (where the log is) is in the chat's language;
it was printed before the chat's language was known, so always in Spanish."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import pytest

from rumi import messages_en, messages_es
from tests.fakes.groq_server import FakeGroqServer


@pytest.mark.parametrize("language", ["en", "es"])
async def test_the_log_line_speaks_the_chats_language(tmp_path: Path, fake_groq: FakeGroqServer,
                                                     language: str) -> None:
    config = tmp_path / "config.toml"
    config.write_text(f'data_dir = "{tmp_path / "data"}"\n[agent]\nlanguage = "{language}"\n'
                      f'[llm]\napi_key = "k"\nbase_url = "{fake_groq.base_url}"\n'
                      "[sandbox]\nenabled = false\n[memory]\nembeddings_enabled = false\n",
                      encoding="utf-8")
    terminal, typed = os.openpty()[::-1]   # a person at a terminal (the line is for them)
    try:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-c", "import sys; from rumi.cli import main; sys.exit(main())",
            "chat", "--config", str(config), stdin=terminal,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        os.write(typed, b"\x04")
        try:
            out, err = await asyncio.wait_for(proc.communicate(), 120)
        finally:
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
    finally:
        os.close(terminal)
        os.close(typed)
    catalogue = messages_en if language == "en" else messages_es
    first = err.decode().splitlines()[0]
    log = tmp_path / "data" / "logs" / "rumi.log"
    assert first == catalogue.TERMINAL_LOG_FILE.format(path=log)
    assert catalogue.TERMINAL_WELCOME.splitlines()[0] in out.decode()

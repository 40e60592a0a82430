"""Two real `rumi run` bots, `casa` and `trabajo`, two data dirs, one PostgreSQL (issue 31's
first "Done when"): what Alice asks casa to remember is a row of `cto.memory` and in no local
SQLite file; trabajo puts it in the prompt it sends to Groq for Alice and never for Bob;
`/forget` on trabajo leaves nothing in `cto.memory` and the line leaves casa's MEMORY.md by
itself (LISTEN/NOTIFY); `/status` on each names the store, without the password, and the other
Rumi. Each bot has its own fake Telegram server (its own token); both talk to one fake Groq."""

from __future__ import annotations

import asyncio
import signal
import sys
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import pytest

from tests.e2e.conftest import ALICE
from tests.environment import without_rumi_settings
from tests.fakes.groq_server import FakeGroqServer
from tests.fakes.telegram_server import FakeTelegramServer

pytestmark = pytest.mark.e2e

BOB = 222
RUMI = [sys.executable, "-c", "import sys; from rumi.cli import main; sys.exit(main())"]
FACT = "la llave de repuesto está bajo la maceta azul"
QUESTION = "¿dónde está la llave de repuesto?"


@dataclass
class Bot:
    name: str
    data: Path
    telegram: FakeTelegramServer
    proc: Any = None

    def md(self, chat: int) -> Path:
        return self.data / "chats" / str(chat) / "memory" / "MEMORY.md"

    def md_text(self, chat: int) -> str:
        path = self.md(chat)
        return path.read_text(encoding="utf-8") if path.exists() else ""

    async def say(self, user: int, text: str, timeout: float = 60) -> str:
        """Send `text` as `user` in their private chat and return the bot's next message."""
        count = len(self.telegram.sent)
        self.telegram.push_text(user, user, text)
        sent = await self.telegram.wait_for_sent(count + 1, timeout=timeout)
        return sent[count].text or ""


def write_config(tmp: Path, name: str, telegram: FakeTelegramServer,
                 groq: FakeGroqServer) -> Path:
    config = tmp / f"{name}.toml"
    config.write_text(
        f'data_dir = "{tmp / name}"\n'
        f'[telegram]\ntoken = "{telegram.token}"\nbase_url = "{telegram.base_url}"\n'
        f'base_file_url = "{telegram.base_file_url}"\nallowed_users = [{ALICE}, {BOB}]\n'
        "poll_timeout = 1\n"
        f'[llm]\napi_key = "gsk_test"\nbase_url = "{groq.base_url}"\n'
        "retry_base_delay = 0.05\nmax_retries = 2\ntimeout = 10\n"
        "[sandbox]\nenabled = false\n[memory]\nembeddings_enabled = false\n"
        f'[store]\nbackend = "postgres"\nname = "{name}"\n', encoding="utf-8")
    return config


@pytest.fixture
async def bots(tmp_path: Path, pg_url: str, fake_groq: FakeGroqServer
               ) -> AsyncIterator[dict[str, Bot]]:
    env = without_rumi_settings()
    env.update(HOME=str(tmp_path), RUMI_STORE_URL=pg_url)
    running: dict[str, Bot] = {}
    try:
        for n, name in enumerate(("casa", "trabajo")):
            telegram = await FakeTelegramServer(f"77{n}:{name}-token").start()
            bot = Bot(name, tmp_path / name, telegram)
            running[name] = bot
            bot.proc = await asyncio.create_subprocess_exec(
                *RUMI, "run", "--config", str(write_config(tmp_path, name, telegram, fake_groq)),
                env=env, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE)
        for bot in running.values():
            await bot.telegram.wait_for_call("getUpdates", timeout=120)
        yield running
    finally:
        for bot in running.values():
            if bot.proc is not None and bot.proc.returncode is None:
                bot.proc.send_signal(signal.SIGTERM)
        for bot in running.values():
            if bot.proc is not None:
                try:
                    await asyncio.wait_for(bot.proc.communicate(), 60)
                except TimeoutError:
                    bot.proc.kill()
                    await bot.proc.wait()
            await bot.telegram.stop()


def rows(url: str, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    with psycopg.connect(url) as conn:
        return conn.execute(sql, params).fetchall()


def sqlite_files(data: Path) -> list[Path]:
    """Every SQLite database, journal and WAL file in a data dir."""
    found = []
    for path in data.rglob("*"):
        if not path.is_file():
            continue
        if path.name.endswith(("-wal", "-journal", "-shm")):
            found.append(path)
            continue
        with path.open("rb") as handle:
            if handle.read(16) == b"SQLite format 3\x00":
                found.append(path)
    return found


async def until(check: Any, seconds: float) -> float:
    """Poll `check()` until true; returns the seconds it took (fails after `seconds`)."""
    started = time.monotonic()
    while not check():
        assert time.monotonic() - started < seconds, f"not within {seconds} s"
        await asyncio.sleep(0.1)
    return time.monotonic() - started


def prompts_since(groq: FakeGroqServer, start: int) -> str:
    """What the chat turns sent to Groq since request `start` (not background JSON calls)."""
    return "\n".join(str(r["messages"]) for r in groq.requests[start:]
                     if "response_format" not in r)


async def test_two_bots_share_one_memory_and_forget_it_everywhere(
        bots: dict[str, Bot], pg_url: str, fake_groq: FakeGroqServer) -> None:
    casa, trabajo = bots["casa"], bots["trabajo"]
    password = pg_url.split(":")[2].split("@")[0]

    reply = await casa.say(ALICE, f"/remember {FACT}")
    assert "maceta azul" in reply
    assert rows(pg_url, "SELECT owner_id, server_code, status FROM cto.memory "
                        "WHERE content = %s", (FACT,)) == [(str(ALICE), "casa", "active")]
    await until(lambda: FACT in casa.md_text(ALICE), 20)
    for bot in (casa, trabajo):   # whatever SQLite files the data dirs hold (if any)
        for path in sqlite_files(bot.data):
            assert b"maceta azul" not in path.read_bytes(), path

    start = len(fake_groq.requests)
    fake_groq.enqueue_text("Está bajo la maceta azul.")
    assert "maceta azul" in await trabajo.say(ALICE, QUESTION)
    assert FACT in prompts_since(fake_groq, start)

    start = len(fake_groq.requests)
    fake_groq.enqueue_text("No lo sé.")
    assert await trabajo.say(BOB, QUESTION) == "No lo sé."
    asked = prompts_since(fake_groq, start)
    assert QUESTION in asked and "maceta" not in asked

    for bot, other in ((casa, "trabajo"), (trabajo, "casa")):
        status = await bot.say(ALICE, "/status")
        where = pg_url.rsplit("@", 1)[1]   # 127.0.0.1:port/database
        assert where in status and f"«{bot.name}»" in status, status
        assert f"la comparten también: {other}" in status
        assert password not in status

    [(memory_id,)] = rows(pg_url, "SELECT id FROM cto.memory WHERE content = %s", (FACT,))
    forgot = await trabajo.say(ALICE, "/forget maceta azul")
    assert f"#{memory_id}" in forgot, forgot
    left = rows(pg_url, "SELECT id, owner_id, content FROM cto.memory")
    assert not [r for r in left if "maceta" in r[2]], left
    took = await until(lambda: FACT not in casa.md_text(ALICE), 20)
    assert took < 20
    assert casa.md(ALICE).exists()

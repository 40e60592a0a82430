"""A real `rumi run` on the PostgreSQL store while PostgreSQL restarts (issue 31's second "Done
when"): a message and a `/remember` sent while the server is down are both answered once it is
back, and the memory is a row of `cto.memory`. The server is the test's own (it is stopped)."""

from __future__ import annotations

import asyncio
import signal

import psycopg
import pytest

from tests.conftest import require
from tests.e2e.conftest import ALICE
from tests.e2e.test_two_bots_one_store import RUMI, rows, write_config
from tests.environment import without_rumi_settings
from tests.fakes.groq_server import FakeGroqServer
from tests.fakes.telegram_server import FakeTelegramServer
from tests.pg_server import PostgresServer, PostgresUnavailable

pytestmark = pytest.mark.e2e


def is_down(url: str) -> bool:
    try:
        with psycopg.connect(url, connect_timeout=1):
            return False
    except psycopg.OperationalError:
        return True


async def test_a_message_and_a_remember_sent_while_postgresql_restarts_are_answered_and_kept(
        tmp_path, fake_groq: FakeGroqServer) -> None:
    try:
        server = PostgresServer().start()   # its own server: this test stops it
    except PostgresUnavailable as exc:
        require(False, f"no PostgreSQL for the tests: {exc}")
        raise
    telegram = await FakeTelegramServer("771:casa-token").start()
    proc = None
    try:
        url = server.create_database()
        env = without_rumi_settings()
        env.update(HOME=str(tmp_path), RUMI_STORE_URL=url)
        proc = await asyncio.create_subprocess_exec(
            *RUMI, "run", "--config", str(write_config(tmp_path, "casa", telegram, fake_groq)),
            env=env, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE)
        await telegram.wait_for_call("getUpdates", timeout=120)

        restart = asyncio.create_task(asyncio.to_thread(server.restart, down_for=3.0))
        while not await asyncio.to_thread(is_down, url):
            await asyncio.sleep(0.05)
        fake_groq.enqueue_text("Aquí sigo, sin prisa.")
        telegram.push_text(ALICE, ALICE, "hola, ¿sigues ahí?")
        telegram.push_text(ALICE, ALICE, "/remember mi bicicleta es roja y tiene cesta")
        await restart
        sent = await telegram.wait_for_sent(2, timeout=120)
        texts = [s.text or "" for s in sent]   # a command may overtake the turn
        assert "Aquí sigo, sin prisa." in texts, texts
        assert any("bicicleta es roja" in t for t in texts), texts
        assert rows(url, "SELECT owner_id, content, status FROM cto.memory") == [
            (str(ALICE), "mi bicicleta es roja y tiene cesta", "active")]
    finally:
        if proc is not None and proc.returncode is None:
            proc.send_signal(signal.SIGTERM)
            try:
                await asyncio.wait_for(proc.communicate(), 60)
            except TimeoutError:
                proc.kill()
                await proc.wait()
        await telegram.stop()
        server.stop()

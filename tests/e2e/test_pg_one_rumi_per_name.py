"""One running Rumi per `store.name` on a PostgreSQL store, through the real CLI: a second
`rumi run` or `rumi chat` (its own data dir) under the name a running `rumi run` holds is
refused in one line and exits non-zero while the first goes on answering; a `kill -9` of the
first frees the name (PostgreSQL drops the lock with its session), and the second then
starts."""

from __future__ import annotations

import asyncio
import os
import signal
import sys

import pytest

from rumi.memory.store.postgres.name_lock import name_in_use
from tests.e2e.conftest import ALICE
from tests.e2e.test_bad_updates import write_config

pytestmark = pytest.mark.e2e

MAIN = "import sys; from rumi.cli import main; sys.exit(main())"


def config_in(tmp_path, fake_groq, fake_telegram, where: str, name: str):  # noqa: ANN001, ANN201
    folder = tmp_path / where
    folder.mkdir()
    config = write_config(folder, fake_groq, fake_telegram)
    config.write_text(config.read_text(encoding="utf-8")
                      + f'[store]\nbackend = "postgres"\nname = "{name}"\n', encoding="utf-8")
    return config


async def rumi(command: str, config, url: str,  # noqa: ANN001
               stdin: bytes = b"") -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", MAIN, command, "--config", str(config),
        env={**os.environ, "RUMI_STORE_URL": url}, stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    try:
        out, err = await asyncio.wait_for(proc.communicate(stdin), 90)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    return proc.returncode, out.decode(), err.decode()


async def until_free(url: str, name: str) -> None:
    """PostgreSQL ends a dead client's session when it reads the closed socket: wait for it."""
    for _ in range(600):
        if await name_in_use(url, name) is False:
            return
        await asyncio.sleep(0.1)
    raise AssertionError(f"{name!r} still held a minute after its process died")


async def test_a_second_rumi_run_under_a_held_name_is_refused_until_the_first_dies(
        tmp_path, fake_groq, fake_telegram, pg_url) -> None:
    first_config = config_in(tmp_path, fake_groq, fake_telegram, "uno", "casa")
    second_config = config_in(tmp_path, fake_groq, fake_telegram, "dos", "casa")
    first = await asyncio.create_subprocess_exec(
        sys.executable, "-c", MAIN, "run", "--config", str(first_config),
        env={**os.environ, "RUMI_STORE_URL": pg_url},
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL)
    try:
        await fake_telegram.wait_for_call("getUpdates", timeout=90)
        host_port = pg_url.rsplit("@", 1)[1].split("/", 1)[0]
        for command in ("run", "chat"):   # a terminal chat would take back its reminders too
            code, _, err = await rumi(command, second_config, pg_url, b"hola\n")
            assert code != 0, err
            lines = err.strip().splitlines()
            assert len(lines) == 1, err
            assert "'casa'" in lines[0] and host_port in lines[0] and "[store] name" in lines[0]
            assert f"pid {first.pid}" in lines[0]
            assert pg_url.split(":")[2].split("@")[0] not in err
        assert fake_groq.requests == []   # the refused chat never reached the model
        fake_groq.enqueue_text("sigo aquí")   # the first goes on answering
        fake_telegram.push_text(ALICE, ALICE, "¿sigues?")
        [sent] = await fake_telegram.wait_for_sent(1, timeout=60)
        assert sent.text == "sigo aquí"
    finally:
        if first.returncode is None:
            first.send_signal(signal.SIGKILL)   # no clean stop: the lock must go anyway
        await asyncio.wait_for(first.wait(), 60)
    assert first.returncode == -signal.SIGKILL
    await until_free(pg_url, "casa")
    fake_groq.enqueue_text("ahora sí")
    code, out, err = await rumi("chat", second_config, pg_url, b"hola\n")
    assert code == 0, err
    assert "ahora sí" in out


async def test_two_names_run_together(tmp_path, fake_groq, fake_telegram, pg_url) -> None:
    casa = await asyncio.create_subprocess_exec(
        sys.executable, "-c", MAIN, "run", "--config",
        str(config_in(tmp_path, fake_groq, fake_telegram, "uno", "casa")),
        env={**os.environ, "RUMI_STORE_URL": pg_url},
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL)
    try:
        await fake_telegram.wait_for_call("getUpdates", timeout=90)
        fake_groq.enqueue_text("hola desde trabajo")
        code, out, err = await rumi("chat", config_in(tmp_path, fake_groq, fake_telegram,
                                                      "dos", "trabajo"), pg_url, b"hola\n")
        assert code == 0, err
        assert "hola desde trabajo" in out
        assert await name_in_use(pg_url, "casa") is True
    finally:
        casa.terminate()
        await asyncio.wait_for(casa.wait(), 60)
    assert casa.returncode == 0
    assert await name_in_use(pg_url, "casa") is False

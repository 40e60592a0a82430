"""One running Rumi per `store.name` on a PostgreSQL store (issue 31): a second app started
under a name a running one holds is refused in one line (the name, host:port, the fix; never
the password) and the first goes on; the name is free again once the first stops; two names
run side by side."""

from __future__ import annotations

import asyncio

import psycopg
import pytest

from rumi.app import App, build_app
from rumi.config import ConfigError
from rumi.memory.store.postgres.name_lock import StoreNameLock, StoreNameTaken, name_in_use
from tests.pg_server import app_toml
from tests.reminders.test_pg_two_rumis import CHAT


@pytest.fixture
def rumi_settings(tmp_path, fake_groq, pg_url):  # noqa: ANN001, ANN201
    """Settings of a Rumi with its own data dir, under `name`, on the test's store."""
    from rumi.config_load import load_settings

    def factory(name: str, data: str):  # noqa: ANN202
        config = tmp_path / f"{data}.toml"
        config.write_text(f'data_dir = "{tmp_path / data}"\n'
                          + app_toml(fake_groq.base_url, name), encoding="utf-8")
        return load_settings(config, env={"RUMI_STORE_URL": pg_url})

    return factory


def sessions_of(url: str, name: str) -> int:
    with psycopg.connect(url, autocommit=True) as conn:
        return conn.execute("SELECT count(*) FROM pg_stat_activity WHERE application_name "
                            "LIKE %s", (f"rumi {name} pid %",)).fetchone()[0]


async def remind(app: App, text: str) -> str:
    service = app.parts["reminders"]
    row = await service.create(CHAT, "+2h", text, task=False)  # type: ignore[attr-defined]
    return row.text


async def reminders_of(app: App) -> list[str]:
    return [r.text for r in await app.parts["reminders"].list(CHAT)]  # type: ignore[attr-defined]


async def test_a_second_rumi_under_a_held_name_is_refused_and_the_first_goes_on(
        rumi_settings, pg_url) -> None:
    first = await build_app(rumi_settings("casa", "uno"))
    await first.start()
    try:
        with pytest.raises(StoreNameTaken) as refused:
            await build_app(rumi_settings("casa", "dos"))
        line = str(refused.value)
        assert isinstance(refused.value, ConfigError)   # the CLI prints it as one line, exit 2
        assert "\n" not in line
        host_port = pg_url.rsplit("@", 1)[1].split("/", 1)[0]
        assert "'casa'" in line and host_port in line and "[store] name" in line
        assert "held by rumi casa pid " in line
        password = pg_url.split(":")[2].split("@")[0]
        assert password not in line
        assert sessions_of(pg_url, "casa") == 1   # the refused one left no session behind
        assert not (rumi_settings("casa", "dos").data_dir / "rumi.db").exists()
        # the first is unharmed: it still holds the name and keeps its reminders
        assert await name_in_use(pg_url, "casa") is True
        assert await remind(first, "regar las plantas") == "regar las plantas"
        assert await reminders_of(first) == ["regar las plantas"]
    finally:
        await first.stop()
    assert await name_in_use(pg_url, "casa") is False
    again = await build_app(rumi_settings("casa", "dos"))   # stopped: the name is free
    await again.start()
    try:
        assert await reminders_of(again) == ["regar las plantas"]
    finally:
        await again.stop()


async def test_two_names_run_together_on_one_store(rumi_settings, pg_url) -> None:
    casa = await build_app(rumi_settings("casa", "uno"))
    await casa.start()
    try:
        trabajo = await build_app(rumi_settings("trabajo", "dos"))
        await trabajo.start()
        try:
            assert await name_in_use(pg_url, "casa") is True
            assert await name_in_use(pg_url, "trabajo") is True
            assert await remind(casa, "casa 1") == "casa 1"
            assert await remind(trabajo, "trabajo 1") == "trabajo 1"
            assert await reminders_of(trabajo) == ["trabajo 1"]
        finally:
            await trabajo.stop()
        assert await name_in_use(pg_url, "trabajo") is False
        assert await name_in_use(pg_url, "casa") is True   # one stopping frees only its own
    finally:
        await casa.stop()


async def test_a_build_that_fails_after_taking_the_name_frees_it(rumi_settings,
                                                                  pg_url) -> None:
    class Broken:
        async def setup(self, host) -> None:  # noqa: ANN001
            raise RuntimeError("a feature failed to set up")

    settings = rumi_settings("casa", "uno")
    with pytest.raises(RuntimeError, match="failed to set up"):
        await build_app(settings, features=[], extra_features=[Broken()])  # type: ignore[list-item]
    assert await name_in_use(pg_url, "casa") is False
    assert sessions_of(pg_url, "casa") == 0


def cut_lock_sessions(url: str, name: str) -> int:
    """End the server side of the sessions holding `name` (what a PostgreSQL restart does)."""
    with psycopg.connect(url, autocommit=True) as conn:
        return len(conn.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name "
            "LIKE %s", (f"rumi {name} pid %",)).fetchall())


async def until(check, what: str) -> None:  # noqa: ANN001
    """Wait for a condition the guard brings about (a deadline only against hanging)."""
    for _ in range(600):
        if await check():
            return
        await asyncio.sleep(0.1)
    raise AssertionError(what)


async def test_a_lost_lock_connection_takes_the_name_again(pg_url, caplog) -> None:
    held = await StoreNameLock.acquire(pg_url, "casa", interval=0.2)
    try:
        assert cut_lock_sessions(pg_url, "casa") == 1
        await until(lambda: name_in_use(pg_url, "casa"), "the name was not taken again")
        assert held.held
        # cut again, and another Rumi takes the name in between: refused back and forth,
        # never both; once that one is gone the guard holds it again
        cut_lock_sessions(pg_url, "casa")
        other = None
        for _ in range(600):
            try:
                other = await StoreNameLock.acquire(pg_url, "casa", interval=3600)
                break
            except StoreNameTaken:   # the guard was quicker: cut it again
                cut_lock_sessions(pg_url, "casa")
        assert other is not None
        try:
            await until(lambda: _logged(caplog, "store name taken while this Rumi runs"),
                        "the guard did not say the name was taken")
            with pytest.raises(StoreNameTaken):
                await StoreNameLock.acquire(pg_url, "casa")
        finally:
            await other.release()
        await until(lambda: name_in_use(pg_url, "casa"), "the guard did not take it back")
        assert sessions_of(pg_url, "casa") == 1
    finally:
        await held.release()
    assert await name_in_use(pg_url, "casa") is False
    assert pg_url.split(":")[2].split("@")[0] not in caplog.text


async def _logged(caplog, text: str) -> bool:  # noqa: ANN001
    return text in caplog.text


async def test_a_name_is_one_rumi_per_database_not_per_server(postgres_server, pg_url) -> None:
    """Advisory locks belong to one database: 'casa' on another database of the same server
    is another store, free to run and not reported as running here."""
    other = postgres_server.create_database()
    try:
        here = await StoreNameLock.acquire(pg_url, "casa")
        try:
            assert await name_in_use(other, "casa") is False
            there = await StoreNameLock.acquire(other, "casa")
            await there.release()
        finally:
            await here.release()
    finally:
        postgres_server.drop_database(other.rsplit("/", 1)[1])

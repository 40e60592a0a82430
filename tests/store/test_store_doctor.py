"""The store in `rumi doctor` and at start-up: a real PostgreSQL answers with its versions and
schema; a closed port, a wrong password or a missing database is one line naming host:port
and the fix; the password is never shown."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest

from rumi.base.checks import Status
from rumi.config_load import load_settings
from rumi.memory.checks import check_store
from rumi.memory.store.postgres.probe import AUTH, NO_DATABASE, UNREACHABLE, probe_store, scrub
from tests.environment import without_rumi_settings
from tests.pg_server import PostgresServer

RUMI = [sys.executable, "-c", "import sys; from rumi.cli import main; sys.exit(main())"]
BASE = ('[telegram]\ntoken = "1:x"\nbase_url = "http://127.0.0.1:9/bot"\n'
        '[llm]\napi_key = "k"\n[sandbox]\nenabled = false\n')


def closed_port() -> int:
    """A port nothing listens on: bound, never listened to, so connecting is refused."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def settings_for(tmp_path: Path, url: str, name: str = "casa"):
    config = tmp_path / "config.toml"
    config.write_text(f'data_dir = "{tmp_path / "data"}"\n[store]\nbackend = "postgres"\n'
                      f'name = "{name}"\n', encoding="utf-8")
    return load_settings(config, env={"RUMI_STORE_URL": url})


async def test_probe_reads_versions_and_a_schema_not_created_yet(pg_url: str) -> None:
    probe = await probe_store(pg_url)
    assert probe.reachable and probe.problem is None
    assert probe.server_version and probe.server_version.split(".")[0].isdigit()
    assert probe.vector_version == "0.8.5"
    assert probe.migrations == []
    password = pg_url.split(":")[2].split("@")[0]
    assert password not in probe.shown_url and "***" in probe.shown_url


async def test_doctor_store_ok_names_versions_schema_and_name(tmp_path: Path,
                                                              pg_url: str) -> None:
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("CREATE SCHEMA rumi")
        conn.execute("CREATE TABLE rumi.schema_migrations (name text PRIMARY KEY, "
                     "applied_at timestamptz NOT NULL DEFAULT now())")
        conn.execute("INSERT INTO rumi.schema_migrations(name) VALUES ('001_cto_schema'), "
                     "('002_cto_functions')")
    result = await check_store(settings_for(tmp_path, pg_url))
    assert result.status is Status.OK, result
    assert "pgvector 0.8.5" in result.detail and "PostgreSQL " in result.detail
    assert "2 migrations, latest 002_cto_functions" in result.detail
    assert '"casa"' in result.detail
    assert pg_url.split(":")[2].split("@")[0] not in result.detail


async def test_doctor_store_refuses_a_schema_newer_than_this_rumi(tmp_path: Path,
                                                                   pg_url: str) -> None:
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("CREATE SCHEMA rumi")
        conn.execute("CREATE TABLE rumi.schema_migrations (name text PRIMARY KEY)")
        conn.execute("INSERT INTO rumi.schema_migrations VALUES ('001_cto_schema'), "
                     "('999_from_the_future')")
    result = await check_store(settings_for(tmp_path, pg_url))
    assert result.status is Status.FAIL
    assert "999_from_the_future" in result.detail and "upgrade Rumi" in result.fix


async def test_doctor_store_without_pgvector_says_how_to_add_it(
        tmp_path: Path, postgres_server: PostgresServer) -> None:
    url = postgres_server.create_database()
    name = url.rsplit("/", 1)[1]
    try:
        with psycopg.connect(postgres_server.admin_url(name), autocommit=True) as conn:
            conn.execute("DROP EXTENSION vector")
        result = await check_store(settings_for(tmp_path, url))
        assert result.status is Status.WARN
        assert "pgvector 0.8.5 is available but not created" in result.detail
        assert "CREATE EXTENSION vector" in result.fix
    finally:
        postgres_server.drop_database(name)


async def test_doctor_store_fails_on_a_closed_port_naming_host_port(tmp_path: Path) -> None:
    port = closed_port()
    url = f"postgresql://rumi:hunter2-secret@127.0.0.1:{port}/rumi"
    result = await check_store(settings_for(tmp_path, url))
    assert result.status is Status.FAIL
    assert f"127.0.0.1:{port}" in result.detail
    assert "docker compose --profile postgres up -d" in result.fix
    assert "hunter2-secret" not in result.detail + result.fix


async def test_wrong_password_and_missing_database_are_told_apart(
        postgres_server: PostgresServer, pg_url: str) -> None:
    database = pg_url.rsplit("/", 1)[1]
    wrong = postgres_server.url(database, password="not-the-password-42")
    probe = await probe_store(wrong)
    assert probe.problem_kind == AUTH and "not-the-password-42" not in (probe.problem or "")
    probe = await probe_store(postgres_server.url("no_such_db"))
    assert probe.problem_kind == NO_DATABASE
    assert postgres_server.password not in (probe.problem or "")
    probe = await probe_store(f"postgresql://rumi:x@127.0.0.1:{closed_port()}/rumi",
                              connect_timeout=2)
    assert probe.problem_kind == UNREACHABLE


def test_scrub_removes_the_password_in_every_spelling() -> None:
    url = "postgresql://rumi:p%40ss%2Fword@db:5432/rumi"
    text = 'failed for "p%40ss%2Fword" and "p@ss/word"\nsecond line'
    cleaned = scrub(text, url)
    assert "p@ss/word" not in cleaned and "p%40ss%2Fword" not in cleaned
    assert "\n" not in cleaned


def test_doctor_with_sqlite_keeps_its_checks_and_names_the_store(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text(f'data_dir = "{tmp_path / "data"}"\n', encoding="utf-8")
    result = subprocess.run([*RUMI, "doctor", "--json", "--config", str(config), "--check",
                             "store", "--check", "memory database", "--check", "sqlite"],
                            capture_output=True, text=True, timeout=60,
                            env={**os.environ, "HOME": str(tmp_path)})
    rows = {row["name"]: row for row in json.loads(result.stdout)}
    assert rows["store"]["status"] == "OK" and "sqlite" in rows["store"]["detail"]
    assert "not created yet" in rows["memory database"]["detail"]
    assert rows["sqlite"]["status"] == "OK"


def _rumi(command: str, tmp_path: Path, url: str) -> subprocess.CompletedProcess[str]:
    config = tmp_path / "config.toml"
    config.write_text(f'data_dir = "{tmp_path / "data"}"\n[store]\nbackend = "postgres"\n'
                      + BASE, encoding="utf-8")
    env = {**without_rumi_settings(), "HOME": str(tmp_path), "RUMI_STORE_URL": url}
    return subprocess.run([*RUMI, command, "--config", str(config)], capture_output=True,
                          text=True, timeout=60, env=env, stdin=subprocess.DEVNULL)


@pytest.mark.parametrize("command", ["run", "chat"])
def test_start_with_postgres_down_is_one_line_and_exit_2(tmp_path: Path, command: str) -> None:
    port = closed_port()
    result = _rumi(command, tmp_path, f"postgresql://rumi:hunter2-secret@127.0.0.1:{port}/rumi")
    assert result.returncode == 2, result.stderr[-2000:]
    assert "Traceback" not in result.stderr
    assert result.stderr.count("\n") == 1, result.stderr
    assert f"127.0.0.1:{port}" in result.stderr
    assert "docker compose --profile postgres up -d" in result.stderr
    assert "hunter2-secret" not in result.stderr + result.stdout
    assert not (tmp_path / "data" / "rumi.db").exists()  # nothing half-made on the way out


def test_doctor_with_postgres_down_fails_naming_host_port(tmp_path: Path) -> None:
    port = closed_port()
    result = _rumi("doctor", tmp_path, f"postgresql://rumi:hunter2-secret@127.0.0.1:{port}/rumi")
    assert result.returncode == 1
    line = next(row for row in result.stdout.splitlines() if row.split()[1:2] == ["store"])
    assert line.startswith("FAIL") and f"127.0.0.1:{port}" in result.stdout
    assert "hunter2-secret" not in result.stdout + result.stderr


@pytest.mark.parametrize("url", [
    "postgresql://rumi:hunter2-secret@127.0.0.1:notaport/rumi",
    "postgresql://rumi:hunter2-secret@127.0.0.1:1/rumi?sslmode=bogus",
    "postgresql://rumi:hunter2%2Dsecret@127.0.0.1:1/rumi?connect_timeout=x",
])
async def test_a_malformed_url_fails_the_probe_without_its_password(url: str) -> None:
    probe = await probe_store(url, connect_timeout=2)
    assert not probe.reachable
    shown = f"{probe.problem} {probe.endpoint} {probe.shown_url}"
    assert "hunter2-secret" not in shown and "hunter2%2Dsecret" not in shown

"""The test PostgreSQL itself: pgvector new enough, HNSW cosine search, password auth, one fresh
database per test, and a server that stops by its own handle."""

from __future__ import annotations

import os
import pwd

import psycopg
import pytest
from packaging.version import Version

from tests.pg_server import (
    PG_USER,
    PostgresServer,
    find_binaries,
    reachable_by_others,
    world_readable_install,
)


def test_pgvector_hnsw_cosine_search_in_a_fresh_database(pg_url: str) -> None:
    with psycopg.connect(pg_url, autocommit=True) as conn:
        version = conn.execute(
            "SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()[0]
        assert Version(version) >= Version("0.8.2")  # 0.8.2 fixes the parallel HNSW build CVE
        conn.execute("CREATE TABLE items (id int PRIMARY KEY, owner text, embedding vector(3))")
        conn.execute("CREATE INDEX ON items USING hnsw (embedding vector_cosine_ops)")
        conn.execute("INSERT INTO items VALUES (1, 'ana', '[1,0,0]'), (2, 'ana', '[0,1,0]'), "
                     "(3, 'bea', '[0.9,0.1,0]'), (4, 'ana', '[0.7,0.7,0]')")
        conn.execute("SET enable_seqscan = off")  # make the planner use the index
        conn.execute("SET hnsw.iterative_scan = relaxed_order")
        plan = "\n".join(row[0] for row in conn.execute(
            "EXPLAIN SELECT id FROM items ORDER BY embedding <=> '[1,0,0]' LIMIT 2"))
        assert "items_embedding_idx" in plan
        rows = conn.execute("SELECT id FROM items WHERE owner = 'ana' "
                            "ORDER BY embedding <=> '[1,0,0]' LIMIT 2").fetchall()
        assert [row[0] for row in rows] == [1, 4]


def test_each_test_gets_its_own_empty_database(pg_url: str,
                                                postgres_server: PostgresServer) -> None:
    other = postgres_server.create_database()
    try:
        with psycopg.connect(pg_url, autocommit=True) as conn:
            conn.execute("CREATE TABLE mine (x int)")
        with psycopg.connect(other) as conn:
            tables = conn.execute("SELECT count(*) FROM pg_tables "
                                  "WHERE schemaname = 'public'").fetchone()[0]
            assert tables == 0
            assert conn.execute("SELECT current_user").fetchone()[0] == "rumi"
            superuser = conn.execute("SELECT rolsuper FROM pg_roles "
                                     "WHERE rolname = current_user").fetchone()[0]
            assert superuser is False  # as on a server an administrator set up
    finally:
        postgres_server.drop_database(other.rsplit("/", 1)[1])
    with psycopg.connect(postgres_server.admin_url()) as conn:
        gone = conn.execute("SELECT count(*) FROM pg_database WHERE datname = %s",
                            (other.rsplit("/", 1)[1],)).fetchone()[0]
    assert gone == 0


def test_the_server_wants_the_password_on_tcp(postgres_server: PostgresServer,
                                              pg_url: str) -> None:
    database = pg_url.rsplit("/", 1)[1]
    with pytest.raises(psycopg.OperationalError, match="password authentication failed"):
        psycopg.connect(postgres_server.url(database, password="wrong"), connect_timeout=5)
    with pytest.raises(psycopg.OperationalError):
        psycopg.connect(f"postgresql://rumi@127.0.0.1:{postgres_server.port}/{database}",
                        connect_timeout=5)
    assert postgres_server.host == "127.0.0.1"
    with psycopg.connect(postgres_server.admin_url()) as conn:
        assert conn.execute("SHOW listen_addresses").fetchone()[0] == "127.0.0.1"
        assert conn.execute("SHOW unix_socket_directories").fetchone()[0] == ""


def test_a_server_stops_by_its_handle_and_a_restart_keeps_the_data() -> None:
    server = PostgresServer().start()
    try:
        url = server.create_database()
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("CREATE TABLE kept (note text)")
            conn.execute("INSERT INTO kept VALUES ('la llave está bajo la maceta')")
        server.restart(down_for=0.2)
        with psycopg.connect(url) as conn:
            assert conn.execute("SELECT note FROM kept").fetchone()[0] == \
                "la llave está bajo la maceta"
        pid, data_dir = server.pid, server.data_dir
        assert pid is not None
        if os.geteuid() == 0:  # PostgreSQL refuses root: it runs as the unprivileged user
            assert data_dir.stat().st_uid == pwd.getpwnam(PG_USER).pw_uid
    finally:
        server.stop()
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    assert not data_dir.exists()
    with pytest.raises(psycopg.OperationalError):
        psycopg.connect(url, connect_timeout=2)
    server.stop()  # twice is harmless


def test_a_venv_other_users_cannot_reach_is_copied_once_for_the_server_user() -> None:
    """CI's venv may sit under /root (mode 700): the server user gets a world-readable copy."""
    if os.geteuid() != 0:
        pytest.skip("only root hands PostgreSQL to another user")
    copy = world_readable_install(find_binaries())
    assert reachable_by_others(copy) and copy != find_binaries()
    assert world_readable_install(find_binaries()) == copy  # once, then reused
    server = PostgresServer(bindir=copy).start()
    try:
        with psycopg.connect(server.create_database()) as conn:
            assert conn.execute("SELECT '[1,2]'::vector <-> '[1,3]'::vector").fetchone()[0] == 1
    finally:
        server.stop()

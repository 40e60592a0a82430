"""docs/postgres.md's backup and restore, run for real: one `pg_dump -Fc` of the store's
database carries both schemas (`cto` and `rumi`) with every row and vector, and `pg_restore
--no-owner --no-comments` (the extension's comment belongs to the superuser who made it) into
a new database that has pgvector brings them all back."""

from __future__ import annotations

import subprocess

import psycopg

from tests.pg_server import PostgresServer

ROWS = [("ana", "la llave está bajo la maceta", "[0.1,0.2,0.3]"),
        ("ana", "prefiere el té sin azúcar", "[0.3,0.2,0.1]"),
        ("grupo-7", "la reunión es los martes", "[0.0,1.0,0.0]")]


def _fill(url: str) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE SCHEMA cto")
        conn.execute("CREATE SCHEMA rumi")
        conn.execute("CREATE TABLE cto.memory (id bigserial PRIMARY KEY, owner_id text, "
                     "content text, embedding vector(3))")
        conn.execute("CREATE INDEX ON cto.memory USING hnsw (embedding vector_cosine_ops)")
        conn.execute("CREATE TABLE rumi.schema_migrations (name text PRIMARY KEY)")
        conn.execute("INSERT INTO rumi.schema_migrations VALUES ('001_cto_schema')")
        with conn.cursor() as cur:
            cur.executemany("INSERT INTO cto.memory (owner_id, content, embedding) "
                            "VALUES (%s, %s, %s::vector)", ROWS)


def _read(url: str) -> tuple[list[tuple[str, str, str]], list[str], int]:
    with psycopg.connect(url) as conn:
        rows = conn.execute("SELECT owner_id, content, embedding::text FROM cto.memory "
                            "ORDER BY id").fetchall()
        names = [r[0] for r in conn.execute("SELECT name FROM rumi.schema_migrations")]
        nearest = conn.execute("SELECT id FROM cto.memory ORDER BY embedding <=> '[0,1,0]' "
                               "LIMIT 1").fetchone()[0]
    return rows, names, nearest


def test_one_dump_covers_both_schemas_and_restores_every_vector(
        postgres_server: PostgresServer, pg_url: str, tmp_path) -> None:
    _fill(pg_url)
    dump = tmp_path / "rumi.dump"
    subprocess.run([str(postgres_server.bindir / "pg_dump"), "-Fc", "-d", pg_url, "-f",
                    str(dump)], check=True, capture_output=True, timeout=120)
    restored = postgres_server.create_database()  # new, empty, with `vector` (as the docs say)
    try:
        result = subprocess.run([str(postgres_server.bindir / "pg_restore"), "--no-owner",
                                 "--no-comments",
                                 "-d", restored, str(dump)], capture_output=True, text=True,
                                timeout=120)
        assert result.returncode == 0, result.stderr
        rows, names, nearest = _read(restored)
        assert [(o, t) for o, t, _ in rows] == [(o, t) for o, t, _ in ROWS]
        assert [r[2] for r in rows] == ["[0.1,0.2,0.3]", "[0.3,0.2,0.1]", "[0,1,0]"]
        assert names == ["001_cto_schema"]
        assert nearest == 3
        assert (rows, names, nearest) == _read(pg_url)
    finally:
        postgres_server.drop_database(restored.rsplit("/", 1)[1])

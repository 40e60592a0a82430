"""`rumi store migrate`: a data dir's SQLite store into a real PostgreSQL and back, as real
`rumi` processes — memories arrive with their vectors, a second run copies nothing new, a
sample recall is checked, nothing in the data dir is removed, and the password is never
printed. Bad targets end in one line (exit 2)."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest

from rumi.config import MemorySettings
from rumi.memory.store.memories import MemoryStore
from rumi.memory.store.models import MemorySource, MemoryType, NewMemory
from rumi.memory.store.postgres.store import PgMemoryStore
from rumi.memory.vectors.embeddings import Embedder
from rumi.memory.vectors.index import VectorIndex
from tests.conftest import MODEL_DIR, require
from tests.environment import without_rumi_settings

RUMI = [sys.executable, "-c", "import sys; from rumi.cli import main; sys.exit(main())"]
MODEL = "sentence-transformers/all-MiniLM-L6-v2"
FACTS = {
    "111": ["la llave de repuesto está bajo la maceta azul", "prefiere el té verde sin azúcar",
            "su perra se llama Luna"],
    "-100222": ["la reunión del grupo es los martes a las ocho"],
}


def memory_settings() -> MemorySettings:
    return MemorySettings(embedding_model=MODEL, embedding_model_path=MODEL_DIR,
                          embedding_threads=2, embedding_load_wait_seconds=None)


def write_config(tmp_path: Path, backend: str = "sqlite") -> Path:
    config = tmp_path / "config.toml"
    config.write_text(f'data_dir = "{tmp_path / "data"}"\n'
                      f'[memory]\nembedding_model = "{MODEL}"\n'
                      f'embedding_model_path = "{MODEL_DIR}"\nembedding_threads = 2\n'
                      f'[store]\nbackend = "{backend}"\nname = "casa"\n', encoding="utf-8")
    return config


def rumi(tmp_path: Path, *args: str, url: str | None = None,
         backend: str = "sqlite") -> subprocess.CompletedProcess[str]:
    env = without_rumi_settings()
    env["HOME"] = str(tmp_path)
    if url is not None:
        env["RUMI_STORE_URL"] = url
    return subprocess.run([*RUMI, "store", "migrate", "--config",
                           str(write_config(tmp_path, backend)), *args],
                          capture_output=True, text=True, timeout=300, env=env)


@pytest.fixture
def embedder() -> Embedder:
    emb = Embedder(memory_settings())
    require(emb._ensure_loaded(), f"embedding model not usable at {MODEL_DIR}")
    return emb


async def fill_sqlite(data: Path, embedder: Embedder) -> dict[str, int]:
    vectors = VectorIndex(data / "vectors", embedder.dim, embedder.model_name)
    store = await MemoryStore.open(data / "rumi.db", memory_settings(), embedder, vectors)
    try:
        for chat, texts in FACTS.items():
            await store.save_many(chat, [NewMemory(content=t, type=MemoryType.FACT,
                                                   source=MemorySource.EXPLICIT) for t in texts])
        old = next(m for m in await store.list("111", limit=10)
                   if m.content == "su perra se llama Luna")
        await store.supersede("111", old.id, NewMemory(content="su perra se llama Luna y tiene 3 "
                                                               "años", type=MemoryType.FACT))
        await store.set_switch("-100222", False, "admin")
        return {chat: len(await store.export_jsonl(chat)) for chat in FACTS}
    finally:
        await store.close()


def pg_rows(url: str) -> list[tuple[str, str, str, bool]]:
    with psycopg.connect(url) as conn:
        return conn.execute("SELECT owner_id, content, status, embedding IS NOT NULL "
                            "FROM cto.memory ORDER BY owner_id, id").fetchall()


async def test_sqlite_to_postgres_and_a_second_run_copies_nothing(
        tmp_path: Path, pg_url: str, embedder: Embedder) -> None:
    data = tmp_path / "data"
    counts = await fill_sqlite(data, embedder)
    before = (data / "rumi.db").stat().st_size
    password = pg_url.split(":")[2].split("@")[0]

    first = rumi(tmp_path, "--to", "postgres", url=pg_url)
    assert first.returncode == 0, first.stderr[-3000:]
    assert "5 of 5 memories copied (0 were already there) in 2 chats" in first.stdout
    assert "1 memory switches copied" in first.stdout
    assert "sample recall: found" in first.stdout
    assert password not in first.stdout + first.stderr
    rows = pg_rows(pg_url)
    assert len(rows) == sum(counts.values()) == 5
    assert all(has_vector for _, _, status, has_vector in rows if status == "active")
    superseded = {(o, c) for o, c, s, _ in rows if s == "superseded"}
    assert superseded == {("111", "su perra se llama Luna")}

    second = rumi(tmp_path, "--to", "postgres", url=pg_url)
    assert second.returncode == 0, second.stderr[-3000:]
    assert "0 of 5 memories copied (5 were already there)" in second.stdout
    assert len(pg_rows(pg_url)) == 5
    assert (data / "rumi.db").is_file() and (data / "rumi.db").stat().st_size >= before

    pg = await PgMemoryStore.open(pg_url, "trabajo", memory_settings(), embedder)
    try:
        text = "la llave de repuesto está bajo la maceta azul"
        hits = await pg.vector_search("111", text, 3)
        assert hits and hits[0][1] > 0.99  # the same model's vector for the same text
        assert [m.content for m in await pg.get_many("111", [hits[0][0]])] == [text]
        assert await pg.switch_state("-100222") is False
    finally:
        await pg.close()


async def test_postgres_back_to_sqlite(tmp_path: Path, pg_url: str, embedder: Embedder) -> None:
    pg = await PgMemoryStore.open(pg_url, "casa", memory_settings(), embedder)
    try:
        await pg.save_many("111", [NewMemory(content=t, type=MemoryType.FACT)
                                   for t in FACTS["111"]])
    finally:
        await pg.close()
    result = rumi(tmp_path, "--to", "sqlite", url=pg_url, backend="postgres")
    assert result.returncode == 0, result.stderr[-3000:]
    assert "3 of 3 memories copied" in result.stdout and "sample recall: found" in result.stdout
    data = tmp_path / "data"
    vectors = VectorIndex(data / "vectors", embedder.dim, embedder.model_name)
    store = await MemoryStore.open(data / "rumi.db", memory_settings(), embedder, vectors)
    try:
        lines = [json.loads(line) for line in await store.export_jsonl("111")]
        assert sorted(r["content"] for r in lines) == sorted(FACTS["111"])
        hits = await store.vector_search("111", "su perra se llama Luna", 1)
        assert hits and hits[0][1] > 0.99
        assert [m.content for m in await store.get_many("111", [hits[0][0]])] == \
            ["su perra se llama Luna"]
    finally:
        await store.close()
    assert len(pg_rows(pg_url)) == 3  # the source is left as it was


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.parametrize(("args", "url", "needle"), [
    (["--to", "mysql://rumi:hunter2-secret@db/rumi"], None, "expected 'postgres'"),
    (["--to", "postgres"], None, "RUMI_STORE_URL"),
    (["--to", "sqlite"], None, "none is configured"),
    (["--to", "postgresql://rumi:hunter2-secret@127.0.0.1:9/rumi"], None, "rumi.db is empty"),
])
def test_bad_targets_are_one_line(tmp_path: Path, args: list[str], url: str | None,
                                  needle: str) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "rumi.db").write_bytes(b"")  # even an empty file: never touched on the way out
    result = rumi(tmp_path, *args, url=url)
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    assert "hunter2-secret" not in result.stderr + result.stdout
    assert (data / "rumi.db").read_bytes() == b""
    assert needle in result.stderr


async def test_unreachable_target_is_one_line_naming_host_port(tmp_path: Path,
                                                               embedder: Embedder) -> None:
    await fill_sqlite(tmp_path / "data", embedder)
    port = _closed_port()
    result = rumi(tmp_path, "--to", "postgres",
                  url=f"postgresql://rumi:hunter2-secret@127.0.0.1:{port}/rumi")
    assert result.returncode == 2
    assert f"127.0.0.1:{port}" in result.stderr and result.stderr.count("\n") == 1
    assert "hunter2-secret" not in result.stderr + result.stdout

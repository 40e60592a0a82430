"""`rumi store migrate`: a data dir's SQLite store into a real PostgreSQL and back, as real
`rumi` processes — memories arrive with their vectors, a second run copies nothing new, a
sample recall is checked, nothing in the data dir is removed, and the password is never
printed. Bad targets end in one line (exit 2)."""

from __future__ import annotations

import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import numpy as np
import psycopg
import pytest
from pgvector.psycopg import register_vector

from rumi.config import MemorySettings
from rumi.memory.store.codec import vector_label
from rumi.memory.store.memories import MemoryStore
from rumi.memory.store.migration import ModelMismatch, check_models
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


def label(embedder: Embedder) -> str:
    """The label the bot gives this model's vectors (with the default vector context)."""
    return vector_label(embedder.model_name, memory_settings().recall_vector_context)


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


@asynccontextmanager
async def open_sqlite(data: Path, embedder: Embedder) -> AsyncIterator[MemoryStore]:
    """The data dir's rumi.db with its vectors, as the bot opens them; closed after."""
    store = await MemoryStore.open(data / "rumi.db", memory_settings(), embedder,
                                   VectorIndex(data / "vectors", embedder.dim,
                                               label(embedder)))
    try:
        yield store
    finally:
        await store.close()


@asynccontextmanager
async def open_pg(url: str, server: str, embedder: Embedder) -> AsyncIterator[PgMemoryStore]:
    """The PostgreSQL store as the Rumi named `server` opens it; closed after."""
    pg = await PgMemoryStore.open(url, server, memory_settings(), embedder)
    try:
        yield pg
    finally:
        await pg.close()


async def fill_sqlite(data: Path, embedder: Embedder) -> dict[str, int]:
    async with open_sqlite(data, embedder) as store:
        for chat, texts in FACTS.items():
            await store.save_many(chat, [NewMemory(content=t, type=MemoryType.FACT,
                                                   source=MemorySource.EXPLICIT) for t in texts])
        old = next(m for m in await store.list("111", limit=10)
                   if m.content == "su perra se llama Luna")
        await store.supersede("111", old.id, NewMemory(content="su perra se llama Luna y tiene 3 "
                                                               "años", type=MemoryType.FACT))
        await store.set_switch("-100222", False, "admin")
        return {chat: len(await store.export_jsonl(chat)) for chat in FACTS}


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

    async with open_pg(pg_url, "trabajo", embedder) as pg:
        text = "la llave de repuesto está bajo la maceta azul"
        hits = await pg.vector_search("111", text, 3)
        assert hits and hits[0][1] > 0.99  # the same model's vector for the same text
        assert [m.content for m in await pg.get_many("111", [hits[0][0]])] == [text]
        assert await pg.switch_state("-100222") is False


async def test_postgres_back_to_sqlite(tmp_path: Path, pg_url: str, embedder: Embedder) -> None:
    async with open_pg(pg_url, "casa", embedder) as pg:
        await pg.save_many("111", [NewMemory(content=t, type=MemoryType.FACT)
                                   for t in FACTS["111"]])
    result = rumi(tmp_path, "--to", "sqlite", url=pg_url, backend="postgres")
    assert result.returncode == 0, result.stderr[-3000:]
    assert "3 of 3 memories copied" in result.stdout and "sample recall: found" in result.stdout
    assert f"vectors: 3 copied as they are ({label(embedder)})" in result.stdout, result.stdout
    async with open_sqlite(tmp_path / "data", embedder) as store:
        lines = [json.loads(line) for line in await store.export_jsonl("111")]
        assert sorted(r["content"] for r in lines) == sorted(FACTS["111"])
        hits = await store.vector_search("111", "su perra se llama Luna", 1)
        assert hits and hits[0][1] > 0.99
        assert [m.content for m in await store.get_many("111", [hits[0][0]])] == \
            ["su perra se llama Luna"]
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


def sqlite_vectors(db: Path) -> dict[str, np.ndarray]:
    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT m.content, e.vector, e.dim FROM memories m JOIN "
                            "memory_embeddings e ON e.memory_id = m.id").fetchall()
    return {c: np.frombuffer(v, dtype=np.float32, count=d) for c, v, d in rows}


def pg_vectors(url: str) -> dict[str, tuple[np.ndarray, str, str]]:
    with psycopg.connect(url) as conn:
        register_vector(conn)
        rows = conn.execute("SELECT content, embedding, embedding_model, source FROM cto.memory "
                            "WHERE embedding IS NOT NULL").fetchall()
    return {c: (np.asarray(v.to_numpy(), dtype=np.float32), model, source)
            for c, v, model, source in rows}


async def test_vectors_are_copied_as_they_are_and_sources_kept(
        tmp_path: Path, pg_url: str, embedder: Embedder) -> None:
    """The stored vector arrives bit for bit — here one no model would make for its text, so a
    re-embedding could not produce it — and a `/remember`ed memory stays `explicit`."""
    data = tmp_path / "data"
    await fill_sqlite(data, embedder)
    marked = "la llave de repuesto está bajo la maceta azul"
    odd = np.random.default_rng(7).standard_normal(embedder.dim).astype(np.float32)
    odd /= np.linalg.norm(odd)
    with sqlite3.connect(data / "rumi.db") as conn:
        conn.execute("UPDATE memory_embeddings SET vector = ? WHERE memory_id = (SELECT id FROM "
                     "memories WHERE content = ?)", (odd.tobytes(), marked))
    before = sqlite_vectors(data / "rumi.db")
    before.pop("su perra se llama Luna")   # history: its vector is not needed for recall

    result = rumi(tmp_path, "--to", "postgres", url=pg_url)
    assert result.returncode == 0, result.stderr[-3000:]
    assert f"vectors: 4 copied as they are ({label(embedder)}), none embedded" \
        in result.stdout
    arrived = pg_vectors(pg_url)
    assert set(arrived) == set(before) and len(arrived) == 4
    for content, vector in before.items():
        copied, model, source = arrived[content]
        assert np.array_equal(copied, vector) and model == label(embedder)
        assert source == ("auto" if content.endswith("3 años") else "explicit")
    assert not np.allclose(arrived[marked][0], await embedder.embed_query(marked), atol=1e-3)

    again = rumi(tmp_path, "--to", "postgres", url=pg_url)
    assert again.returncode == 0, again.stderr[-3000:]
    assert "nothing new to move" in again.stdout
    assert "vectors: 0 copied" in again.stdout


async def test_vectors_of_another_model_are_refused_unless_reembed(
        tmp_path: Path, pg_url: str, embedder: Embedder) -> None:
    data = tmp_path / "data"
    await fill_sqlite(data, embedder)
    with sqlite3.connect(data / "rumi.db") as conn:
        conn.execute("UPDATE memory_embeddings SET model = 'intfloat/multilingual-e5-small'")
    refused = rumi(tmp_path, "--to", "postgres", url=pg_url)
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert refused.stderr.count("\n") == 1 and "Traceback" not in refused.stderr, refused.stderr
    assert "intfloat/multilingual-e5-small" in refused.stderr
    assert embedder.model_name in refused.stderr
    assert "--reembed" in refused.stderr
    with psycopg.connect(pg_url) as conn:   # nothing was written, not even the schema
        assert conn.execute("SELECT to_regclass('cto.memory')").fetchone() == (None,)

    redone = rumi(tmp_path, "--to", "postgres", "--reembed", url=pg_url)
    assert redone.returncode == 0, redone.stderr[-3000:]
    assert f"vectors: 4 embedded again with {label(embedder)} (--reembed)" in redone.stdout
    text = "su perra se llama Luna y tiene 3 años"
    vector, model, _ = pg_vectors(pg_url)[text]
    assert model == label(embedder)
    assert float(vector @ await embedder.embed_query(text)) > 0.99


async def test_a_forgotten_memory_never_comes_back_on_the_other_side(
        tmp_path: Path, pg_url: str, embedder: Embedder) -> None:
    """Forgotten before the first run: its hash travels, so an old export cannot bring it
    back there. Forgotten between two runs: the row the first run copied is erased there.
    And the same on the way back: what was forgotten on PostgreSQL leaves rumi.db."""
    data = tmp_path / "data"
    await fill_sqlite(data, embedder)
    async with open_sqlite(data, embedder) as store:
        tea = next(m for m in await store.list("111") if m.content.startswith("prefiere"))
        old_line = next(line for line in await store.export_jsonl("111")
                        if json.loads(line)["id"] == tea.id)
        await store.forget("111", memory_id=tea.id)

    first = rumi(tmp_path, "--to", "postgres", url=pg_url)
    assert first.returncode == 0, first.stderr[-3000:]
    assert "1 forgotten texts carried" in first.stdout
    contents = [c for _, c, _, _ in pg_rows(pg_url)]
    assert tea.content not in contents
    async with open_pg(pg_url, "trabajo", embedder) as pg:
        report = await pg.import_report("111", [old_line])
        assert (report.imported, report.forgotten) == (0, 1)

    async with open_sqlite(data, embedder) as store:
        key = next(m for m in await store.list("111") if m.content.startswith("la llave"))
        await store.forget("111", memory_id=key.id)
    second = rumi(tmp_path, "--to", "postgres", url=pg_url)
    assert second.returncode == 0, second.stderr[-3000:]
    assert "1 erased there (forgotten here)" in second.stdout
    assert key.content not in [c for _, c, _, _ in pg_rows(pg_url)]

    async with open_pg(pg_url, "trabajo", embedder) as pg:
        meeting = (await pg.list("-100222"))[0]
        await pg.forget("-100222", memory_id=meeting.id)
    back = rumi(tmp_path, "--to", "sqlite", url=pg_url, backend="postgres")
    assert back.returncode == 0, back.stderr[-3000:]
    with sqlite3.connect(data / "rumi.db") as conn:
        left = [r[0] for r in conn.execute("SELECT content FROM memories")]
    assert meeting.content not in left and key.content not in left and tea.content not in left
    assert "su perra se llama Luna y tiene 3 años" in left


async def test_a_migration_killed_midway_loses_nothing_and_a_rerun_completes_it(
        tmp_path: Path, pg_url: str, embedder: Embedder) -> None:
    """kill -9 after the first chat was committed (the test holds a lock the next step
    needs, so the moment is certain, not a race): the source is intact, the target holds
    whole chats only, and the next run copies exactly what is left."""
    data = tmp_path / "data"
    await fill_sqlite(data, embedder)
    source_bytes = (data / "rumi.db").read_bytes()
    async with open_pg(pg_url, "casa", embedder):
        pass   # the schema made, so the lock below has a table to hold
    with psycopg.connect(pg_url) as blocker:
        blocker.execute("LOCK TABLE rumi.memory_switch IN ACCESS EXCLUSIVE MODE")
        env = without_rumi_settings()
        env.update(HOME=str(tmp_path), RUMI_STORE_URL=pg_url)
        proc = subprocess.Popen([*RUMI, "store", "migrate", "--config",
                                 str(write_config(tmp_path)), "--to", "postgres"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
        try:
            deadline = time.monotonic() + 240
            with psycopg.connect(pg_url, autocommit=True) as watch:
                while time.monotonic() < deadline and proc.poll() is None:
                    waiting = watch.execute("SELECT count(*) FROM pg_locks WHERE NOT granted "
                                            "AND relation = 'rumi.memory_switch'::regclass"
                                            ).fetchone()
                    if waiting and waiting[0]:
                        break
                    time.sleep(0.1)
            assert proc.poll() is None, proc.communicate()
            os.kill(proc.pid, signal.SIGKILL)
        finally:
            if proc.poll() is None:
                proc.kill()
            proc.communicate()
        blocker.rollback()
    assert proc.returncode == -signal.SIGKILL
    half = pg_rows(pg_url)
    assert {o for o, _, _, _ in half} == {"-100222"} and len(half) == 1  # one whole chat
    assert (data / "rumi.db").read_bytes() == source_bytes

    rerun = rumi(tmp_path, "--to", "postgres", url=pg_url)
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    assert "4 of 5 memories copied (1 were already there)" in rerun.stdout
    assert "sample recall: found" in rerun.stdout
    rows = pg_rows(pg_url)
    assert len(rows) == 5 and len(set(rows)) == 5
    with psycopg.connect(pg_url) as conn:
        assert conn.execute("SELECT enabled FROM rumi.memory_switch WHERE chat_id = '-100222'"
                            ).fetchone() == (False,)


async def test_reminders_time_zones_and_blocks_travel_both_ways_once(
        tmp_path: Path, pg_url: str, embedder: Embedder) -> None:
    """This Rumi's live reminders (not the delivered ones) and its chats' time zones go to
    PostgreSQL as `casa`'s, context blocks with them; a second run adds nothing; and the way
    back brings them into a new data dir's rumi.db."""
    from datetime import UTC, datetime, timedelta

    from rumi.memory.store.blocks import BlockScope, BlockStore
    from rumi.reminders.store import ReminderStore

    data = tmp_path / "data"
    await fill_sqlite(data, embedder)
    now = datetime.now(UTC)
    due = now + timedelta(days=1)
    reminders = ReminderStore(data / "rumi.db")
    await reminders.open()
    try:
        await reminders.add("111", "regar las plantas", is_task=False, recurrence=None,
                            timezone="America/Lima", due_at=due, now=now)
        weekly = await reminders.add("-100222", "reunión", is_task=True, recurrence="weekly",
                                     timezone="Europe/Madrid", due_at=due, now=now,
                                     set_by="111")
        done = await reminders.add("111", "ya pasó", is_task=False, recurrence=None,
                                   timezone="America/Lima", due_at=now, now=now)
        assert await reminders.claim(done.id, now) is not None
        assert await reminders.delivered(done.id, None, now)
        await reminders.set_chat_timezone("111", "America/Lima")
    finally:
        await reminders.close()
    async with open_sqlite(data, embedder) as store:
        blocks = BlockStore(store)
        await blocks.upsert("tono", "Responde breve y en español.", priority=5)
        await blocks.upsert("casa", "Vive con su perra Luna.", scope=BlockScope.CHAT,
                            chat_id="111")

    first = rumi(tmp_path, "--to", "postgres", url=pg_url)
    assert first.returncode == 0, first.stderr[-3000:]
    assert "reminders: 2 of 2 pending copied (0 were already there); 1 chat time zones " \
           "copied" in first.stdout
    assert "context blocks: 2 of 2 copied" in first.stdout
    assert sorted(rows_of(pg_url, "SELECT server_code, chat_id, text, is_task, recurrence, "
                                  "set_by, state FROM rumi.reminders")) == [
        ("casa", "-100222", "reunión", True, "weekly", "111", "pending"),
        ("casa", "111", "regar las plantas", False, None, None, "pending")]
    assert rows_of(pg_url, "SELECT due_at FROM rumi.reminders WHERE text = 'reunión'") == \
        [(weekly.due_at,)]
    assert sorted(rows_of(pg_url, "SELECT code, content FROM cto.blocks")) == [
        ("casa", "Vive con su perra Luna."), ("tono", "Responde breve y en español.")]

    again = rumi(tmp_path, "--to", "postgres", url=pg_url)
    assert again.returncode == 0, again.stderr[-3000:]
    assert "reminders: 0 of 2 pending copied (2 were already there); 0 chat" in again.stdout
    assert "context blocks: 0 of 2 copied" in again.stdout
    assert "nothing new to move" in again.stdout
    assert len(rows_of(pg_url, "SELECT id FROM rumi.reminders")) == 2

    back_dir = tmp_path / "back"
    back_dir.mkdir()
    back = rumi(back_dir, "--to", "sqlite", url=pg_url, backend="postgres")
    assert back.returncode == 0, back.stderr[-3000:]
    assert "reminders: 2 of 2 pending copied" in back.stdout
    reminders = ReminderStore(back_dir / "data" / "rumi.db")
    await reminders.open()
    try:
        assert sorted((r.chat_id, r.text, r.due_at) for r in await reminders.live()) == [
            ("-100222", "reunión", weekly.due_at), ("111", "regar las plantas", due)]
        assert await reminders.chat_timezone("111") == "America/Lima"
    finally:
        await reminders.close()


def rows_of(url: str, sql: str) -> list[tuple[object, ...]]:
    with psycopg.connect(url) as conn:
        return conn.execute(sql).fetchall()


async def test_vectors_of_the_same_model_without_the_question_context_name_the_setting(
        tmp_path: Path, embedder: Embedder) -> None:
    """A data dir embedded before `recall_vector_context` (or with it off): same model, other
    recipe. The refusal names the setting that copies them as they are, not another model."""
    plain = memory_settings().model_copy(update={"recall_vector_context": False})
    store = await MemoryStore.open(tmp_path / "rumi.db", plain, embedder,
                                   VectorIndex(tmp_path / "vectors", embedder.dim,
                                               embedder.model_name))
    try:
        await store.save("5", NewMemory(content="el tren sale a las nueve"))
        with pytest.raises(ModelMismatch) as refused:
            await check_models(store, label(embedder), reembed=False)
        await check_models(store, label(embedder), reembed=True)   # --reembed: no refusal
        await check_models(store, embedder.model_name, reembed=False)   # the same recipe
    finally:
        await store.close()
    assert "set memory.recall_vector_context = false to copy them as they are" \
        in str(refused.value)
    assert "memory.embedding_model" not in str(refused.value)

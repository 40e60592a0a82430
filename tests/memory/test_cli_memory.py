"""`rumi memory ...` end to end: the real CLI entry point against a real rumi.db."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from rumi.cli import main
from rumi.config_load import load_settings
from rumi.memory.factory import open_memory_store
from rumi.memory.store.models import MemoryType, NewMemory
from tests.conftest import MODEL_DIR
from tests.memory.conftest import TEST_MODEL


@pytest.fixture
def config(tmp_path: Path, data_dir: Path, model_dir: Path) -> Path:
    path = tmp_path / "config.toml"
    path.write_text(
        f'data_dir = "{data_dir}"\n[memory]\nembedding_model = "{TEST_MODEL}"\n'
        f'embedding_model_path = "{MODEL_DIR}"\nembedding_threads = 2\n'
        "embedding_load_wait_seconds = 600\n",
        encoding="utf-8",
    )
    return path


def _seed(config: Path, chat: str, items: list[NewMemory]) -> list[int]:
    async def go() -> list[int]:
        store = await open_memory_store(load_settings(config, env={}))
        try:
            return [r.memory.id for r in await store.save_many(chat, items)]
        finally:
            await store.close()
    return asyncio.run(go())


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_stats_list_search_forget(config: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ids = _seed(config, "77", [
        NewMemory("Juan trabaja en Google", key="trabajo"),
        NewMemory("Le encanta la canción Yesterday", type=MemoryType.PREFERENCE),
        NewMemory("Fue a Oaxaca en marzo", type=MemoryType.EPISODIC),
    ])
    _seed(config, "78", [NewMemory("Secreto del otro chat: Google")])
    c = str(config)
    code, out, _ = _run(capsys, "memory", "stats", "--chat", "77", "-c", c)
    assert code == 0 and "3 memories, 3 active, 3 with vectors" in out
    assert "preference" in out and "episodic" in out and "available" in out
    code, out, _ = _run(capsys, "memory", "stats", "--chat", "77", "--json", "-c", c)
    assert json.loads(out)["by_type"] == {"fact": 1, "preference": 1, "episodic": 1}
    code, out, _ = _run(capsys, "memory", "list", "--chat", "77", "--type", "fact", "-c", c)
    assert code == 0 and "Juan trabaja en Google" in out and "Oaxaca" not in out
    assert out.splitlines()[0].split() == ["id", "type", "status", "imp", "key", "updated",
                                           "content"]
    code, out, _ = _run(capsys, "memory", "search", "--chat", "77", "--mode", "keyword",
                        "cancion", 'NEAR("*', "-c", c)
    assert code == 0 and "Yesterday" in out and "keyword search, 1 results" in out
    code, out, _ = _run(capsys, "memory", "search", "--chat", "77", "--mode", "vector",
                        "-k", "1", "viaje a Oaxaca en marzo", "-c", c)
    assert code == 0 and "Oaxaca" in out
    code, out, _ = _run(capsys, "memory", "search", "--chat", "77", "Google", "-c", c)
    assert code == 0 and "Juan" in out and "Secreto" not in out
    code, out, _ = _run(capsys, "memory", "forget", "--chat", "77", "--key", "trabajo", "-c", c)
    assert code == 0 and "forgot 1 memories" in out and str(ids[0]) in out
    code, out, _ = _run(capsys, "memory", "forget", "--chat", "77", "--id", "9999", "-c", c)
    assert code == 0 and "nothing to forget" in out
    code, out, _ = _run(capsys, "memory", "list", "--chat", "77", "--status", "all", "-c", c)
    assert "Juan trabaja en Google" not in out  # erased, not kept as a 'deleted' row
    code, out, _ = _run(capsys, "memory", "stats", "--chat", "78", "-c", c)
    assert "1 memories" in out


def test_purge_reindex_export_import(config: Path, tmp_path: Path,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    from datetime import UTC, datetime, timedelta
    past = datetime.now(UTC) - timedelta(days=1)
    _seed(config, "80", [NewMemory("ya caducó", type=MemoryType.EPISODIC, expires_at=past),
                         NewMemory("sigue vigente")])
    c = str(config)
    code, out, _ = _run(capsys, "memory", "purge", "--chat", "79", "-c", c)
    assert code == 0 and "expired 0 memories (chat 79)" in out
    code, out, _ = _run(capsys, "memory", "purge", "-c", c)
    assert code == 0 and "expired 1 memories (all chats)" in out
    code, out, _ = _run(capsys, "memory", "reindex", "--chat", "80", "-c", c)
    assert code == 0 and "index holds 1 vectors" in out
    dump = tmp_path / "dump.jsonl"
    code, _, err = _run(capsys, "memory", "export", "--chat", "80", "--out", str(dump), "-c", c)
    assert code == 0 and "wrote 2 memories" in err
    dump.write_text(dump.read_text() + "{not json\n")
    code, out, err = _run(capsys, "memory", "import", "--chat", "81", str(dump), "-c", c)
    assert code == 0 and "imported 2, skipped 0 duplicates, 1 bad lines" in out
    assert "line 3" in err
    code, out, _ = _run(capsys, "memory", "list", "--chat", "81", "-c", c)
    assert "sigue vigente" in out and "ya caducó" not in out


def test_bad_input_is_one_line_not_a_traceback(config: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    c = str(config)
    code, out, err = _run(capsys, "memory", "list", "--chat", "../etc", "-c", c)
    assert code == 1 and err.strip() == "rumi memory: Identificador de chat no válido."
    code, out, err = _run(capsys, "memory", "forget", "--chat", "1", "--text", '"*"', "-c", c)
    assert code == 1 and "Traceback" not in err and err.count("\n") == 1
    code, out, err = _run(capsys, "memory", "import", "--chat", "1", "/nonexistent.jsonl", "-c", c)
    assert code == 1 and "cannot read" in err
    code, out, err = _run(capsys, "memory", "stats", "--chat", "1", "-c", str(config) + ".nope")
    assert code == 2 and "config error" in err


def test_keyword_only_when_model_missing(tmp_path: Path, data_dir: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "broken.toml"
    config.write_text(f'data_dir = "{data_dir}"\n[memory]\n'
                      f'embedding_model_path = "{tmp_path / "no-model"}"\n', encoding="utf-8")
    _seed(config, "90", [NewMemory("El perro se llama Toby")])
    code, out, _ = _run(capsys, "memory", "search", "--chat", "90", "perro", "-c", str(config))
    assert code == 0 and "Toby" in out
    code, out, err = _run(capsys, "memory", "search", "--chat", "90", "--mode", "vector", "perro",
                          "-c", str(config))
    assert code == 1 and "semantic search unavailable" in err
    code, out, _ = _run(capsys, "memory", "stats", "--chat", "90", "-c", str(config))
    assert "0 with vectors" in out and "unavailable" in out


def test_stats_name_the_vector_context_recipe(config: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    c, default = str(config), config.read_text(encoding="utf-8")
    config.write_text(default + "recall_vector_context = false\n", encoding="utf-8")
    _seed(config, "77", [NewMemory("Ana: ¿Qué tal el museo?"), NewMemory("Ben: Genial.")])
    code, out, _ = _run(capsys, "memory", "stats", "--chat", "77", "-c", c)
    assert code == 0 and "question before it" not in out
    config.write_text(default, encoding="utf-8")   # the default: on
    code, out, _ = _run(capsys, "memory", "stats", "--chat", "77", "-c", c)
    assert code == 0 and "each vector with the question before it: asked-before-1" in out
    assert "2 memories, 2 active, 0 with vectors" in out   # re-embedded in the background

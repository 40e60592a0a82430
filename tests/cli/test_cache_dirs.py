"""Downloaded models are cached under the data dir (survives a reboot), not in /tmp; an
explicit environment variable still wins."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from rumi.caches import cache_dirs, data_dir_caches
from rumi.memory.factory import open_memory_store


def _clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("FASTEMBED_CACHE_PATH", "TIKTOKEN_CACHE_DIR", "DATA_GYM_CACHE_DIR")}
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[2])
    env.update(extra)
    return env


def _models_path(tmp_path: Path, env: dict[str, str]) -> str:
    config = tmp_path / "config.toml"
    config.write_text(f'data_dir = "{tmp_path / "data"}"\n'   # a model fastembed downloads
                      '[memory]\nembedding_model = '
                      '"sentence-transformers/paraphrase-multilingual-MiniLM-L12-v2"\n',
                      encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-c", "import sys; from rumi.cli import main; sys.exit(main())",
         "models", "path", "--config", str(config)],
        env=env, capture_output=True, text=True, timeout=120, check=False)
    return done.stdout + done.stderr


def test_a_fresh_start_caches_models_and_tokenizer_under_the_data_dir(tmp_path) -> None:
    out = _models_path(tmp_path, _clean_env())
    data = tmp_path / "data"
    assert f"stores it under {data / 'cache' / 'fastembed'}" in out, out
    assert f"tokenizer cache: {data / 'cache' / 'tiktoken'}" in out, out
    assert "/tmp/fastembed_cache" not in out and "data-gym-cache" not in out


def test_an_explicit_environment_variable_still_wins(tmp_path) -> None:
    mine = tmp_path / "mine"
    out = _models_path(tmp_path, _clean_env(FASTEMBED_CACHE_PATH=str(mine / "fe"),
                                            TIKTOKEN_CACHE_DIR=str(mine / "tk")))
    assert f"stores it under {mine / 'fe'}" in out, out
    assert f"tokenizer cache: {mine / 'tk'}" in out, out


def test_the_environment_is_put_back_after_a_command(tmp_path) -> None:
    env: dict[str, str] = {"DATA_GYM_CACHE_DIR": "/srv/old"}
    with data_dir_caches(tmp_path, env) as dirs:
        assert env["FASTEMBED_CACHE_PATH"] == str(tmp_path / "cache" / "fastembed")
        assert "TIKTOKEN_CACHE_DIR" not in env   # tiktoken's older variable is honoured
        assert dirs.tiktoken == Path("/srv/old")
    assert env == {"DATA_GYM_CACHE_DIR": "/srv/old"}


async def test_the_embedder_downloads_into_the_data_dir(make_settings, monkeypatch) -> None:
    monkeypatch.delenv("FASTEMBED_CACHE_PATH", raising=False)
    settings = make_settings("[memory]\nembeddings_enabled = true\n")
    store = await open_memory_store(settings)
    try:
        assert store.embedder.cache_dir == cache_dirs(settings.data_dir).fastembed
        assert store.embedder.cache_dir == settings.data_dir / "cache" / "fastembed"
    finally:
        await store.close()

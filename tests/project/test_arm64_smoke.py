"""The arm64 smoke's driver (scripts/arm64_smoke.py), run here against this machine's Rumi: CI
trusts its verdict about the emulated Pi, so it must pass a working Rumi and catch a broken one."""

from __future__ import annotations

import importlib.util
import json
import os
import shlex
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from tests.conftest import MODEL_DIR, REPO, TIKTOKEN_DIR

DRIVER = REPO / "scripts" / "arm64_smoke.py"
SHELL = REPO / "scripts" / "arm64_smoke.sh"
THIS_RUMI = shlex.join([sys.executable, "-c",
                        "import sys; from rumi.cli import main; sys.exit(main())"])


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The layout the smoke reads (`models/all-MiniLM-L6-v2-onnx`, `tiktoken`), pointing at
    the shared files or the session's stand-ins, so a fresh clone runs these tests too."""
    root = tmp_path_factory.mktemp("shared")
    (root / "models").mkdir()
    (root / "models" / "all-MiniLM-L6-v2-onnx").symlink_to(MODEL_DIR, target_is_directory=True)
    (root / "tiktoken").symlink_to(TIKTOKEN_DIR, target_is_directory=True)
    return str(root)


@pytest.fixture(scope="module")
def driver() -> ModuleType:
    spec = importlib.util.spec_from_file_location("arm64_smoke", DRIVER)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(DRIVER), *args], capture_output=True, text=True,
                          timeout=600, check=False, cwd=REPO)


def test_smoke_passes_a_working_rumi_with_answer_and_recall(shared: str) -> None:
    result = _run("--rumi", THIS_RUMI, "--shared", shared)
    assert result.returncode == 0, result.stderr
    outcome = json.loads(result.stdout)
    assert outcome["ok"] is True
    assert {outcome["doctor"][name] for name in ("groq", "telegram", "embedding model",
                                                 "tokenizer", "architecture")} == {"OK"}
    assert {"doctor_s", "models_verify_s", "chat_s"} <= outcome.keys()


def test_smoke_fails_in_one_line_when_rumi_does_not_run(shared: str) -> None:
    result = _run("--rumi", "/bin/false", "--shared", shared)
    assert result.returncode == 1
    assert result.stderr.startswith("arm64 smoke: FAIL: rumi doctor printed no JSON")
    assert "Traceback" not in result.stderr


def test_smoke_fails_in_one_line_when_rumi_is_not_installed(shared: str) -> None:
    result = _run("--rumi", "/nonexistent/bin/rumi", "--shared", shared)
    assert result.returncode == 1
    assert result.stderr.startswith("arm64 smoke: FAIL: cannot start /nonexistent/bin/rumi")
    assert "Traceback" not in result.stderr


def test_smoke_fails_when_doctor_runs_on_another_architecture(shared: str) -> None:
    result = _run("--rumi", THIS_RUMI, "--shared", shared, "--machine", "riscv64")
    assert result.returncode == 1
    assert "not riscv64" in result.stderr


def _doctor_json(**statuses: str) -> str:
    rows = [{"name": name, "status": "OK", "detail": "aarch64, 64-bit userland"
             if name == "architecture" else "fine"} for name in ("config", "groq", "telegram",
            "architecture", "data dir", "sqlite", "memory database", "tokenizer",
            "embedding model", "docker")]
    for row in rows:
        row["status"] = statuses.get(row["name"].replace(" ", "_"), row["status"])
    return json.dumps(rows)


def test_doctor_verdict_refuses_a_fail_and_a_warning_where_ok_is_needed(driver) -> None:
    assert driver._check_doctor(0, _doctor_json(docker="WARN"), "", "aarch64")["docker"] == "WARN"
    with pytest.raises(driver.SmokeFailure, match="rumi doctor failed"):
        driver._check_doctor(1, _doctor_json(docker="FAIL"), "", "aarch64")
    with pytest.raises(driver.SmokeFailure, match="embedding model: WARN"):
        driver._check_doctor(0, _doctor_json(embedding_model="WARN"), "", "aarch64")


def test_embedding_verdict_needs_vectors(driver) -> None:
    driver._check_embeddings(0, "model sentence-transformers/x OK: 384-d vectors, similarity "
                                "of a test pair 0.52\n", "")
    with pytest.raises(driver.SmokeFailure, match="does not load"):
        driver._check_embeddings(1, "", "rumi models: the model does not load: no onnxruntime")


def _request(*messages: tuple[str, str]) -> dict:
    return {"messages": [{"role": role, "content": text} for role, text in messages]}


def test_chat_verdict_needs_the_fact_to_come_from_memory(driver) -> None:
    fact = "Quillka-0123abcd"
    out = f"rumi> SMOKE-HELLO\nrumi> SMOKE-RECALL {fact}\n"
    question = ("user", "¿Cómo se llama mi gata?")
    recalled = _request(question, ("user", f"[memorias]\n- Mi gata se llama {fact}"))
    driver._check_chat(0, out, "", fact, [recalled])
    echoed = _request(("user", f"/remember mascota: Mi gata se llama {fact}"), question,
                      ("user", "[memorias]"))
    with pytest.raises(driver.SmokeFailure, match="from memory"):
        driver._check_chat(0, out, "", fact, [echoed])
    with pytest.raises(driver.SmokeFailure, match="did not recall"):
        driver._check_chat(0, "rumi> SMOKE-HELLO\nrumi> SMOKE-FORGOT\n", "", fact, [recalled])
    with pytest.raises(driver.SmokeFailure, match="exited 1"):
        driver._check_chat(1, out, "Traceback (most recent call last):", fact, [recalled])


def test_recaller_answers_only_from_what_the_prompt_holds(driver) -> None:
    recaller = driver.Recaller("Quillka-1")
    question = ("user", "¿Cómo se llama mi gata?")
    assert recaller(_request(("user", "hola")))["content"] == "SMOKE-HELLO"
    assert recaller(_request(question))["content"] == "SMOKE-FORGOT"
    assert recaller(_request(("system", "memorias: Quillka-1"), question))["content"] == \
        "SMOKE-RECALL Quillka-1"


def test_ci_runs_the_arm64_smoke() -> None:
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    assert "scripts/arm64_smoke.sh" in ci and "check_arm64_wheels" not in ci


def test_smoke_script_refuses_unknown_arguments_before_doing_anything() -> None:
    result = subprocess.run(["bash", str(SHELL), "--frobnicate"], capture_output=True,
                            text=True, timeout=60, check=False)
    assert result.returncode == 2
    assert "unknown argument: --frobnicate" in result.stderr


@pytest.mark.parametrize(("env", "reason"), [
    ({"RUMI_SHARED_DIR": "/nonexistent/shared"}, "the shared embedding model is missing"),
    ({"PYTHON": "/bin/false"}, "lacks the test dependencies"),
])
def test_smoke_script_fails_in_one_line_before_building_anything(tmp_path: Path, env: dict,
                                                                  reason: str,
                                                                  shared: str) -> None:
    """Prerequisites are checked first: a CI log says why in one line, and nothing is built."""
    cache = tmp_path / "cache"
    result = subprocess.run(["bash", str(SHELL), "--cache", str(cache)], capture_output=True,
                            text=True, timeout=60, check=False,
                            env={**os.environ, "RUMI_SHARED_DIR": shared, **env})
    assert result.returncode == 1
    [line] = result.stderr.splitlines()
    assert line.startswith("arm64 smoke: FAIL: ")
    assert reason in line or (os.geteuid() != 0 and "needs root" in line)
    assert not cache.exists()

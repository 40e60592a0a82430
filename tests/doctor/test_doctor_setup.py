"""Doctor's checks of Rumi's own set-up (config, embedding model), the runner and the CLI."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from rumi.app import builtin_features
from rumi.base.checks import Status
from rumi.cli import main
from rumi.doctor.checks import check_config, check_embedding_model
from rumi.doctor.modelfiles import model_cache_dir
from rumi.doctor.runner import Host, _guarded, all_checks, run_checks
from tests.conftest import MODEL_DIR, require
from tests.fakes.groq_server import FakeGroqServer
from tests.fakes.telegram_server import FakeTelegramServer

GOOD = """
[llm]
api_key = "gsk_doctor_test_key_0001"
[telegram]
token = "5555:doctor-telegram-token"
allowed_users = [42]
"""


def test_config_complete_passes(make_settings, tmp_path: Path) -> None:
    settings = make_settings(GOOD)
    settings.source.chmod(0o600)
    result = check_config(settings)
    assert result.status is Status.OK, result
    assert "…0001" in result.detail and "gsk_doctor_test_key" not in result.detail
    assert "doctor-telegram-token" not in result.detail


def test_config_without_groq_key_fails(make_settings) -> None:
    result = check_config(make_settings('[telegram]\ntoken = "1:a"\n'))
    assert result.status is Status.FAIL and "GROQ_API_KEY" in result.fix


def test_config_without_telegram_token_warns(make_settings) -> None:
    result = check_config(make_settings('[llm]\napi_key = "gsk_1"\n'))
    assert result.status is Status.WARN and "BotFather" in result.fix


def test_config_without_allowed_users_warns(make_settings) -> None:
    settings = make_settings('[llm]\napi_key = "gsk_1"\n[telegram]\ntoken = "1:abcdefgh"\n')
    result = check_config(settings)
    assert result.status is Status.WARN and "allowed_users" in result.detail
    assert "rumi setup" in result.fix and "rumi pairing" in result.fix


def test_config_world_readable_warns(make_settings) -> None:
    settings = make_settings(GOOD)
    settings.source.chmod(0o644)
    result = check_config(settings)
    assert result.status is Status.WARN and "chmod 600" in result.fix


def test_embedding_model_local_copy(make_settings, model_dir: Path, tmp_path: Path) -> None:
    settings = make_settings(
        '[memory]\nembedding_model = "sentence-transformers/all-MiniLM-L6-v2"\n'
        f'embedding_model_path = "{model_dir}"\n')
    result = check_embedding_model(settings, tmp_path / "cache")
    assert result.status is Status.OK and str(model_dir) in result.detail


def test_embedding_model_local_copy_missing_fails(make_settings, tmp_path: Path) -> None:
    broken = tmp_path / "model"
    broken.mkdir()
    (broken / "tokenizer.json").write_text("{}")
    settings = make_settings(f'[memory]\nembedding_model_path = "{broken}"\n')
    result = check_embedding_model(settings, tmp_path / "cache")
    assert result.status is Status.FAIL and "model.onnx" in result.detail


HUB_MODEL = ('[memory]\nembedding_model = '
             '"sentence-transformers/paraphrase-multilingual-MiniLM-L12-v2"\n')


def test_embedding_model_found_in_fastembed_cache(make_settings, tmp_path: Path) -> None:
    snapshot = (tmp_path / "cache" / "models--qdrant--paraphrase-multilingual-MiniLM-L12-v2-onnx-Q"
                / "snapshots" / "0123abcd")
    snapshot.mkdir(parents=True)
    (snapshot / "model_optimized.onnx").write_bytes(b"onnx")
    result = check_embedding_model(make_settings(HUB_MODEL), tmp_path / "cache")
    assert result.status is Status.OK and str(snapshot) in result.detail


def test_embedding_model_not_downloaded_warns(make_settings, tmp_path: Path) -> None:
    result = check_embedding_model(make_settings(HUB_MODEL), tmp_path / "empty-cache")
    assert result.status is Status.WARN and "rumi models download" in result.fix


def test_embedding_model_unknown_name_fails(make_settings, tmp_path: Path) -> None:
    settings = make_settings('[memory]\nembedding_model = "nobody/no-such-model"\n')
    result = check_embedding_model(settings, tmp_path / "cache")
    assert result.status is Status.FAIL


def test_embedding_model_disabled_passes(make_settings, tmp_path: Path) -> None:
    settings = make_settings("[memory]\nembeddings_enabled = false\n")
    assert check_embedding_model(settings, tmp_path).status is Status.OK


def test_model_cache_dir_follows_fastembed(tmp_path: Path) -> None:
    assert model_cache_dir({"FASTEMBED_CACHE_PATH": str(tmp_path)}) == tmp_path
    assert model_cache_dir({}).name == "fastembed_cache"


async def test_guarded_turns_crash_and_hang_into_failures(make_settings) -> None:
    settings = make_settings()

    async def crash(s, h):
        raise RuntimeError("boom")

    async def hang(s, h):
        await asyncio.sleep(3600)

    crashed = await _guarded("x", crash, settings, Host(), limit=5)
    hung = await _guarded("y", hang, settings, Host(), limit=0.05)
    assert crashed.status is Status.FAIL and "RuntimeError: boom" in crashed.detail
    assert hung.status is Status.FAIL and "did not finish" in hung.detail


async def test_run_checks_all_against_fakes(make_settings, fake_groq: FakeGroqServer,
                                            tmp_path: Path) -> None:
    require((MODEL_DIR / "model.onnx").exists(), f"shared model missing at {MODEL_DIR}")
    telegram = await FakeTelegramServer("5555:doctor-telegram-token").start()
    try:
        settings = make_settings(GOOD + f'base_url = "{telegram.base_url}"\n'
                                 f'[memory]\nembedding_model_path = "{MODEL_DIR}"\n'
                                 f'embedding_model = "sentence-transformers/all-MiniLM-L6-v2"\n')
        settings.llm.base_url = fake_groq.base_url
        settings.llm.model = "fake"
        results = await run_checks(settings, Host(env={"TIKTOKEN_CACHE_DIR": str(tmp_path)}),
                                   features=builtin_features())
    finally:
        await telegram.stop()
    by_name = {r.name: r for r in results}
    assert list(by_name) == list(all_checks(builtin_features()))
    assert by_name["groq"].status is Status.OK
    assert by_name["telegram"].status is Status.OK
    assert by_name["tokenizer"].status is Status.WARN
    assert by_name["sqlite"].status is Status.OK


async def test_run_checks_subset_and_unknown(make_settings) -> None:
    results = await run_checks(make_settings(), only=["sqlite", "architecture"],
                               features=builtin_features())
    assert [r.name for r in results] == ["architecture", "sqlite"]
    with pytest.raises(ValueError, match="nonsense"):
        await run_checks(make_settings(), only=["nonsense"])


def _config(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "doctor.toml"
    path.write_text(f'data_dir = "{tmp_path / "data"}"\n' + text)
    path.chmod(0o600)
    return path


def test_cli_table_with_fixes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cfg = _config(tmp_path, "")
    code = main(["doctor", "--config", str(cfg), "--check", "config", "--check", "sqlite"])
    out = capsys.readouterr().out
    assert code == 1
    assert "FAIL  config" in out and "fix: set llm.api_key" in out
    assert "OK    sqlite" in out and "2 checks: 1 OK, 0 WARN, 1 FAIL" in out


def test_cli_quiet_prints_only_failures(tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    cfg = _config(tmp_path, "")
    code = main(["doctor", "-q", "--config", str(cfg), "--check", "config", "--check", "sqlite"])
    out = capsys.readouterr().out
    assert code == 1 and "FAIL  config" in out and "sqlite" not in out


def test_cli_quiet_is_silent_when_healthy(tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    cfg = _config(tmp_path, GOOD)
    code = main(["doctor", "--quiet", "--config", str(cfg), "--check", "config",
                 "--check", "sqlite", "--check", "data dir"])
    assert code == 0 and capsys.readouterr().out == ""


def test_cli_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cfg = _config(tmp_path, GOOD)
    assert main(["doctor", "--json", "--config", str(cfg), "--check", "config"]) == 0
    [row] = json.loads(capsys.readouterr().out)
    assert row["name"] == "config" and row["status"] == "OK"
    assert "gsk_doctor_test_key" not in json.dumps(row)


def test_cli_never_prints_secrets(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = GOOD.replace('"gsk_doctor_test_key_0001"', '"gsk_SUPERSECRET_77"')
    cfg = _config(tmp_path, text.replace("[llm]\n", '[llm]\nbase_url = "http://127.0.0.1:9"\n'))
    main(["doctor", "--config", str(cfg), "--check", "config", "--check", "groq"])
    captured = capsys.readouterr()
    assert "SUPERSECRET" not in captured.out + captured.err


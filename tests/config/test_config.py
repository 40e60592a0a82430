import os
from pathlib import Path

import pytest

from rumi import __version__
from rumi.cli import main
from rumi.config import ConfigError
from rumi.config_load import load_settings


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "config.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_defaults_and_file_values(tmp_path: Path) -> None:
    cfg = write(tmp_path, 'data_dir = "~/rumi-data"\n[llm]\nmodel = "m"\ncontext_window = 8192\n')
    settings = load_settings(cfg, env={})
    assert settings.llm.model == "m"
    assert settings.llm.context_window == 8192
    assert settings.data_dir == Path("~/rumi-data").expanduser()
    assert settings.context.optimize_threshold == 50
    assert settings.sandbox.network_mode == "none"


def test_env_overrides_secrets_and_nested_keys(tmp_path: Path) -> None:
    cfg = write(tmp_path, '[llm]\napi_key = "from-file"\n')
    env = {"GROQ_API_KEY": "gsk_env", "TELEGRAM_TOKEN": "1:abc", "RUMI_LLM__MODEL": "x",
           "RUMI_LOG_LEVEL": "DEBUG"}
    settings = load_settings(cfg, env=env)
    assert settings.llm.api_key == "gsk_env"
    assert settings.telegram.token == "1:abc"
    assert settings.llm.model == "x"
    assert settings.log_level == "DEBUG"


def test_env_reads_only_rumi_variables_that_name_a_setting(tmp_path: Path) -> None:
    env = {"RUMI_SHARED_DIR": "/srv/shared", "RUMI_STRICT_TESTS": "1",
           "RUMI_TEST_BOT_IMAGE": "rumi:ci", "RUMI_SANDBOX__ENABLED": "false"}
    settings = load_settings(write(tmp_path, ""), env=env)
    assert settings.sandbox.enabled is False
    with pytest.raises(ConfigError, match="unknown key `llm.modle`"):
        load_settings(write(tmp_path, ""), env={"RUMI_LLM__MODLE": "x"})


def test_env_sets_list_and_dict_keys_as_json(tmp_path: Path) -> None:
    """A Docker or systemd deployment configures everything through the environment."""
    env = {"RUMI_TELEGRAM__ALLOWED_USERS": "[111, 222]",
           "RUMI_SANDBOX__EXTRA_VOLUMES": '["/srv/data:/data:ro"]',
           "RUMI_MEMORY__TTL_DAYS": '{"episodic": 7, "profile": null}'}
    settings = load_settings(write(tmp_path, ""), env=env)
    assert settings.telegram.allowed_users == [111, 222]
    assert settings.sandbox.extra_volumes == ["/srv/data:/data:ro"]
    assert settings.memory.ttl_days["episodic"] == 7 and settings.memory.ttl_days["profile"] is None


@pytest.mark.parametrize(
    ("env", "needle"),
    [
        ({"RUMI_SANDBOX__CPUS": "lots"}, "`sandbox.cpus`: Input should be a valid number"),
        ({"RUMI_TELEGRAM__ALLOWED_USERS": "111,222"}, "`telegram.allowed_users`: Input should"),
        ({"RUMI_TELEGRAM__ALLOWED_USERS": '["bob"]'}, "`telegram.allowed_users.0`"),
        ({"RUMI_LLM__MODLE": "x"}, "unknown key `llm.modle`"),
    ],
)
def test_bad_env_value_names_the_variable(tmp_path: Path, env: dict[str, str],
                                          needle: str) -> None:
    cfg = write(tmp_path, '[llm]\nmodel = "m"\n')
    with pytest.raises(ConfigError) as info:
        load_settings(cfg, env=env)
    message = str(info.value)
    assert message.startswith(f"environment variable {next(iter(env))}: ") and needle in message
    assert str(cfg) not in message  # the file is fine: blaming it would send people astray


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("[llm]\ncontext_window = \"big\"\n", "`llm.context_window`"),
        ("[llm]\nmodle = \"x\"\n", "unknown key `llm.modle`"),
        ("[telegram]\nallowed_users = [\"bob\"]\n", "`telegram.allowed_users.0`"),
        ("[llm\n", "invalid TOML"),
    ],
)
def test_bad_config_names_key_and_file(tmp_path: Path, text: str, needle: str) -> None:
    cfg = write(tmp_path, text)
    with pytest.raises(ConfigError) as info:
        load_settings(cfg, env={})
    message = str(info.value)
    assert needle in message
    assert str(cfg) in message
    assert "\n" not in message


WRONG_TYPES = [   # (section, key = value as written, what the one line must name)
    ("sandbox", 'read_only_root = "no"', "`sandbox.read_only_root`"),
    ("sandbox", 'enabled = "false"', "`sandbox.enabled`"),
    ("sandbox", "privileged = 0", "`sandbox.privileged`"),
    ("sandbox", 'cpus = "2"', "`sandbox.cpus`"),
    ("sandbox", "pids_limit = 128.0", "`sandbox.pids_limit`"),
    ("sandbox", "memory = 512", "`sandbox.memory`"),
    ("telegram", 'allowed_users = ["123"]', "`telegram.allowed_users.0`"),
    ("telegram", "allowed_users = [true]", "`telegram.allowed_users.0`"),
    ("telegram", "token = 123", "`telegram.token`"),
    ("llm", 'max_retries = "3"', "`llm.max_retries`"),
    ("llm", 'temperature = "0.5"', "`llm.temperature`"),
    ("memory", 'embeddings_enabled = "yes"', "`memory.embeddings_enabled`"),
    ("memory", 'ttl_days = {fact = "10"}', "`memory.ttl_days.fact`"),
    ("memory", "embedding_model_path = 3", "`memory.embedding_model_path`"),
    ("reminders", "enabled = 1", "`reminders.enabled`"),
    ("voice", 'max_file_mb = "25"', "`voice.max_file_mb`"),
]


@pytest.mark.parametrize(("section", "line", "needle"), WRONG_TYPES,
                         ids=[f"{s}.{line.split(' ')[0]}" for s, line, _ in WRONG_TYPES])
def test_a_value_of_the_wrong_type_is_refused_naming_the_key(
        tmp_path: Path, section: str, line: str, needle: str) -> None:
    """Strict types: 0.7.0 turned `read_only_root = "no"` into False without a word."""
    cfg = write(tmp_path, f"[{section}]\n{line}\n")
    with pytest.raises(ConfigError) as caught:
        load_settings(cfg, env={})
    text = str(caught.value)
    assert needle in text and str(cfg) in text and "\n" not in text


def test_what_people_legitimately_write_still_loads(tmp_path: Path) -> None:
    cfg = write(tmp_path, 'data_dir = "~/d"\n[sandbox]\ncpus = 2\nexec_timeout = 30\n'
                          '[memory]\nbackup_dir = "~/backups"\nttl_days = {fact = 10}\n'
                          "recall_min_score = 0\n[llm]\ntemperature = 1\n")
    settings = load_settings(cfg, env={})
    assert settings.sandbox.cpus == 2.0 and isinstance(settings.sandbox.cpus, float)
    assert settings.memory.backup_dir == Path("~/backups").expanduser()
    assert settings.memory.ttl_days["fact"] == 10.0 and settings.llm.temperature == 1.0
    # environment variables are text: they are converted as before
    env = {"RUMI_SANDBOX__READ_ONLY_ROOT": "false", "RUMI_SANDBOX__CPUS": "1.5"}
    settings = load_settings(cfg, env=env)
    assert settings.sandbox.read_only_root is False and settings.sandbox.cpus == 1.5


def test_missing_secret_is_reported(tmp_path: Path) -> None:
    settings = load_settings(write(tmp_path, ""), env={})
    with pytest.raises(ConfigError) as info:
        settings.require("llm.api_key")
    assert str(info.value) == (f"{settings.source}: llm.api_key is missing — run `rumi setup` "
                               "or set GROQ_API_KEY")


def test_missing_key_without_a_file_names_the_next_step(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """A fresh clone, no ~/.rumi/config.toml, no key: one line, "config" once, `rumi setup`."""
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    for name in [n for n in os.environ if n.startswith("RUMI_") or n == "GROQ_API_KEY"]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("RUMI_DATA_DIR", str(tmp_path / "data"))
    code = main(["chat"])
    err = capsys.readouterr().err
    assert code == 2
    assert err == ("rumi: config error: llm.api_key is missing — run `rumi setup` or set "
                   "GROQ_API_KEY\n")


def test_cli_exits_2_with_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cfg = write(tmp_path, "[sandbox]\nmemory = 5\n")
    code = main(["doctor", "--config", str(cfg)])
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1
    assert "sandbox.memory" in err and "Traceback" not in err


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["--version"])
    assert info.value.code == 0
    assert f"rumi {__version__}" in capsys.readouterr().out


def test_cli_chat_exits_2_with_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cfg = write(tmp_path, "[agent]\nmax_turns = \"many\"\n")
    code = main(["chat", "--config", str(cfg)])
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1
    assert "agent.max_turns" in err and str(cfg) in err and "Traceback" not in err


def test_cli_chat_requires_api_key(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["chat", "--config", str(write(tmp_path, ""))])
    err = capsys.readouterr().err
    assert code == 2 and "llm.api_key" in err and "GROQ_API_KEY" in err

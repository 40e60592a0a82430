"""Checks of Rumi's own set-up: config and secrets, the data directory, the tokenizer and
the embedding model (SQLite and rumi.db are memory's: `rumi/memory/checks.py`). Each takes its
inputs as arguments so a test can hand it a broken case without breaking the machine.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from collections.abc import Mapping
from pathlib import Path

from rumi.base.checks import CheckResult, failed, mask, passed, warned
from rumi.config import Settings
from rumi.doctor.modelfiles import locate_model, model_cache_dir, model_mismatch
from rumi.doctor.pi import existing_ancestor
from rumi.encoding import ENCODING, ENCODING_SHA256, cache_key
from rumi.fileio import sha256_file
from rumi.memory.vectors.packaged import packaged_model


def check_config(settings: Settings) -> CheckResult:
    """The file parsed (or `rumi doctor` would have stopped with exit 2); are the secrets and
    the allow-list there, and is a file holding secrets readable by everyone?"""
    name = "config"
    where = str(settings.source) if settings.source else "environment and defaults only"
    parts = [where, f"llm.api_key {mask(settings.llm.api_key)}",
             f"telegram.token {mask(settings.telegram.token)}"]
    if not settings.llm.api_key:
        return failed(name, "; ".join(parts), "set llm.api_key in the config or GROQ_API_KEY "
                      "(create a key at https://console.groq.com/keys)")
    if not settings.telegram.token:
        return warned(name, "; ".join(parts), "`rumi run` needs telegram.token or "
                      "TELEGRAM_TOKEN (talk to @BotFather, /newbot)")
    if not settings.telegram.allowed_users:
        return warned(name, "; ".join([*parts, "telegram.allowed_users is empty"]),
                      "run `rumi setup` to pair yourself as the owner with a code (or "
                      "approve the code the bot gave you: `rumi pairing list`)")
    parts.append(f"{len(settings.telegram.allowed_users)} allowed user(s)")
    if settings.source is not None and settings.source.exists():
        mode = settings.source.stat().st_mode
        if mode & stat.S_IROTH:
            return warned(name, "; ".join([*parts, "file is world-readable"]),
                          f"chmod 600 {settings.source} (it can hold your keys)")
    if settings.source is None:
        return warned(name, "; ".join(parts), "keep settings in a file: `rumi setup` "
                      "writes ~/.rumi/config.toml")
    return passed(name, "; ".join(parts))


def check_data_dir(path: Path) -> CheckResult:
    """Rumi must be able to write here, and nobody else should read it: it holds every chat's
    memory and history."""
    name = "data dir"
    if path.exists() and not path.is_dir():
        return failed(name, f"{path} exists but is not a directory",
                      "point data_dir at a directory")
    target = path if path.exists() else existing_ancestor(path)
    try:
        fd, probe = tempfile.mkstemp(prefix=".rumi-doctor-", dir=target)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        return failed(name, f"cannot write in {target}: {exc.strerror}",
                      f"sudo chown -R $(id -u):$(id -g) {path} or choose another data_dir")
    if not path.exists():
        return passed(name, f"{path} will be created (parent {target} is writable)")
    mode = stat.S_IMODE(path.stat().st_mode)
    if mode & 0o007:
        return warned(name, f"{path} is accessible to every user (mode {mode:o})",
                      f"chmod 700 {path} (it holds personal data)")
    return passed(name, f"{path} writable, mode {mode:o}")


def tiktoken_cache_dir(env: Mapping[str, str]) -> Path:
    if "TIKTOKEN_CACHE_DIR" in env:
        return Path(env["TIKTOKEN_CACHE_DIR"])
    if "DATA_GYM_CACHE_DIR" in env:
        return Path(env["DATA_GYM_CACHE_DIR"])
    return Path(tempfile.gettempdir()) / "data-gym-cache"


def check_tokenizer(env: Mapping[str, str]) -> CheckResult:
    """o200k_base (gpt-oss's vocabulary) counts tokens for the context dashboard. Without it
    Rumi estimates (chars/4), so a missing cache is a warning; a corrupt one is a failure
    offline."""
    name = "tokenizer"
    cache_dir = tiktoken_cache_dir(env)
    cached = cache_dir / cache_key()
    if not cached.is_file():
        return warned(name, f"{ENCODING} not cached in {cache_dir}",
                      "it is downloaded on first use (needs internet); `rumi models download` "
                      "fetches it now, or copy a cache and set TIKTOKEN_CACHE_DIR")
    digest = sha256_file(cached)
    if digest != ENCODING_SHA256:
        return failed(name, f"{cached} is corrupt (sha256 {digest[:12]}…)",
                      f"delete {cached} and run `rumi models download`")
    try:
        import tiktoken

        tokens = tiktoken.get_encoding(ENCODING).encode("¿Qué tal, Rumi?")
    except Exception as exc:  # a broken install must be reported, not crash the doctor
        return failed(name, f"tiktoken cannot load {ENCODING}: {type(exc).__name__}: {exc}",
                      "reinstall: pip install --force-reinstall tiktoken")
    return passed(name, f"{ENCODING} loaded from {cache_dir} ({len(tokens)} tokens probe)")


def check_embedding_model(settings: Settings, cache_dir: Path) -> CheckResult:
    """Semantic recall needs the ONNX model; without it Rumi falls back to keyword search."""
    name = "embedding model"
    memory = settings.memory
    if not memory.embeddings_enabled:
        return passed(name, "embeddings disabled (memory.embeddings_enabled = false)")
    packaged = packaged_model(memory.embedding_model, memory.embedding_model_path)
    if packaged is not None:
        problem = packaged.problem()
        if problem is None:
            return passed(name, f"{memory.embedding_model} (installed with Rumi: "
                                f"{packaged.package})")
        return failed(name, problem, packaged.install)
    where = locate_model(memory, cache_dir)
    if where.present and where.source == "local" and where.path is not None:
        mismatch = model_mismatch(memory.embedding_model, where.path)
        if mismatch:
            return warned(name, mismatch, "set memory.embedding_model to the model in that "
                          "directory (or point embedding_model_path at a copy of "
                          f"{memory.embedding_model}); then `rumi models quantize --force`")
    if where.present:
        if where.source == "cache" and cache_dir == model_cache_dir({}):
            return warned(name, f"{where.name} at {where.path} (a temp dir)",
                          "set FASTEMBED_CACHE_PATH to a directory under data_dir so the "
                          "model survives reboots, then `rumi models download`")
        return passed(name, f"{where.name} at {where.path}")
    if where.source == "local":
        return failed(name, f"memory.embedding_model_path: {where.problem}",
                      "point it at a directory with model.onnx, tokenizer.json and config.json "
                      "(see docs/raspberry-pi.md, 'Air-gapped installs')")
    if not _fastembed_knows(memory.embedding_model):
        return failed(name, f"fastembed does not know model {memory.embedding_model!r}",
                      "pick one from `python -c \"from fastembed import TextEmbedding; "
                      "print(TextEmbedding.list_supported_models())\"`")
    return warned(name, f"{memory.embedding_model}: {where.problem}",
                  "run `rumi models download` (or it downloads on first use); air-gapped: set "
                  "memory.embedding_model_path")


def _fastembed_knows(model_name: str) -> bool:
    try:
        from fastembed import TextEmbedding
    except ImportError:
        return False
    with contextlib.suppress(Exception):
        return any(d["model"].lower() == model_name.lower()
                   for d in TextEmbedding.list_supported_models())
    return False

"""Where the embedding model lives: a local ONNX directory, or fastembed's download cache.

Shared by `rumi doctor` (is it there?) and `rumi models` (fetch it, show it). Finding a cached
model is a directory walk, so the doctor (also the Docker healthcheck) does not pay for
importing fastembed/onnxruntime on every run.
"""

from __future__ import annotations

import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from rumi.config import MemorySettings

MODEL_FILE = "model.onnx"
TOKENIZER_FILES = ("tokenizer.json", "config.json")


def model_cache_dir(env: Mapping[str, str]) -> Path:
    """fastembed's own rule (the Embedder loads with it): FASTEMBED_CACHE_PATH, else a temp dir.

    Deployments set FASTEMBED_CACHE_PATH inside data_dir (the Docker image and the systemd
    unit do) so a 200 MB model is not fetched again after every reboot.
    """
    default = Path(tempfile.gettempdir()) / "fastembed_cache"
    return Path(env.get("FASTEMBED_CACHE_PATH") or default)


@dataclass(frozen=True)
class ModelLocation:
    name: str
    path: Path | None
    source: str  # "local" (embedding_model_path), "cache" (downloaded) or "missing"
    problem: str | None = None

    @property
    def present(self) -> bool:
        return self.path is not None and self.problem is None


def _onnx_files(directory: Path) -> list[Path]:
    return sorted(p for p in directory.glob("*.onnx") if p.is_file())


def check_local_dir(directory: Path) -> str | None:
    """What is wrong with a local model directory, or None when it looks loadable."""
    if not directory.is_dir():
        return f"{directory} does not exist"
    if not (directory / MODEL_FILE).is_file():
        return f"no {MODEL_FILE} in {directory}"
    missing = [f for f in TOKENIZER_FILES if not (directory / f).is_file()]
    if missing:
        return f"{directory} lacks {', '.join(missing)}"
    return None


def _cache_key(model_name: str) -> str:
    return model_name.rsplit("/", 1)[-1].lower()


def find_cached(model_name: str, cache_dir: Path) -> Path | None:
    """A fastembed/huggingface cache snapshot that holds this model's ONNX file.

    fastembed stores `<cache>/models--<org>--<repo>/snapshots/<rev>/` where the repo is
    usually Qdrant's ONNX export named after the model (`…/paraphrase-multilingual-…-onnx-Q`).
    """
    if not cache_dir.is_dir():
        return None
    key = _cache_key(model_name)
    for repo in sorted(cache_dir.glob("models--*")):
        if key not in repo.name.lower():
            continue
        for snapshot in sorted((repo / "snapshots").glob("*")):
            if snapshot.is_dir() and _onnx_files(snapshot):
                return snapshot
    return None


def locate_model(memory: MemorySettings, cache_dir: Path) -> ModelLocation:
    if memory.embedding_model_path is not None:
        directory = memory.embedding_model_path
        return ModelLocation(memory.embedding_model, directory, "local",
                             check_local_dir(directory))
    cached = find_cached(memory.embedding_model, cache_dir)
    if cached is not None:
        return ModelLocation(memory.embedding_model, cached, "cache")
    return ModelLocation(memory.embedding_model, None, "missing",
                         f"not downloaded yet into {cache_dir}")

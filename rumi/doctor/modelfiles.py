"""Where the embedding model lives: a local ONNX directory, or fastembed's download cache.

Shared by `rumi doctor` (is it there?) and `rumi models` (fetch it, show it). Finding a cached
model is a directory walk, so the doctor (also the Docker healthcheck) does not pay for
importing fastembed/onnxruntime on every run.
"""

from __future__ import annotations

import json
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


# (encoder layers, vocabulary) of the models people configure, from their config.json
KNOWN_SHAPES: dict[str, tuple[int, int]] = {
    "paraphrase-multilingual-minilm-l12-v2": (12, 250_002),
    "all-minilm-l6-v2": (6, 30_522),
    "paraphrase-minilm-l6-v2": (6, 30_522),
    "bge-small-en-v1.5": (12, 30_522),
    "multilingual-e5-small": (12, 250_037),
}


def _named_in(directory: Path) -> str | None:
    """The known model a directory's name spells (`…/all-MiniLM-L6-v2-onnx`), if any; the
    longest match wins so `paraphrase-minilm-l6-v2` is not read as `all-minilm-l6-v2`."""
    name = directory.name.lower()
    hits = [key for key in KNOWN_SHAPES if key in name]
    return max(hits, key=len) if hits else None


def model_mismatch(model_name: str, directory: Path) -> str | None:
    """Why `directory` seems to hold another model than `model_name`, or None.

    `embedding_model` is the name Rumi files vectors and the int8 query copy under; a local
    directory holding a different model gets vectors mislabelled and a twin named after the
    wrong model. Judged by the directory's config.json shape, else by its name.
    """
    key = _cache_key(model_name)
    expected = KNOWN_SHAPES.get(key)
    try:
        config = json.loads((directory / "config.json").read_text(encoding="utf-8"))
        shape = (int(config["num_hidden_layers"]), int(config["vocab_size"]))
    except (OSError, ValueError, KeyError, TypeError):
        shape = None
    if expected is not None and shape is not None and shape != expected:
        return (f"{directory} holds a model with {shape[0]} layers and {shape[1]:,} tokens, "
                f"not {model_name} ({expected[0]} layers, {expected[1]:,} tokens)")
    named = _named_in(directory)
    if named is not None and named != key and (shape is None or expected is None
                                               or KNOWN_SHAPES[named] != expected):
        return f"{directory} is named after {named}, but memory.embedding_model is {model_name}"
    return None

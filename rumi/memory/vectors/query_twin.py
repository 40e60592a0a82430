"""The query twin: an int8 copy of the embedding model that embeds recall queries only.

Every chat message embeds one query before its memories can be ranked, and with a full-precision
model that embedding is most of a recall's time (docs/benchmarks.md, "Recall latency"). A
dynamically quantized copy (int8 weights, onnxruntime's `quantize_dynamic`) embeds a query ~1.8×
as fast, and because memories keep their full-precision vectors, recall quality barely
moves (LoCoMo R@10 unchanged) — unlike quantizing both sides.

The twin is a copy of the model directory with its ONNX file replaced at the same relative path,
so fastembed loads it exactly like the original (same tokenizer, pooling and normalisation),
plus a manifest naming the model it was made from. `rumi models quantize` makes it; the
`Embedder` checks the manifest and the two models' agreement before trusting it.
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from rumi.fileio import fsync_dir, sha256_file

log = logging.getLogger(__name__)

MANIFEST = "rumi-query-model.json"
METHOD = "onnxruntime quantize_dynamic, int8 weights (QInt8)"
_QUANTIZED_OPS = frozenset({"DynamicQuantizeLinear", "MatMulInteger", "QLinearMatMul",
                            "DequantizeLinear", "QuantizeLinear", "MatMulNBits"})


class QuantizeError(Exception):
    """Why no twin could be made, in one line for the terminal."""


class AlreadyQuantized(QuantizeError):
    """The model computes in int8 already (e.g. fastembed's `-onnx-Q` exports): queries are as
    fast as a twin would make them, so there is nothing to do."""


def default_query_model_dir(data_dir: Path, model_name: str) -> Path:
    """Where `rumi models quantize` puts the twin and the bot looks for it: inside data_dir,
    which every deployment keeps across restarts (a download cache may live in /tmp)."""
    base = model_name.strip("/").rsplit("/", 1)[-1]
    safe = re.sub(r"[^A-Za-z0-9._-]+", "-", base).strip("-.") or "model"
    return data_dir / "models" / f"{safe}-int8"


@dataclass(frozen=True)
class Manifest:
    source_model: str
    source_file: str
    source_sha256: str
    method: str
    created_at: str

    @classmethod
    def read(cls, twin_dir: Path) -> Manifest:
        try:
            raw = json.loads((twin_dir / MANIFEST).read_text(encoding="utf-8"))
            return cls(**{name: str(raw[name]) for name in cls.__dataclass_fields__})
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise QuantizeError(f"{twin_dir} has no readable {MANIFEST}: {exc}") from exc


@dataclass(frozen=True)
class QuantizeResult:
    model_file: Path
    source_bytes: int
    twin_bytes: int


def is_quantized(model_file: Path) -> bool:
    """True when the ONNX graph already computes in int8 (e.g. fastembed's `-onnx-Q` exports);
    quantizing those again fails or gains nothing."""
    import onnx

    graph = onnx.load(str(model_file), load_external_data=False).graph
    return any(node.op_type in _QUANTIZED_OPS for node in graph.node)



def twin_is_current(twin_dir: Path, source: Path, model_name: str) -> bool:
    """True when `twin_dir` holds a twin of exactly this model file (name and SHA-256): after a
    model change or an updated download the twin is made again instead of being kept and then
    refused by the bot. Blocking (hashes the model file)."""
    try:
        manifest = Manifest.read(twin_dir)
    except QuantizeError:
        return False
    return (manifest.source_model == model_name and source.is_file()
            and manifest.source_sha256 == sha256_file(source))


def quantize_model(
    source_dir: Path, model_file: str, twin_dir: Path, source_model: str
) -> QuantizeResult:
    """Write the twin of `source_dir` (whose ONNX file is `model_file`, relative) to `twin_dir`.

    Built in a temporary sibling directory and renamed into place, so an interrupted run never
    leaves a half-written twin that the bot would try to load. Blocking: call it in a thread.
    """
    source = source_dir / model_file
    if not source.is_file():
        raise QuantizeError(f"no {model_file} in {source_dir}")
    if is_quantized(source):
        raise AlreadyQuantized(f"{source} is already quantized: queries use it as it is")
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    twin_dir.parent.mkdir(parents=True, exist_ok=True)
    building = Path(tempfile.mkdtemp(prefix=f".{twin_dir.name}-", dir=twin_dir.parent))
    try:
        _copy_tokenizer_files(source_dir, building)
        target = building / model_file
        target.parent.mkdir(parents=True, exist_ok=True)
        root = logging.getLogger()
        was_disabled, root.disabled = root.disabled, True
        try:  # onnxruntime warns on the root logger about optional pre-processing
            # Given a path, onnxruntime writes `<model>-inferred.onnx` beside the source (a
            # model folder that may be read-only or shared); given the loaded model, it works
            # in a temporary folder of its own.
            quantize_dynamic(onnx.load(str(source)), str(target), weight_type=QuantType.QInt8)
        finally:
            root.disabled = was_disabled
        manifest = Manifest(source_model=source_model, source_file=model_file,
                            source_sha256=sha256_file(source), method=METHOD,
                            created_at=datetime.now(UTC).isoformat(timespec="seconds"))
        (building / MANIFEST).write_text(json.dumps(manifest.__dict__, indent=2) + "\n",
                                         encoding="utf-8")
        _replace_dir(building, twin_dir)
    except BaseException:
        shutil.rmtree(building, ignore_errors=True)
        raise
    return QuantizeResult(twin_dir / model_file, source.stat().st_size,
                          (twin_dir / model_file).stat().st_size)


def _copy_tokenizer_files(source_dir: Path, into: Path) -> None:
    """Everything but the ONNX weights, as plain writable files (a model copy is often
    read-only, and a read-only twin could not be replaced by `--force`)."""
    for path in sorted(source_dir.rglob("*")):
        if not path.is_file() or path.suffix in (".onnx", ".onnx_data") or path.name == MANIFEST:
            continue
        target = into / path.relative_to(source_dir)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)


def _replace_dir(built: Path, final: Path) -> None:
    """Swap `built` in as `final`; an old twin is moved aside first and removed after."""
    old = None
    if final.exists():
        old = final.with_name(f".{final.name}-old-{os.getpid()}")
        shutil.rmtree(old, ignore_errors=True)
        final.rename(old)
    built.rename(final)
    fsync_dir(final.parent)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


AGREEMENT_PROBES = (
    "¿Qué le gusta comer a mi hermana los domingos?",
    "The dentist appointment moved to Tuesday at 5 pm",
    "Mi gato se llama Miso y tiene tres años",
    "run the backup script every night and email me the log",
)
MIN_AGREEMENT = 0.9
"""Lowest cosine, over the probes, between a twin's vector and the main model's. The int8
twin of the shared MiniLM scores 0.94 on them (0.95-0.98 on LoCoMo questions); a twin of
another model, or one pooled differently, scores far lower and would rank memories by
noise."""


class QueryTwin:
    """The twin as the `Embedder` uses it: loaded after the main model, trusted only when its
    manifest names the main model and its vectors agree with the main model's; otherwise
    queries stay on the main model and `reason` says why. Never raises."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.model: Any = None
        self.agreement: float | None = None
        self.reason: str | None = None if path is not None else "no query model"
        self._lock = threading.Lock()

    def load(self, model_name: str, main_model: Any, load_from: Callable[[Path], Any]) -> None:
        if self.path is None or self.model is not None:
            return
        try:
            manifest = Manifest.read(self.path)
            if manifest.source_model != model_name:
                raise QuantizeError(f"made from {manifest.source_model}, not {model_name}")
            twin = load_from(self.path)
            agreement = min(_agreement(main_model, twin))
            if agreement < MIN_AGREEMENT:
                raise QuantizeError(f"its vectors disagree with the main model's "
                                    f"(cosine {agreement:.2f} < {MIN_AGREEMENT})")
        except Exception as exc:  # noqa: BLE001 - a bad twin only costs speed, never recall
            self.reason = f"query model not used: {type(exc).__name__}: {exc}"[:300]
            log.warning("%s", self.reason)
            return
        self.model, self.agreement, self.reason = twin, agreement, None
        log.info("recall queries use the int8 twin at %s (agreement %.3f)", self.path, agreement)

    def embed(self, text: str) -> np.ndarray | None:
        """Blocking (run it in a thread); None if the twin failed on this text."""
        try:
            with self._lock:
                vector = np.asarray(next(iter(self.model.embed([text]))), dtype=np.float32)
        except Exception:  # noqa: BLE001 - the caller falls back to the main model
            log.exception("the query twin failed to embed a query")
            return None
        norm = float(np.linalg.norm(vector))
        return vector / norm if norm > 0 else vector

    def status(self) -> dict[str, Any]:
        return {"path": str(self.path) if self.path is not None else None,
                "loaded": self.model is not None, "agreement": self.agreement,
                "reason": self.reason}


def _agreement(main_model: Any, twin: Any) -> list[float]:
    def vectors(model: Any) -> np.ndarray:
        matrix = np.asarray(list(model.embed(list(AGREEMENT_PROBES))), dtype=np.float32)
        return matrix / np.linalg.norm(matrix, axis=1, keepdims=True)

    return [float(c) for c in np.sum(vectors(main_model) * vectors(twin), axis=1)]

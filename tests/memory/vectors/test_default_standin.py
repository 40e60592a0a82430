"""benchmarks/default_standin.py: the stand-in really has the default model's shape and loads
the way the bot loads the download, so the footprint it measures is the default's."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from rumi.config import MemorySettings
from rumi.memory.vectors.embeddings import Embedder
from rumi.memory.vectors.query_twin import AlreadyQuantized, quantize_model
from tests.conftest import MODEL_DIR, REPO

sys.path.insert(0, str(REPO / "benchmarks"))
import default_standin as standin  # noqa: E402
import footprint  # noqa: E402

DEFAULT = "sentence-transformers/paraphrase-multilingual-MiniLM-L12-v2"


def _run(model, ids: list[int]) -> np.ndarray:  # noqa: ANN001 - onnx ModelProto
    import onnxruntime as ort

    session = ort.InferenceSession(model.SerializeToString())
    batch = np.array([ids], dtype=np.int64)
    return session.run(None, {"input_ids": batch, "attention_mask": np.ones_like(batch),
                              "token_type_ids": np.zeros_like(batch)})[0]


def _layers(model) -> set[str]:  # noqa: ANN001
    return {node.name.split("/encoder/")[1].split("/")[0] for node in model.graph.node
            if "/encoder/layer." in node.name}


def test_deepen_doubles_the_encoder_and_the_copies_really_run() -> None:
    """Layers 6–11 must sit in the data path with weights of their own, not hang off it."""
    import onnx

    original = onnx.load(str(MODEL_DIR / "model.onnx"))
    deeper = onnx.load(str(MODEL_DIR / "model.onnx"))
    standin.deepen(deeper)
    onnx.checker.check_model(deeper)
    assert _layers(original) == {f"layer.{i}" for i in range(6)}
    assert _layers(deeper) == {f"layer.{i}" for i in range(12)}
    weights = sum(len(init.raw_data) for init in original.graph.initializer)
    embeddings = sum(len(init.raw_data) for init in original.graph.initializer
                     if "embeddings" in init.name)
    grown = sum(len(init.raw_data) for init in deeper.graph.initializer)
    assert grown == 2 * weights - embeddings  # every encoder weight copied once
    ids = [101, 7592, 2088, 102]
    before, after = _run(original, ids), _run(deeper, ids)
    assert after.shape == before.shape == (1, 4, 384)
    assert np.isfinite(after).all() and not np.allclose(after, before, atol=1e-3)


async def test_int8_standin_has_the_default_shape_and_loads_like_the_download(
        tmp_path: Path) -> None:
    import onnx

    made = standin.build(tmp_path / "standin", "int8", source=MODEL_DIR)
    model = onnx.load(str(made))
    assert _layers(model) == {f"layer.{i}" for i in range(12)}
    table = next(i for i in model.graph.initializer
                 if "word_embeddings" in i.name and len(i.dims) == 2)
    assert list(table.dims) == [250_002, 384] and table.data_type == onnx.TensorProto.UINT8
    assert not (tmp_path / "standin" / "model-fp32.onnx").exists()
    with pytest.raises(AlreadyQuantized):  # like fastembed's int8 download: no twin to make
        quantize_model(made.parent, "model.onnx", tmp_path / "twin", f"local/{DEFAULT}")
    embedder = Embedder(MemorySettings(embedding_model=DEFAULT, embedding_model_path=made.parent,
                                       embedding_load_wait_seconds=None))
    assert await embedder.warm_up(), embedder.reason
    vector = await embedder.embed_query("¿dónde dejé las llaves del coche?")
    assert vector is not None and vector.shape == (384,)
    assert abs(float(np.linalg.norm(vector)) - 1.0) < 1e-3
    latency = await footprint.query_latency(made.parent, DEFAULT, None, ["hola", "qué tal"] * 5)
    assert latency["queries"] == 10 and latency["twin"] is False
    assert 0 < latency["p50_ms"] <= latency["p95_ms"]

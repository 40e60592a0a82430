"""A same-shape stand-in of Rumi's default embedding model, for memory and speed only.

The default, `sentence-transformers/paraphrase-multilingual-MiniLM-L12-v2`, is what fastembed
downloads as an int8 ONNX build (Qdrant's `-onnx-Q`), but this machine cannot download it. Its
footprint comes from its shape, not its weights: 12 encoder layers of width 384 and a
250,002-token word-embedding table. So the stand-in is made from the shared all-MiniLM-L6-v2
(6 layers, same width): its encoder layers 0–5 are copied as 6–11 (nodes and weights, so each
copy holds its own tensors, as a real model's layers do), and the word-embedding table is
enlarged to 250,002 rows of random values; `int8` then quantizes it with onnxruntime's
`quantize_dynamic`, like the download. The tokenizer stays MiniLM's (its ids are all below
30,522, which is fine for memory and speed). Random weights: its vectors mean nothing, so it
must never be used to judge recall quality.

    python benchmarks/default_standin.py --out DIR [--precision int8|fp32]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from pathlib import Path

import numpy as np

LAYERS = 12
VOCAB = 250_002
SHARED = Path(os.environ.get("RUMI_SHARED_DIR", Path(__file__).resolve().parents[2] / "shared"))
SHARED_MINILM = SHARED / "models" / "all-MiniLM-L6-v2-onnx"
_LAYER = "/encoder/layer.{}/"


def _layer_nodes(graph, index: int) -> list:  # noqa: ANN001 - onnx GraphProto / NodeProto
    tag = _LAYER.format(index)
    return [node for node in graph.node if tag in node.name]


def deepen(model) -> None:  # noqa: ANN001 - onnx ModelProto
    """Double the encoder in place: its layers 0..n-1 are copied as n..2n-1, each copy with its
    own copies of the weights, and the copy reads what the last layer wrote.

    No tensor names are assumed: the hidden state entering layer 0 is the tensor layer 0 reads
    where layer 1 reads layer 0's output; the encoder's output is what the last layer writes and
    no layer reads.
    """
    import onnx

    graph = model.graph
    weights = {init.name: init for init in graph.initializer}
    count = 0
    while _layer_nodes(graph, count):
        count += 1
    if count < 2:
        raise ValueError(f"expected at least 2 encoder layers, found {count}")
    layer0, layer1 = _layer_nodes(graph, 0), _layer_nodes(graph, 1)
    written0 = {out for node in layer0 for out in node.output}
    hidden_in = next(old for a, b in zip(layer0, layer1, strict=True)
                     for old, new in zip(a.input, b.input, strict=True) if new in written0)
    block = [node for i in range(count) for node in _layer_nodes(graph, i)]
    read = {name for node in block for name in node.input}
    last = _layer_nodes(graph, count - 1)
    (hidden_out,) = {out for node in last for out in node.output if out not in read}
    mid = f"{hidden_out}/standin_mid"
    renamed = {hidden_in: mid}
    clones = []
    for node in block:
        clone = onnx.NodeProto()
        clone.CopyFrom(node)
        for i in reversed(range(count)):
            clone.name = clone.name.replace(_LAYER.format(i), _LAYER.format(i + count))
        for k, name in enumerate(clone.input):
            if name in renamed:
                clone.input[k] = renamed[name]
            elif name in weights:
                copied = onnx.TensorProto()
                copied.CopyFrom(weights[name])
                copied.name = renamed[name] = f"{name}/standin"
                graph.initializer.append(copied)
                clone.input[k] = copied.name
        for k, name in enumerate(clone.output):
            clone.output[k] = renamed[name] = name if name == hidden_out else f"{name}/standin"
        clones.append(clone)
    for node in last:
        node.output[:] = [mid if out == hidden_out else out for out in node.output]
    position = max(i for i, node in enumerate(graph.node) if node in last) + 1
    for offset, clone in enumerate(clones):
        graph.node.insert(position + offset, clone)


def widen_vocabulary(model, vocab: int = VOCAB, seed: int = 7) -> None:  # noqa: ANN001
    """Replace the word-embedding table by `vocab` rows of random values (same width)."""
    from onnx import numpy_helper

    for index, init in enumerate(model.graph.initializer):
        if init.name.endswith("word_embeddings.weight"):
            width = init.dims[1]
            table = np.random.default_rng(seed).normal(0, 0.02, (vocab, width))
            new = numpy_helper.from_array(table.astype(np.float32), init.name)
            model.graph.initializer[index].CopyFrom(new)
            return
    raise ValueError("no word_embeddings.weight initializer")


def build(out: Path, precision: str = "int8", source: Path = SHARED_MINILM) -> Path:
    """Write the stand-in directory (model.onnx, tokenizer, config) to `out`. Blocking."""
    import onnx

    out.mkdir(parents=True, exist_ok=True)
    for name in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json",
                 "vocab.txt"):
        if (source / name).is_file():
            shutil.copyfile(source / name, out / name)
    config = json.loads((source / "config.json").read_text(encoding="utf-8"))
    config.update(num_hidden_layers=LAYERS, vocab_size=VOCAB,
                  _name_or_path="rumi-standin/paraphrase-multilingual-MiniLM-L12-v2-shape")
    (out / "config.json").write_text(json.dumps(config, indent=2), encoding="utf-8")
    model = onnx.load(str(source / "model.onnx"))
    deepen(model)
    widen_vocabulary(model)
    onnx.checker.check_model(model)
    fp32 = out / ("model.onnx" if precision == "fp32" else "model-fp32.onnx")
    onnx.save(model, str(fp32))
    if precision == "int8":
        from onnxruntime.quantization import QuantType, quantize_dynamic

        quantize_dynamic(str(fp32), str(out / "model.onnx"), weight_type=QuantType.QInt8)
        fp32.unlink()
    return out / "model.onnx"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--precision", choices=("int8", "fp32"), default="int8")
    parser.add_argument("--source", type=Path, default=SHARED_MINILM)
    args = parser.parse_args(argv)
    made = build(args.out, args.precision, args.source)
    print(json.dumps({"model": str(made), "bytes": made.stat().st_size}))
    return 0


if __name__ == "__main__":
    sys.exit(main())

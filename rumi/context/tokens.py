"""Token counting with tiktoken, cached per item and calibrated against the provider.

o200k_base is gpt-oss's own vocabulary for ordinary text (its tokenizer, o200k_harmony, only
adds the format's special tokens), so texts count as the model counts them; the
provider's `usage.prompt_tokens` after each call tells us how far off the whole request is
(message framing, tool definitions rendered the harmony way), and a
per-model correction factor (an exponential moving average of reported/local) makes the
dashboard track the real model. When no encoding can be loaded (offline without a cache) a
chars/4 estimate keeps Rumi running and the dashboard says so.
"""

from __future__ import annotations

import itertools
import json
import logging
import sys
from array import array
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rumi.encoding import ENCODING
from rumi.fileio import atomic_write_bytes
from rumi.sessions.state import ContextItem

log = logging.getLogger(__name__)

MESSAGE_OVERHEAD = 4
"""Tokens every chat message costs beyond its text (role and separators; OpenAI's formula)."""

REPLY_PRIMING = 3
"""Tokens the API adds once per request to prime the assistant's reply."""

CALIBRATION_ALPHA = 0.5
MIN_FACTOR = 0.5
MAX_FACTOR = 3.0


@dataclass
class Calibration:
    """Reported/local ratio for one model: `factor` multiplies local counts."""

    factor: float = 1.0
    samples: int = 0

    def to_dict(self) -> dict[str, float | int]:
        return {"factor": self.factor, "samples": self.samples}


VOCABULARY_FORMAT = 1
"""Bumped when the layout of the kept vocabulary (`vocabulary_bytes`) changes."""


def load_encoding(name: str, cache_dir: Path | None = None) -> Any:
    """tiktoken's encoding `name` (raises as `tiktoken.get_encoding` does).

    tiktoken parses its vocabulary file (200,000 base64 lines for o200k_base) every time a
    process asks for it: ~0.4 s of CPU before the first answer of every start, the largest
    single step of a restart after a crash. With `cache_dir`, the parsed vocabulary is kept
    there (`<name>.vocab`: written once from tiktoken's own checked load, keyed by the
    tiktoken version) and read back in ~0.1 s; the encoding built from it is the one tiktoken
    builds. A kept file that is missing, damaged or from another version is made again; one
    that cannot be written is skipped. Plain bytes and integers, nothing that could run code.
    """
    import tiktoken
    from tiktoken_ext.openai_public import ENCODING_CONSTRUCTORS

    constructor = ENCODING_CONSTRUCTORS.get(name)
    if cache_dir is None or constructor is None:
        return tiktoken.get_encoding(name)
    path = cache_dir / f"{name}.vocab"
    key = [VOCABULARY_FORMAT, name, tiktoken.__version__, sys.byteorder]
    kept = _read_vocabulary(path, key)
    if kept is not None:
        return tiktoken.Encoding(**kept)
    arguments = constructor()
    encoding = tiktoken.Encoding(**arguments)   # as tiktoken.get_encoding builds it
    try:
        atomic_write_bytes(path, vocabulary_bytes(key, arguments))
    except (OSError, ValueError, OverflowError) as exc:
        log.info("tokenizer cache %s not written (%s)", path, type(exc).__name__)
    return encoding


def vocabulary_bytes(key: list[Any], arguments: dict[str, Any]) -> bytes:
    """A JSON line (the key and every argument but the vocabulary, with its size), then the
    ranks and the end offsets of the tokens as uint32, then the tokens one after another."""
    ranks: dict[bytes, int] = arguments["mergeable_ranks"]
    tokens = list(ranks)
    ends = array("I", itertools.accumulate(map(len, tokens)))
    header = {"key": key, "count": len(tokens),
              "arguments": {k: v for k, v in arguments.items() if k != "mergeable_ranks"}}
    return b"".join([json.dumps(header).encode(), b"\n", array("I", ranks.values()).tobytes(),
                     ends.tobytes(), *tokens])


def _read_vocabulary(path: Path, key: list[Any]) -> dict[str, Any] | None:
    """The encoding's arguments kept at `path` for `key`; None when there are none usable."""
    try:
        data = path.read_bytes()
        line = data.index(b"\n")
        header = json.loads(data[:line])
        if header.get("key") != key or array("I").itemsize != 4:
            return None
        count = int(header["count"])
        ranks, ends = array("I"), array("I")
        ranks.frombytes(data[line + 1:line + 1 + 4 * count])
        ends.frombytes(data[line + 1 + 4 * count:line + 1 + 8 * count])
        blob = data[line + 1 + 8 * count:]
        if len(ranks) != count or len(ends) != count or (ends[-1] if count else 0) != len(blob):
            raise ValueError("truncated")
        starts = itertools.chain((0,), ends)
        vocabulary = dict(zip(map(blob.__getitem__, map(slice, starts, ends)), ranks,
                              strict=True))
        arguments = dict(header["arguments"], mergeable_ranks=vocabulary)
        if arguments.get("name") != key[1] or len(vocabulary) != count:
            raise ValueError("not this encoding's")
        return arguments
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:   # damaged
        log.info("tokenizer cache %s unusable (%s)", path, type(exc).__name__)
        return None


class TokenCounter:
    """Counts tokens for texts and API messages; holds the per-model calibration."""

    def __init__(self, encoding_name: str = ENCODING, cache_dir: Path | None = None) -> None:
        """`cache_dir`: where the parsed vocabulary is kept between starts (`load_encoding`);
        blocking file I/O, so a running loop builds the counter in a worker thread."""
        self.encoding_name = encoding_name
        self.fallback_reason: str | None = None
        self._encoding: Any = None
        try:
            self._encoding = load_encoding(encoding_name, cache_dir)
        except Exception as exc:  # no cache and no network, unknown name, broken install
            self.fallback_reason = f"{type(exc).__name__}: {exc}"[:200]
            log.warning("tiktoken encoding %s unavailable (%s), estimating tokens as chars/4",
                        encoding_name, type(exc).__name__)
            log.info("tiktoken: %s", self.fallback_reason)
        self._calibration: dict[str, Calibration] = {}

    @property
    def is_fallback(self) -> bool:
        return self._encoding is None

    def count(self, text: str) -> int:
        """Tokens in a plain text (uncalibrated)."""
        if not text:
            return 0
        if self._encoding is None:
            return (len(text) + 3) // 4
        return len(self._encoding.encode(text, disallowed_special=()))

    def truncate(self, text: str, max_tokens: int) -> str:
        """The longest prefix of `text` that fits in `max_tokens` (cut on a token boundary)."""
        if max_tokens <= 0:
            return ""
        if self._encoding is None:
            return text[: max_tokens * 4]
        ids = self._encoding.encode(text, disallowed_special=())
        if len(ids) <= max_tokens:
            return text
        return self._encoding.decode(ids[:max_tokens], errors="ignore")

    def count_message(self, message: dict[str, Any]) -> int:
        """Tokens of one API message dict, including its per-message overhead."""
        total = MESSAGE_OVERHEAD + self.count(str(message.get("content") or ""))
        if message.get("tool_calls"):
            total += self.count(json.dumps(message["tool_calls"], ensure_ascii=False))
        if message.get("tool_call_id"):
            total += self.count(str(message["tool_call_id"]))
        if message.get("name"):
            total += 1 + self.count(str(message["name"]))
        return total

    def count_messages(self, messages: Iterable[dict[str, Any]]) -> int:
        return REPLY_PRIMING + sum(self.count_message(m) for m in messages)

    def count_tools(self, specs: list[dict[str, Any]] | None) -> int:
        """Tool definitions also occupy the prompt; counted as their JSON text."""
        if not specs:
            return 0
        return self.count(json.dumps(specs, ensure_ascii=False))

    def item_tokens(self, item: ContextItem, rendered: dict[str, Any]) -> int:
        """Cached per item: content never changes once an item exists."""
        if item.token_count is None:
            item.token_count = self.count_message(rendered)
        return item.token_count

    # --- calibration -------------------------------------------------------------------

    def factor(self, model: str) -> float:
        cal = self._calibration.get(model)
        return cal.factor if cal else 1.0

    def calibration(self, model: str) -> Calibration | None:
        return self._calibration.get(model)

    def seed_calibration(self, model: str, data: dict[str, Any] | None) -> None:
        """Restore a persisted factor unless this process already learnt a fresher one."""
        if not data or model in self._calibration:
            return
        try:
            factor = float(data.get("factor", 1.0))
            samples = int(data.get("samples", 0))
        except (TypeError, ValueError):
            return
        if MIN_FACTOR <= factor <= MAX_FACTOR:
            self._calibration[model] = Calibration(factor, samples)

    def observe(self, model: str, local_tokens: int, reported_tokens: int) -> Calibration:
        """Fold one (local, reported) pair into the model's factor and return it."""
        cal = self._calibration.setdefault(model, Calibration())
        if local_tokens <= 0 or reported_tokens <= 0:
            return cal
        ratio = min(MAX_FACTOR, max(MIN_FACTOR, reported_tokens / local_tokens))
        if cal.samples == 0:
            cal.factor = ratio
        else:
            cal.factor = CALIBRATION_ALPHA * ratio + (1 - CALIBRATION_ALPHA) * cal.factor
        cal.samples += 1
        return cal

    def calibrated(self, model: str, local_tokens: int) -> int:
        return round(local_tokens * self.factor(model))

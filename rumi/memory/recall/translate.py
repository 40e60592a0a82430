"""Words of a question in the chat's other language: Spanish ↔ English word lists.

A Spanish question about an English conversation shares only names with it, so its keyword
half finds nothing to rank but the names. The keyword index (`recall_index`) uses these
alternatives for the words the chat has never said: "cachorro" → "puppy", "pintó" → "paint".
A word the chat knows is never replaced, so an English question over an English chat ranks
exactly as before.

The word lists are FreeDict's Spanish–English and English–Spanish dictionaries, as Debian
packages them (`apt install dict-freedict-spa-eng dict-freedict-eng-spa`: GPL, ~140 kB each,
dictd files under /usr/share/dictd); Rumi reads them and ships none of their text. They hold
lemmas ("adoptar", not "adoptó"), so headwords and question words are both reduced by the
Snowball stemmers (`snowballstemmer`, BSD) before they are compared. Without the files there
are no alternatives and recall works as without this module.
"""

from __future__ import annotations

import functools
import gzip
import logging
import re
import threading
import unicodedata
from collections.abc import Callable, Iterable
from pathlib import Path

log = logging.getLogger(__name__)

DICT_DIR = Path("/usr/share/dictd")
# (file stem, language of the headwords): a question word is looked up as either language
# The pure-Python stemmers, always: `snowballstemmer.stemmer()` switches to PyStemmer's C
# build when it is installed, whose newer Snowball stems a few words differently, and the
# alternatives (and the benchmark's figures) would then depend on what else is installed.
# They are imported by `load` (a worker thread), not when Rumi starts: `snowballstemmer` loads
# all 32 of its languages, ~30 ms of CPU and 1.7 MiB of RSS at every start.
DICTIONARIES = (("freedict-spa-eng", "spanish"), ("freedict-eng-spa", "english"))
MAX_ALTERNATIVES = 4  # first senses first; more only adds noise to BM25
_B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
_WORD = re.compile(r"[^\W\d_]+", re.UNICODE)


def _stemmer(language: str) -> Callable[[str], str]:
    """Snowball's pure-Python stemmer of `language` ("spanish", "english")."""
    from snowballstemmer.english_stemmer import EnglishStemmer
    from snowballstemmer.spanish_stemmer import SpanishStemmer

    return {"spanish": SpanishStemmer, "english": EnglishStemmer}[language]().stemWord


def _number(text: str) -> int:
    """dictd's base-64 offsets and lengths."""
    n = 0
    for char in text:
        n = n * 64 + _B64.index(char)
    return n


def fold(word: str) -> str:
    """Lower case without accents ("Canción" → "cancion"), as the FTS tables compare."""
    decomposed = unicodedata.normalize("NFD", word.lower())
    return "".join(c for c in decomposed if unicodedata.category(c) != "Mn")


class WordList:
    """Stemmed headword → its translations' words, for one direction."""

    def __init__(self, entries: dict[str, tuple[str, ...]], stem: Callable[[str], str]) -> None:
        self.entries = entries
        # a chat asks about the same words again and again; pure-Python stemming is ~0.1 ms
        self.stem = functools.lru_cache(maxsize=8_192)(stem)

    def get(self, word: str) -> tuple[str, ...]:
        return self.entries.get(self.stem(fold(word)), ())


def read_dictd(index: Path, data: Path, stem: Callable[[str], str],
               stop: frozenset[str]) -> WordList:
    """A dictd dictionary (`.index` + `.dict.dz`) as a WordList: each entry's first line is
    the headword (and its pronunciation), the next lines its senses."""
    body = gzip.decompress(data.read_bytes())
    entries: dict[str, list[str]] = {}
    for line in index.read_text(encoding="utf-8").splitlines():
        parts = line.split("\t")
        if len(parts) != 3 or parts[0].startswith("00"):
            continue
        start, length = _number(parts[1]), _number(parts[2])
        senses = body[start:start + length].decode("utf-8", "replace").split("\n")[1:]
        words = entries.setdefault(stem(fold(parts[0])), [])
        for sense in senses:
            for word in _WORD.findall(sense):
                word = word.lower()
                if len(word) > 2 and word not in stop and word not in words:
                    words.append(word)
    return WordList({k: tuple(v) for k, v in entries.items() if v}, stem)


class Translator:
    """Alternatives of a question's words in the other language (loaded once, on first use,
    from `directory`; empty when the dictionaries are not installed)."""

    def __init__(self, directory: Path = DICT_DIR, stop: Iterable[str] = ()) -> None:
        self.directory = directory
        self.stop = frozenset(stop)
        self._lists: list[WordList] | None = None
        self._lock = threading.Lock()

    def load(self) -> list[WordList]:
        """The installed word lists (blocking: call it from a worker thread)."""
        with self._lock:
            if self._lists is None:
                lists = []
                for name, language in DICTIONARIES:
                    index = self.directory / f"{name}.index"
                    data = self.directory / f"{name}.dict.dz"
                    if not (index.is_file() and data.is_file()):
                        continue
                    try:
                        stem = _stemmer(language)
                        lists.append(read_dictd(index, data, stem, self.stop))
                    except (OSError, ValueError, EOFError):
                        log.warning("cannot read the word list %s", index, exc_info=True)
                self._lists = lists
                log.info("recall word lists: %d loaded from %s", len(lists), self.directory)
            return self._lists

    @property
    def loaded(self) -> bool:
        return self._lists is not None

    def alternatives(self, terms: Iterable[str]) -> dict[str, tuple[str, ...]]:
        """term → up to MAX_ALTERNATIVES words it may stand for in the other language (terms
        without any are left out). Needs `load()` first; before it, nothing."""
        lists = self._lists or []
        out: dict[str, tuple[str, ...]] = {}
        for term in terms:
            found: list[str] = []
            for words in lists:
                for word in words.get(term):
                    if word != term and word not in found:
                        found.append(word)
            if found:
                out[term] = tuple(found[:MAX_ALTERNATIVES])
        return out

"""Cross-language alternatives: FreeDict's dictd word lists read as Debian installs them, and
the keyword index using them only for the words a chat never said."""

from __future__ import annotations

import gzip
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from rumi.memory.recall.query import STOPWORDS, plan
from rumi.memory.recall.retrieval import MemoryRecall
from rumi.memory.recall.translate import Translator
from rumi.memory.store.memories import MemoryStore
from rumi.memory.store.models import NewMemory
from tests.memory.backends import sqlite_only_kw
from tests.memory.conftest import model_settings

T0 = datetime(2026, 1, 1, tzinfo=UTC)
_B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"


def _b64(n: int) -> str:
    out = ""
    while True:
        out = _B64[n % 64] + out
        n //= 64
        if not n:
            return out


def write_dictd(directory: Path, name: str, entries: list[tuple[str, str]]) -> None:
    """A dictd dictionary as dictfmt writes it: a gzip body of entries (headword and
    pronunciation, then the senses) and an index of base-64 offsets and lengths."""
    body, index = b"", ["00databaseinfo\tA\tB"]
    for head, senses in entries:
        entry = f"{head} /x/\n{senses}\n".encode()
        index.append(f"{head}\t{_b64(len(body))}\t{_b64(len(entry))}")
        body += entry
    (directory / f"{name}.dict.dz").write_bytes(gzip.compress(body))
    (directory / f"{name}.index").write_text("\n".join(index) + "\n", encoding="utf-8")


@pytest.fixture
def word_lists(tmp_path: Path) -> Translator:
    write_dictd(tmp_path, "freedict-spa-eng", [
        ("adoptar", "adopt"), ("cachorro", "1. puppy\n2. cub"), ("pintar", "paint, colour"),
        ("perro", "dog"), ("grupo", "group, the bunch")])
    write_dictd(tmp_path, "freedict-eng-spa", [("puppy", "cachorro"), ("paint", "pintar")])
    translator = Translator(tmp_path, stop=STOPWORDS)
    translator.load()
    return translator


def test_inflected_words_find_their_lemma_in_either_direction(word_lists: Translator) -> None:
    found = word_lists.alternatives(["adoptó", "cachorros", "Pintó", "caroline", "puppies"])
    assert found == {"adoptó": ("adopt",), "cachorros": ("puppy", "cub"),
                     "Pintó": ("paint", "colour"), "puppies": ("cachorro",)}
    assert word_lists.alternatives(["grupo"]) == {"grupo": ("group", "bunch")}  # no stop words


def test_without_the_dictionaries_there_are_no_alternatives(tmp_path: Path) -> None:
    translator = Translator(tmp_path / "missing")
    assert translator.alternatives(["perro"]) == {}  # not loaded yet: nothing
    assert translator.load() == [] and translator.alternatives(["perro"]) == {}


@sqlite_only_kw  # the stand-ins are SQLite's keyword index
async def test_a_word_the_chat_never_said_is_searched_in_the_other_language(
    kw_store: MemoryStore, word_lists: Translator,
) -> None:
    await kw_store.save_many("1", [
        NewMemory(content=f"Caroline: {text}", created_at=T0 + timedelta(hours=4 * n))
        for n, text in enumerate(["we adopted a puppy", "the concert was loud",
                                  "my sister paints", "I ran a marathon"])])
    question = plan("¿Caroline adoptó un cachorro?")
    alone = await kw_store.keyword_index.search("1", question, 10)
    assert alone.coverage < 0.1  # only the name in common
    translated = replace(question, alternatives=word_lists.alternatives(question.terms))
    hits = await kw_store.keyword_index.search("1", translated, 10)
    assert hits[0][0] == 1 and hits.coverage == pytest.approx(1.0)
    # a word the chat knows keeps itself: "paints" is said, its Spanish never searched
    known = replace(plan("paints"), alternatives={"paints": ("adopted",)})
    assert [i for i, _ in await kw_store.keyword_index.search("1", known, 10)] == [3]


@sqlite_only_kw
async def test_recall_finds_an_english_memory_from_a_spanish_question(
    kw_store: MemoryStore, word_lists: Translator,
) -> None:
    """Keyword-only recall (no model): the Spanish question matches by its translation; the
    word lists load in the background, so the first recall does not wait for them."""
    await kw_store.save_many("1", [
        NewMemory(content=text, created_at=T0 + timedelta(hours=4 * n)) for n, text in
        enumerate(["The concert was loud", "We adopted a puppy last spring",
                   "My sister paints landscapes"])])
    lazy = Translator(word_lists.directory, stop=STOPWORDS)
    recall = MemoryRecall(kw_store, model_settings(embeddings_enabled=False,
                                                   recall_machine_translation=False),
                          translator=lazy)   # the word lists alone (Apertium: its own tests)
    assert await recall.recall("1", "¿adoptamos un cachorro?", k=3, touch=False) == []
    await recall.load_word_lists()
    found = await recall.recall("1", "¿adoptamos un cachorro?", k=3, touch=False)
    assert [s.memory.content for s in found][:1] == ["We adopted a puppy last spring"]
    off = MemoryRecall(kw_store, model_settings(embeddings_enabled=False, recall_translate=False,
                                                recall_machine_translation=False))
    assert off.translator is None
    assert await off.recall("1", "¿adoptamos un cachorro?", k=3, touch=False) == []

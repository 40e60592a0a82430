"""The prefetch stems the question's words for the word lists in a worker thread, not on the
event loop (pure-Python Snowball, ~1 ms of CPU a question), and the recall after it finds the
stems cached and the same alternatives."""

from __future__ import annotations

import threading
from pathlib import Path

from rumi.memory.recall.query import STOPWORDS, plan
from rumi.memory.recall.retrieval import MemoryRecall
from rumi.memory.recall.translate import Translator
from rumi.memory.store.memories import MemoryStore
from rumi.memory.store.models import NewMemory
from tests.memory.conftest import model_settings
from tests.memory.recall.test_translate import write_dictd

QUESTION = "¿Adoptó un cachorro?"


async def test_the_prefetch_stems_off_the_loop_and_the_recall_finds_the_stems(
        sqlite_store: MemoryStore, tmp_path: Path) -> None:
    write_dictd(tmp_path, "freedict-spa-eng", [("adoptar", "adopt"), ("cachorro", "puppy")])
    write_dictd(tmp_path, "freedict-eng-spa", [("puppy", "cachorro")])
    translator = Translator(tmp_path, stop=STOPWORDS)
    lists = translator.load()
    await sqlite_store.save("1", NewMemory("Ana adopted a puppy from the shelter"))
    recall = MemoryRecall(sqlite_store, model_settings())
    recall.translator = translator

    threads: list[threading.Thread] = []
    alternatives = translator.alternatives

    def recording(terms):  # noqa: ANN001, ANN202 - the real method, with where it ran
        threads.append(threading.current_thread())
        return alternatives(terms)

    translator.alternatives = recording  # type: ignore[method-assign]
    prefetch = recall.prefetch("1", QUESTION)
    assert prefetch is not None
    await prefetch
    assert threads and threads[0] is not threading.main_thread()
    stemmed = sum(words.stem.cache_info().currsize for words in lists)
    assert stemmed > 0

    found = await recall.recall("1", QUESTION, k=3, touch=False)
    assert [s.memory.content for s in found] == ["Ana adopted a puppy from the shelter"]
    assert threads[-1] is threading.main_thread()   # the recall's own look-up, on the loop
    assert sum(words.stem.cache_info().currsize for words in lists) == stemmed   # cached
    assert alternatives(plan(QUESTION).terms) == {"adoptó": ("adopt",),
                                                  "cachorro": ("puppy",)}


async def test_the_prefetch_tokenizes_the_words_and_their_alternatives_off_the_loop(
        sqlite_store: MemoryStore, tmp_path: Path) -> None:
    """The keyword arrays' tokens of the question's words and of their alternatives are made
    in the prefetch's worker thread too, so the recall's search finds them cached."""
    write_dictd(tmp_path, "freedict-spa-eng", [("adoptar", "adopt"), ("cachorro", "puppy")])
    write_dictd(tmp_path, "freedict-eng-spa", [("puppy", "cachorro")])
    translator = Translator(tmp_path, stop=STOPWORDS)
    translator.load()
    await sqlite_store.save("1", NewMemory("Ana adopted a puppy from the shelter"))
    recall = MemoryRecall(sqlite_store, model_settings())
    recall.translator = translator
    memory = sqlite_store.keyword_index.memory
    assert memory is not None
    tokens = memory.tokens
    asked: list[tuple[threading.Thread, list[str]]] = []
    words = tokens.words

    def recording(batch):  # noqa: ANN001, ANN202 - the real method, with where it ran
        batch = list(batch)
        asked.append((threading.current_thread(), batch))
        return words(batch)

    tokens.words = recording  # type: ignore[method-assign]
    prefetch = recall.prefetch("1", QUESTION)
    assert prefetch is not None
    await prefetch
    [(thread, batch)] = asked
    assert thread is not threading.main_thread()
    assert batch == ["adoptó", "cachorro", "adopt", "puppy"]
    assert all(w in tokens._words for w in batch)  # noqa: SLF001 - cached for the search
    found = await recall.recall("1", QUESTION, k=3, touch=False)
    assert [s.memory.content for s in found] == ["Ana adopted a puppy from the shelter"]

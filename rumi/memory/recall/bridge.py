"""Bridging a translated question's words to the chat's own words with the embedding model.

Apertium leaves words it does not know in the question's language ("donó", "mentoría") and
keeps one sense of those it knows ("albergue" → "hostel" where the chat says "shelter"), so
the keyword half of a question in the chat's other language misses turns whose words the
English question would have matched (docs/benchmarks.md, "Step 9 (Spanish)": the largest
cause of what the Spanish questions lose). The embedding model is multilingual: "mentoría"
lies next to "mentor", "cachorro" next to "puppy". For each content word of such a question
that neither its translation nor the dictionary's other senses render, the nearest word of
the chat's own vocabulary — the words of the question's best vector hits, which the vector
half found across languages — is taken when its cosine reaches a threshold, and those words
are one more keyword search at a lower weight (retrieval.py merges it).

Word-level cosines of e5 are compressed (unrelated words ~0.83, translations ~0.90–0.96), so
the threshold is high and only the single nearest word counts; measured in docs/benchmarks.md,
"Step 10 (Spanish)".
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterable

import numpy as np

from rumi.memory.recall.query import STOPWORDS
from rumi.memory.store import fts
from rumi.memory.store.coverage import KeywordHits

Embed = Callable[[str], Awaitable[np.ndarray | None]]
WORD_VECTORS_KEPT = 4_096   # ~6 MiB of float32 vectors of 384 dimensions


def content_words(texts: Iterable[str]) -> list[str]:
    """The distinct words of `texts` worth bridging to: letters only, three or more, not stop
    words; in their first order (so ties keep the best hit's words first)."""
    found: dict[str, None] = {}
    for text in texts:
        for word in fts.terms(text):
            if len(word) > 2 and word.isalpha() and word not in STOPWORDS:
                found.setdefault(word, None)
    return list(found)


def unrendered(terms: Iterable[str], rendered: Iterable[str], question: str,
               vocabulary: Iterable[str]) -> list[str]:
    """The question's content words worth bridging: not rendered by its translation or
    senses (`rendered`), not a name (capitalised in the question: "Caroline" reads the
    same in both languages), and not already a word of the chat's `vocabulary`."""
    names = {word for token in question.split() if token[:1].isupper()
             for word in fts.terms(token)}
    skip = set(rendered) | names | set(vocabulary)
    return [word for word in dict.fromkeys(terms)
            if word.isalpha() and len(word) > 2 and word not in STOPWORDS and word not in skip]


def merged(keyword: list[tuple[int, float]], bridged: list[tuple[int, float]], weight: float,
           limit: int) -> list[tuple[int, float]]:
    """The question's keyword hits with the bridge's: each hit's score over its search's
    best, the bridge's × `weight` × its coverage, the better for a memory found by both.
    The coverage stays the question's searches' (the bridge only adds evidence)."""
    coverage = float(getattr(keyword, "coverage", 1.0))
    if not bridged:
        return keyword
    best = max((s for _, s in keyword), default=1.0) or 1.0
    scores = {memory_id: value / best for memory_id, value in keyword}
    theirs = (max(s for _, s in bridged) or 1.0)
    factor = weight * float(getattr(bridged, "coverage", 1.0))
    for memory_id, value in bridged:
        scores[memory_id] = max(scores.get(memory_id, 0.0), factor * value / theirs)
    ranked = sorted(scores.items(), key=lambda item: -item[1])[:limit]   # stable
    return KeywordHits(ranked, coverage=coverage)


class WordBridge:
    """Nearest chat words for a question's unrendered words, by the embedding model.

    Word vectors are kept (LRU, `kept` words): a chat's words recur from question to
    question, so a bridge costs a few query embeddings once the chat's words are known."""

    def __init__(self, embed: Embed, threshold: float, kept: int = WORD_VECTORS_KEPT) -> None:
        self.embed = embed
        self.threshold = threshold
        self.kept = kept
        self._vectors: OrderedDict[str, np.ndarray] = OrderedDict()

    @property
    def kept_words(self) -> list[str]:
        """The words whose vectors are kept, least recently used first."""
        return list(self._vectors)

    async def vector(self, word: str) -> np.ndarray | None:
        found = self._vectors.get(word)
        if found is not None:
            self._vectors.move_to_end(word)
            return found
        vector = await self.embed(word)
        if vector is None:
            return None
        found = np.asarray(vector, dtype=np.float32)
        self._vectors[word] = found
        while len(self._vectors) > self.kept:
            self._vectors.popitem(last=False)
        return found

    async def bridge(self, sources: Iterable[str], vocabulary: Iterable[str]) -> list[str]:
        """For each source word, the vocabulary word nearest to it when their cosine reaches
        the threshold (none for that word otherwise); distinct, in the sources' order."""
        sources = list(dict.fromkeys(sources))
        words = list(dict.fromkeys(vocabulary))
        if not sources or not words:
            return []
        known: list[str] = []
        vectors: list[np.ndarray] = []
        for word in words:
            vector = await self.vector(word)
            if vector is not None:
                known.append(word)
                vectors.append(vector)
        if not vectors:
            return []
        matrix = np.stack(vectors)
        chosen: dict[str, None] = {}
        for word in sources:
            vector = await self.vector(word)
            if vector is None or vector.shape[0] != matrix.shape[1]:
                continue
            similarities = matrix @ vector
            best = int(np.argmax(similarities))
            if float(similarities[best]) >= self.threshold:
                chosen.setdefault(known[best], None)
        return list(chosen)

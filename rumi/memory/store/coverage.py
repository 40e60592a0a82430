"""How much of a question the keyword half of recall covers, shared by both stores.

SQLite's recall index (`recall_index`) and PostgreSQL's (`postgres.search`) each know, per
query word, how many of the chat's memories hold it; from those counts this module gives
the word's idf and the share of the question's evidence that the ranked words hold. Recall
weighs the keyword half by that share (`recall.retrieval`), so both stores must compute it
alike: one formula, here, rather than two copies that drift apart.
"""

from __future__ import annotations

import math
from collections.abc import Sequence


class KeywordHits(list[tuple[int, float]]):
    """(memory id, BM25 score) hits, best first, and how much of the query's evidence the
    chat's words hold (`query_coverage`): a plain list to callers that only rank."""

    def __init__(self, hits: Sequence[tuple[int, float]] = (), coverage: float = 1.0) -> None:
        super().__init__(hits)
        self.coverage = coverage


def idf(count: int, size: int) -> float:
    """A word's rarity among `size` documents of which `count` hold it: BM25's idf in the
    always-positive form (Lucene's), log(1 + (N − n + ½) / (n + ½)).
    A word in every memory of a big chat is worth almost nothing; a word never said is worth
    the most."""
    size = max(size, count)
    return math.log1p((size - count + 0.5) / (count + 0.5))


def query_coverage(counts: Sequence[int], ranked: Sequence[bool], size: int) -> float:
    """The share of the query's evidence (its words' idf in this chat) held by the words the
    keyword search ranks: 1 when every word is a rare word of the chat, near 0 when only
    words the chat says everywhere (speaker names) or never (another language) are left.

    A word the chat never used counts as the rarest possible (count 0): a Spanish question
    about an English chat shares names with it and little else, so its keyword half is
    weak evidence and meaning (the vector half) should decide. A word searched through its
    alternatives (the same word in the other language) counts with theirs."""
    total = sum(idf(c, size) for c in counts)
    if total <= 0:
        return 0.0
    return sum(idf(c, size) for c, r in zip(counts, ranked, strict=True) if r and c) / total

"""Fusing keyword (BM25) and vector (cosine) candidates into one 0–1 relevance.

Normalised score sums beat reciprocal-rank fusion here (LoCoMo dev, R@5/R@10, `locomo_recall.py
--ablate rrf`: weighted RRF 57.0/70.4 vs sum 69.7/78.6 on the same candidates): RRF throws away
how much better the best keyword hit is.

    fused = bm25 / max(bm25) + w_vec · (cos − min cos) / (max cos − min cos) + w_date · in_range
    relevance = fused / max(fused)

Both normalisations run over this query's candidate set. Candidates seen only by the vector
search must reach `min_similarity` cosine, so a question about nothing stored does not drag
in the nearest random memories. `date_candidates` — memories found only because their time
falls in a span the query names relatively ("ayer", "last week") — are kept whatever their
cosine: for "¿qué hice ayer?" the time is the question.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Hashable, Mapping, Sequence
from typing import NamedTuple


class Fused(NamedTuple):
    """One candidate's fused relevance. A named tuple, not a frozen dataclass: recall makes
    one per candidate in `fuse` and again in `with_sessions` (~200 per query), and a frozen
    dataclass sets each field through `object.__setattr__`, several times slower."""

    memory_id: int
    relevance: float
    keyword: float  # bm25 / max bm25 (0 when not a keyword hit)
    vector: float  # raw cosine (0 when unknown)


def fuse(
    keyword_hits: Sequence[tuple[int, float]],
    cosines: Mapping[int, float],
    *,
    vector_weight: float,
    min_similarity: float,
    keyword_weight: float = 1.0,
    date_boost: float = 0.0,
    in_date_range: frozenset[int] = frozenset(),
    date_candidates: frozenset[int] = frozenset(),
) -> list[Fused]:
    """Candidates (keyword hits ∪ vector hits ∪ date candidates) with relevance, best first;
    ties by id."""
    bm25 = {i: s for i, s in keyword_hits if s > 0}
    top_bm25 = max(bm25.values(), default=0.0)
    ids = set(bm25) | {i for i, c in cosines.items() if c >= min_similarity} | date_candidates
    if not ids:
        return []
    known = [cosines[i] for i in ids if i in cosines]
    lo = min(known, default=0.0)
    span = (max(known) - lo) if known else 0.0
    raw: dict[int, tuple[float, float, float]] = {}
    for i in ids:
        kw = keyword_weight * bm25.get(i, 0.0) / top_bm25 if top_bm25 > 0 else 0.0
        cos = cosines.get(i)
        vec = ((cos - lo) / span if span > 0 else 1.0) if cos is not None else 0.0
        fused = kw + vector_weight * vec + (date_boost if i in in_date_range else 0.0)
        raw[i] = (fused, kw, cos if cos is not None else 0.0)
    best = max(f for f, _, _ in raw.values())
    out = [Fused(i, (f / best) if best > 0 else 0.0, kw, cos) for i, (f, kw, cos) in raw.items()]
    out.sort(key=lambda x: (-x.relevance, x.memory_id))
    return out


def with_sessions(fused: Sequence[Fused], session_of: Mapping[int, Hashable],
                  weight: float, radius: int = 0) -> list[Fused]:
    """Each candidate's relevance fused with its session's: the best relevance among the
    candidates of the same session (the day it was said), so a turn in the conversation that
    best matches the question rises over an equally good turn from an unrelated day.

        relevance = (own + weight · best of its session) / max over candidates

    Late interaction at session level (score a session by its best turn, fuse it with the
    turn's own score); `weight` 0 returns the candidates unchanged. `radius` > 0 narrows the
    session to a window: the candidates of the same session whose ids are within `radius`
    of the candidate's (memories are numbered as they are saved, so the turns just around
    it), so a strong hit lifts what was said next to it, not the whole day."""
    if weight <= 0 or not fused:
        return list(fused)
    if radius > 0:
        best = _window_best(fused, session_of, radius)
    else:
        by_session: dict[Hashable, float] = {}
        for f in fused:
            key = session_of.get(f.memory_id)
            if key is not None:
                by_session[key] = max(by_session.get(key, 0.0), f.relevance)
        best = {f.memory_id: by_session.get(session_of.get(f.memory_id), 0.0) for f in fused
                if session_of.get(f.memory_id) is not None}
    raw = [f.relevance + weight * best.get(f.memory_id, 0.0) for f in fused]
    top = max(raw)
    out = [Fused(f.memory_id, r / top if top > 0 else 0.0, f.keyword, f.vector)
           for f, r in zip(fused, raw, strict=True)]
    out.sort(key=lambda x: (-x.relevance, x.memory_id))
    return out


def _window_best(fused: Sequence[Fused], session_of: Mapping[int, Hashable],
                 radius: int) -> dict[int, float]:
    """Candidate id → the best relevance among the candidates of its session within `radius`
    ids of it (itself included)."""
    by_session: dict[Hashable, list[tuple[int, float]]] = {}
    for f in fused:
        key = session_of.get(f.memory_id)
        if key is not None:
            by_session.setdefault(key, []).append((f.memory_id, f.relevance))
    best: dict[int, float] = {}
    for members in by_session.values():
        # ids are unique, so a window holds at most 2·radius + 1 of them: sorted + bisect
        # keeps a big day (all of a chat's candidates from one day) linear, not quadratic
        members.sort()
        ids = [i for i, _ in members]
        for i, _ in members:
            low, high = bisect_left(ids, i - radius), bisect_right(ids, i + radius)
            best[i] = max(r for _, r in members[low:high])
    return best

"""Session-level fusion: a turn's relevance plus the best relevance of its session."""

from __future__ import annotations

import random
from datetime import date

import pytest

from rumi.memory.recall.fusion import Fused, fuse, with_sessions


def test_a_turn_in_the_session_that_matches_best_rises() -> None:
    """Two equally good turns (0.6): the one whose day also holds the best match (1.0) wins;
    the best match stays first; weight 0 changes nothing."""
    fused = [Fused(1, 1.0, 1.0, 0.9), Fused(2, 0.6, 0.6, 0.5), Fused(3, 0.6, 0.6, 0.5)]
    day = {1: date(2023, 5, 8), 2: date(2023, 7, 1), 3: date(2023, 5, 8)}
    out = with_sessions(fused, day, 0.5)
    assert [f.memory_id for f in out] == [1, 3, 2]
    assert out[0].relevance == 1.0
    assert out[1].relevance == pytest.approx((0.6 + 0.5 * 1.0) / 1.5)
    assert out[2].relevance == pytest.approx((0.6 + 0.5 * 0.6) / 1.5)
    assert out[1].keyword == 0.6 and out[1].vector == 0.5  # the parts are kept as they were
    assert with_sessions(fused, day, 0.0) == fused
    assert with_sessions([], day, 0.5) == []


def test_a_memory_without_a_session_keeps_its_own_score() -> None:
    fused = fuse([(1, 4.0), (2, 2.0)], {}, vector_weight=0.7, min_similarity=0.25)
    out = with_sessions(fused, {1: date(2023, 1, 1)}, 1.0)
    assert [(f.memory_id, round(f.relevance, 3)) for f in out] == [(1, 1.0), (2, 0.25)]


def test_a_window_lifts_only_the_turns_next_to_a_strong_hit() -> None:
    """Same day, radius 1: the turn right after the best match (id 2) rises; a turn of that
    day far from it (id 9) keeps its own score, as does a turn of another day (id 3)."""
    fused = [Fused(1, 1.0, 1.0, 0.9), Fused(2, 0.5, 0.5, 0.5), Fused(9, 0.55, 0.5, 0.5),
             Fused(3, 0.6, 0.6, 0.5)]
    day = {1: date(2023, 5, 8), 2: date(2023, 5, 8), 9: date(2023, 5, 8), 3: date(2023, 7, 1)}
    out = with_sessions(fused, day, 0.5, radius=1)
    assert [f.memory_id for f in out] == [1, 2, 3, 9]
    assert out[1].relevance == pytest.approx((0.5 + 0.5 * 1.0) / 1.5)
    assert out[2].relevance == pytest.approx((0.6 + 0.5 * 0.6) / 1.5)
    assert out[3].relevance == pytest.approx((0.55 + 0.5 * 0.55) / 1.5)
    # the whole day (radius 0) lifts id 9 as much as id 2
    whole = {f.memory_id: f.relevance for f in with_sessions(fused, day, 0.5)}
    assert whole[9] > whole[3]


def test_a_big_day_gets_the_window_the_definition_gives() -> None:
    """A chat whose candidates all come from one day (a busy day, or an import): each turn's
    window best is still the best relevance within `radius` ids of it, for scattered and
    adjacent ids alike (checked against the definition, candidate by candidate)."""
    rng = random.Random(35)
    ids = rng.sample(range(1, 400), 100)
    fused = [Fused(i, rng.random(), 0.5, 0.5) for i in ids]
    day = {i: date(2023, 5, 8) if i % 7 else date(2023, 5, 9) for i in ids}
    for radius in (1, 2, 5):
        out = {f.memory_id: f.relevance for f in with_sessions(fused, day, 0.5, radius=radius)}
        raw = {}
        for f in fused:
            window = [g.relevance for g in fused
                      if day[g.memory_id] == day[f.memory_id]
                      and abs(g.memory_id - f.memory_id) <= radius]
            raw[f.memory_id] = f.relevance + 0.5 * max(window)
        top = max(raw.values())
        assert out == pytest.approx({i: r / top for i, r in raw.items()})

"""CTO score: weights, per-type decay, frequency saturation, relevance gating."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

import pytest

from rumi.config import MemorySettings
from rumi.memory.recall.scoring import Scorer, frequency, recency, score
from rumi.memory.store.models import Memory, MemorySource, MemoryStatus, MemoryType

NOW = datetime(2026, 1, 10, 12, 0, tzinfo=UTC)


def memory(kind: MemoryType = MemoryType.FACT, *, age_days: float = 0.0, importance: float = 0.5,
           access_days: int = 0, access_count: int | None = None, content: str = "x") -> Memory:
    created = NOW - timedelta(days=age_days)
    return Memory(id=1, chat_id="1", type=kind, content=content, key=None, summary=None,
                  source=MemorySource.AUTO, importance=importance, confidence=0.8,
                  access_count=access_days if access_count is None else access_count,
                  last_accessed_at=None, created_at=created,
                  updated_at=created, expires_at=None, status=MemoryStatus.ACTIVE,
                  superseded_by=None, related_ids=(), content_hash="h", embedding_model=None,
                  access_days=access_days)


def test_recency_decays_per_type_at_configured_rates() -> None:
    settings = MemorySettings()
    assert recency(memory(MemoryType.TEMPORAL, age_days=2), NOW, settings) == pytest.approx(
        math.exp(-0.5 * 2))
    assert recency(memory(MemoryType.PREFERENCE, age_days=2), NOW, settings) == pytest.approx(
        math.exp(-0.01 * 2))
    assert recency(memory(MemoryType.PROFILE, age_days=400), NOW, settings) == 1.0
    assert recency(memory(MemoryType.FACT, age_days=-3), NOW, settings) == 1.0


def test_temporal_falls_below_preference_with_time_but_not_when_fresh() -> None:
    settings = MemorySettings()
    fresh_t = score(memory(MemoryType.TEMPORAL), 1.0, NOW, settings)
    fresh_p = score(memory(MemoryType.PREFERENCE), 1.0, NOW, settings)
    assert fresh_t.total == pytest.approx(fresh_p.total)
    old_t = score(memory(MemoryType.TEMPORAL, age_days=7), 1.0, NOW, settings)
    old_p = score(memory(MemoryType.PREFERENCE, age_days=7), 1.0, NOW, settings)
    assert old_t.total < old_p.total
    assert old_t.recency < 0.05 < 0.9 < old_p.recency


def test_decay_rates_come_from_config() -> None:
    settings = MemorySettings(decay_per_day={"temporal": 0.0, "preference": 2.0})
    t = score(memory(MemoryType.TEMPORAL, age_days=3), 1.0, NOW, settings)
    p = score(memory(MemoryType.PREFERENCE, age_days=3), 1.0, NOW, settings)
    assert t.recency == 1.0 and p.recency < 0.01 and t.total > p.total


def test_weighted_total_matches_the_cto_formula_when_ungated() -> None:
    settings = MemorySettings(recall_gate_by_relevance=False)
    m = memory(MemoryType.FACT, age_days=1, importance=0.9, access_days=3)
    parts = score(m, 0.6, NOW, settings)
    expected = (0.20 * math.exp(-0.1) + 0.40 * 0.9 + 0.30 * 0.6
                + 0.10 * (math.log1p(3) / math.log1p(20)))   # recall_frequency_saturation = 20
    assert parts.total == pytest.approx(expected)
    assert (parts.importance, parts.relevance) == (0.9, 0.6)


def test_gating_scales_recency_and_frequency_by_relevance() -> None:
    settings = MemorySettings()
    popular = memory(access_days=50)
    assert score(popular, 0.0, NOW, settings).total == pytest.approx(0.40 * 0.5)
    weak_popular = score(popular, 0.5, NOW, settings)
    strong_unused = score(memory(), 0.9, NOW, settings)
    assert strong_unused.total > weak_popular.total


def test_frequency_saturates() -> None:
    assert frequency(0, 10) == 0.0
    assert 0 < frequency(1, 10) < frequency(5, 10) < frequency(10, 10) == 1.0
    assert frequency(1000, 10) == 1.0


def test_frequency_reads_the_days_of_use_not_every_access() -> None:
    """Fifty accesses in one afternoon are one day of use: they weigh what one access does,
    and less than three accesses on three days."""
    settings = MemorySettings(recall_gate_by_relevance=False)
    burst = score(memory(access_count=50, access_days=1), 0.5, NOW, settings)
    once = score(memory(access_count=1, access_days=1), 0.5, NOW, settings)
    spread = score(memory(access_count=3, access_days=3), 0.5, NOW, settings)
    assert burst.frequency == once.frequency == frequency(1, settings.recall_frequency_saturation)
    assert burst.total == once.total < spread.total


def test_a_memory_that_ends_asking_weighs_less_than_the_answer() -> None:
    """The turn that asks about a topic shares its words with a later question but rarely
    answers it: its relevance × `recall_question_weight` (0.8), wherever the question sits
    at the end; a question inside a statement, or 1.0, changes nothing."""
    settings = MemorySettings()
    asks = score(memory(content="Mel: Nice! What instruments do you play?  \n"), 0.7, NOW,
                 settings)
    answers = score(memory(content="Caroline: I play the clarinet and the violin."), 0.7, NOW,
                    settings)
    assert asks.relevance == pytest.approx(0.7 * 0.8) and answers.relevance == 0.7
    assert asks.total < answers.total
    for text in ("¿Qué tocas? Yo toco el violín.", "Did you go? [comparte una foto: a dog]"):
        assert score(memory(content=text), 0.7, NOW, settings).relevance == 0.7
    assert score(memory(content="¿Y tú qué tocas？"), 0.7, NOW, settings).relevance \
        == pytest.approx(0.56)
    same = MemorySettings(recall_question_weight=1.0)
    assert score(memory(content="What do you play?"), 0.7, NOW, same).relevance == 0.7


def test_custom_weights_change_the_order() -> None:
    important = memory(importance=1.0)
    relevant = memory(importance=0.0)
    default = MemorySettings()
    assert score(important, 0.3, NOW, default).total > score(relevant, 1.0, NOW, default).total
    relevance_only = MemorySettings(weight_importance=0.0, weight_relevance=1.0)
    assert (score(important, 0.3, NOW, relevance_only).total
            < score(relevant, 1.0, NOW, relevance_only).total)


def test_one_scorer_for_many_memories_gives_the_formula_s_floats_exactly() -> None:
    """Recall scores ~100 candidates with one `Scorer` (settings read once, `ScoreParts`
    only for those returned): each float must be the one the formula written out gives."""
    settings = MemorySettings(recall_gate_by_relevance=True)
    scorer = Scorer(settings, NOW)
    for kind in (MemoryType.TEMPORAL, MemoryType.PREFERENCE, MemoryType.FACT, MemoryType.PROFILE):
        for age, count, importance, relevance in ((0.3, 0, 0.5, 0.73), (41.9, 3, 0.9, 0.112),
                                                   (-2.0, 40, 0.0, 1.4), (400.0, 1, 1.2, -0.1)):
            m = memory(kind, age_days=age, importance=importance, access_days=count)
            rel = min(1.0, max(0.0, relevance))
            rec = recency(m, NOW, settings)
            freq = frequency(count, settings.recall_frequency_saturation)
            imp = min(1.0, max(0.0, importance))
            total = (settings.weight_importance * imp + settings.weight_relevance * rel
                     + rel * (settings.weight_recency * rec + settings.weight_frequency * freq))
            assert scorer.components(m, relevance) == (rel, rec, imp, freq, total)
            parts = score(m, relevance, NOW, settings, keyword=0.4, vector=0.8)
            assert (parts.relevance, parts.recency, parts.importance, parts.frequency,
                    parts.total, parts.keyword, parts.vector) == (rel, rec, imp, freq, total,
                                                                  0.4, 0.8)
            assert scorer.parts(m, relevance, keyword=0.4, vector=0.8) == parts

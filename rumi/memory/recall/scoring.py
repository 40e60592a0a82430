"""The CTO memory score: 0.20·recency + 0.40·importance + 0.30·relevance + 0.10·frequency.

Weights and per-type decay rates come from `MemorySettings` (seed 001's defaults).

- **recency** = exp(-decay[type] · age in days), age counted from the memory's own time
  (`created_at`: when it was said) to `now`. Not from the last recall: a recall that refreshed
  recency would keep re-surfacing whatever it surfaced once. Use is rewarded by *frequency*.
- **importance** as stored (0–1).
- **relevance** 0–1 from the fused hybrid search (see `fusion`).
- **frequency** = log(1 + access_days) / log(1 + saturation), capped at 1 — seed 001 says
  "based on access_count"; Rumi counts the *days* a memory was used (uses at least 20 hours
  apart, rumi/memory/store/days.py), not every access: every answer marks the memories it put
  in the prompt as accessed, so a burst of questions in one conversation compounded whatever
  was recalled, rightly or not, and those memories then crowded unrelated later questions.

A memory that **ends asking** (its last sentence a question: "…and you, what did you do last
weekend?") has its relevance multiplied by `recall_question_weight` (0.8): it shares the
topic's words with a later question about that topic but is rarely what answers it — on
LoCoMo such turns are 23 % of the turns and 9 % of the evidence, and the misses read by hand
were "a turn that asks about the topic ranked above the turn that answers" (docs/benchmarks.md,
"Step 7"). The last sentence ends in "?" exactly when the text does, so the check is one
`endswith` per candidate.

Recency and frequency are *gated by relevance* (multiplied by it) when
`recall_gate_by_relevance` is on (default): they reorder memories that match the query, but a
fresh or popular memory cannot climb over a better match on freshness alone. Measured on LoCoMo
(997 unrelated questions against one chat, every result marked as accessed), the ungated formula
loses ~4 R@5 / ~3 R@10 to that feedback loop; gated, ~0.5 / ~0.
"""

from __future__ import annotations

import math
from datetime import datetime

from rumi.config import MemorySettings
from rumi.memory.store.models import Memory, MemoryType, RecallRow, ScoreParts

DEFAULT_DECAY = 0.10


def decay_rate(settings: MemorySettings, memory_type: str) -> float:
    return max(0.0, float(settings.decay_per_day.get(memory_type, DEFAULT_DECAY)))


def recency(memory: Memory, now: datetime, settings: MemorySettings) -> float:
    """exp(-rate · days since the memory's time); a memory from the future counts as new."""
    age_days = max(0.0, (now - memory.created_at).total_seconds() / 86_400.0)
    return math.exp(-decay_rate(settings, memory.type.value) * age_days)


QUESTION_MARKS = ("?", "？")


def ends_asking(content: str) -> bool:
    """Whether `content`'s last sentence is a question (a trailing "?"). Stored texts rarely
    end in whitespace: `rstrip` (a copy of the text) only when one does."""
    if content.endswith(QUESTION_MARKS):
        return True
    return content[-1:].isspace() and content.rstrip().endswith(QUESTION_MARKS)


def frequency(access_days: int, saturation: int) -> float:
    """0–1 from the days a memory was used (`Memory.access_days`)."""
    if access_days <= 0:
        return 0.0
    return min(1.0, math.log1p(access_days) / math.log1p(max(1, saturation)))


def score(
    memory: Memory,
    relevance: float,
    now: datetime,
    settings: MemorySettings,
    *,
    keyword: float = 0.0,
    vector: float = 0.0,
) -> ScoreParts:
    """All four components (raw, 0–1) and the weighted total."""
    return Scorer(settings, now).parts(memory, relevance, keyword=keyword, vector=vector)


class Scorer:
    """`score` for many memories at one `now`: the settings are read once, and a candidate's
    total comes without its `ScoreParts` (recall orders ~100 candidates and explains only the
    few it returns). The same arithmetic as `recency` and `frequency`, in the same order, so
    the floats are the ones `score` gives."""

    def __init__(self, settings: MemorySettings, now: datetime) -> None:
        self.settings = settings
        self.now = now
        self._rates: dict[MemoryType, float] = {}
        self._saturation = math.log1p(max(1, settings.recall_frequency_saturation))
        self._gated = settings.recall_gate_by_relevance
        self._question = settings.recall_question_weight
        # read once: `components` runs for each of ~100 candidates per recall
        self._weights = (settings.weight_importance, settings.weight_relevance,
                         settings.weight_recency, settings.weight_frequency)

    def components(self, memory: Memory | RecallRow, relevance: float
                   ) -> tuple[float, float, float, float, float]:
        """(relevance, recency, importance, frequency, total) of `memory`; the relevance
        as scored (× `recall_question_weight` when the memory ends asking)."""
        rel = min(1.0, max(0.0, relevance))
        if self._question != 1.0 and ends_asking(memory.content):
            rel *= self._question
        kind = memory.type   # keyed by the member: `.value` is a descriptor call each time
        rate = self._rates.get(kind)
        if rate is None:
            rate = self._rates[kind] = decay_rate(self.settings, kind.value)
        age_days = max(0.0, (self.now - memory.created_at).total_seconds() / 86_400.0)
        rec = math.exp(-rate * age_days)
        count = memory.access_days
        freq = 0.0 if count <= 0 else min(1.0, math.log1p(count) / self._saturation)
        imp = min(1.0, max(0.0, memory.importance))
        gate = rel if self._gated else 1.0
        w_imp, w_rel, w_rec, w_freq = self._weights
        total = w_imp * imp + w_rel * rel + gate * (w_rec * rec + w_freq * freq)
        return rel, rec, imp, freq, total

    def parts(self, memory: Memory | RecallRow, relevance: float, *, keyword: float = 0.0,
              vector: float = 0.0) -> ScoreParts:
        rel, rec, imp, freq, total = self.components(memory, relevance)
        return ScoreParts(recency=rec, importance=imp, relevance=rel, frequency=freq,
                          total=total, keyword=keyword, vector=vector)

"""Rumi reads its scoring from the active `cto.algorithms` row (seed 001's versioned config).

On PostgreSQL the weights (recency, importance, relevance, frequency), the per-type decay
rates, the frequency saturation, the relevance gate and the weight of a memory that ends
asking (`question_weight`, Rumi's) come from the database, so every Rumi
sharing the store scores alike and an operator changes them with one UPDATE (a new version
row made active). Values the row lacks keep the configured ones.
"""

from __future__ import annotations

import logging
from typing import Any

from rumi.config import MemorySettings

log = logging.getLogger(__name__)

_WEIGHTS = {"recency": "weight_recency", "importance": "weight_importance",
            "relevance": "weight_relevance", "frequency": "weight_frequency"}


def scoring_settings(config: dict[str, Any], settings: MemorySettings) -> MemorySettings:
    """`settings` with the scoring of an algorithm's `config` JSON applied."""
    scoring = config.get("scoring") if isinstance(config, dict) else None
    if not isinstance(scoring, dict):
        return settings
    update: dict[str, Any] = {}
    weights = scoring.get("weights") or {}
    for name, field in _WEIGHTS.items():
        if isinstance(weights.get(name), int | float):
            update[field] = float(weights[name])
    rates = scoring.get("decay_rates")
    if isinstance(rates, dict):
        # the row is the whole truth: a type it does not name decays at the default rate
        # (scoring.DEFAULT_DECAY), as cto.calculate_memory_score does
        update["decay_per_day"] = {k: float(v) for k, v in rates.items()
                                   if isinstance(v, int | float)}
    if isinstance(scoring.get("frequency_saturation"), int):
        update["recall_frequency_saturation"] = max(1, scoring["frequency_saturation"])
    if isinstance(scoring.get("gate_by_relevance"), bool):
        update["recall_gate_by_relevance"] = scoring["gate_by_relevance"]
    weight = scoring.get("question_weight")
    if isinstance(weight, int | float) and not isinstance(weight, bool):
        update["recall_question_weight"] = min(1.0, max(0.0, float(weight)))
    return MemorySettings.model_validate({**settings.model_dump(), **update})


async def read_scoring(conn: Any, settings: MemorySettings) -> MemorySettings:
    """The settings with the active algorithm's scoring (unchanged when none is active)."""
    cur = await conn.execute(
        "SELECT code, version, config FROM cto.algorithms WHERE status = 'active'")
    row = await cur.fetchone()
    if row is None:
        log.warning("no active row in cto.algorithms: scoring from the config file")
        return settings
    return scoring_settings(row["config"] if isinstance(row, dict) else row[2], settings)

"""Budgeted selection: tier order system → core → working → retrieved, never over budget."""

from __future__ import annotations

import random
from datetime import UTC, datetime

from rumi.memory.recall.selection import Candidate, Tier, select, select_context, tier_for_block
from rumi.memory.store.blocks import Block, BlockScope, BlockStatus


def test_priority_order_and_budget() -> None:
    items = [
        Candidate("retrieved-hi", Tier.RETRIEVED, 10, priority=0.9),
        Candidate("working", Tier.WORKING, 10),
        Candidate("system", Tier.SYSTEM, 10),
        Candidate("core-low", Tier.CORE, 10, priority=1),
        Candidate("core-high", Tier.CORE, 10, priority=5),
    ]
    chosen = select(items, 40)
    assert [c.key for c in chosen.items] == ["system", "core-high", "core-low", "working"]
    assert [c.key for c in chosen.dropped] == ["retrieved-hi"]
    assert chosen.used_tokens == 40


def test_an_item_too_big_is_skipped_and_smaller_later_ones_fill_the_space() -> None:
    items = [Candidate("big", Tier.CORE, 50), Candidate("small", Tier.RETRIEVED, 5)]
    chosen = select(items, 20)
    assert [c.key for c in chosen.items] == ["small"]
    assert chosen.used_tokens == 5


def test_zero_or_negative_budget_selects_nothing() -> None:
    items = [Candidate("a", Tier.SYSTEM, 1)]
    assert select(items, 0).items == [] and select(items, -5).items == []


def test_never_exceeds_budget_on_random_inputs() -> None:
    rng = random.Random(7)
    for _ in range(300):
        items = [Candidate(n, rng.choice(list(Tier)), rng.randint(0, 60), rng.random())
                 for n in range(rng.randint(0, 25))]
        budget = rng.randint(0, 300)
        chosen = select(items, budget)
        assert chosen.used_tokens == sum(c.tokens for c in chosen.items) <= budget
        assert len(chosen.items) + len(chosen.dropped) == len(items)
        tiers = [c.tier for c in chosen.items]
        fits_dropped = [c for c in chosen.dropped if c.tokens <= budget - chosen.used_tokens]
        assert not (budget > 0 and fits_dropped), "a droppable item still fits"
        assert tiers == sorted(tiers)


def _block(block_id: int, scope: BlockScope, category: str, priority: int, tokens: int) -> Block:
    now = datetime(2026, 1, 1, tzinfo=UTC)
    return Block(id=block_id, code=f"b{block_id}", name="", scope=scope,
                 chat_id=None if scope == BlockScope.GLOBAL else "1", session_id=None,
                 category=category, content="x" * 40, content_hash="h", priority=priority,
                 token_count=tokens, status=BlockStatus.ACTIVE, metadata={}, created_at=now,
                 updated_at=now)


def test_blocks_map_to_tiers() -> None:
    assert tier_for_block("global", "rules") == Tier.SYSTEM
    assert tier_for_block("global", "knowledge") == Tier.CORE
    assert tier_for_block("chat", "persona") == Tier.CORE
    assert tier_for_block("session", "rules") == Tier.WORKING


def test_select_context_puts_blocks_before_memories() -> None:
    from rumi.memory.store.models import ScoredMemory, ScoreParts
    from tests.memory.recall.test_scoring import memory

    blocks = [_block(1, BlockScope.SESSION, "knowledge", 0, 30),
              _block(2, BlockScope.GLOBAL, "rules", 0, 30)]
    scored = [ScoredMemory(memory(), ScoreParts(0, 0, 1, 0, 0.9))]
    chosen = select_context(blocks, scored, 65, lambda text: 10)
    assert [c.key for c in chosen.items] == [("block", 2), ("block", 1)]
    chosen = select_context(blocks, scored, 75, lambda text: 10)
    assert [c.key for c in chosen.items][-1] == ("memory", 1)
    assert chosen.used_tokens == 70

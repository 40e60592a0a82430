"""Token-budgeted selection in CTO priority order: system → core → working → retrieved.

Seed 001's `selection` ({"strategy": "priority", "priority_order": [...]}): tiers are taken in
order; inside a tier, higher `priority` first (block priority, or a memory's score), then the
order given. An item that does not fit is skipped and smaller later items may still fill the
space; the sum of chosen tokens never exceeds the budget. `Block`s map to tiers by
`tier_for_block` (global rules/persona are system, chat-scope blocks core, session-scope
working); recalled memories are `retrieved`.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any

from rumi.memory.store.blocks import Block
from rumi.memory.store.models import ScoredMemory


class Tier(IntEnum):
    SYSTEM = 0
    CORE = 1
    WORKING = 2
    RETRIEVED = 3


@dataclass(frozen=True)
class Candidate:
    key: Hashable
    tier: Tier
    tokens: int
    priority: float = 0.0
    payload: Any = None


@dataclass(frozen=True)
class Selection:
    items: list[Candidate]
    dropped: list[Candidate] = field(default_factory=list)
    used_tokens: int = 0
    budget: int = 0


def select(candidates: Iterable[Candidate], budget: int) -> Selection:
    """Greedy by (tier, -priority, input order); never over `budget` (≤ 0 selects nothing)."""
    ordered = sorted(enumerate(candidates), key=lambda p: (p[1].tier, -p[1].priority, p[0]))
    limit = max(0, int(budget))
    chosen: list[Candidate] = []
    dropped: list[Candidate] = []
    used = 0
    for _, item in ordered:
        cost = max(0, int(item.tokens))
        if limit > 0 and used + cost <= limit:
            chosen.append(item)
            used += cost
        else:
            dropped.append(item)
    return Selection(items=chosen, dropped=dropped, used_tokens=used, budget=limit)


_SYSTEM_CATEGORIES = frozenset({"persona", "rules", "capabilities", "instructions", "system"})


def tier_for_block(scope: str, category: str) -> Tier:
    """Global persona/rules/capabilities/instructions → system; other global and chat → core;
    session → working."""
    if scope == "session":
        return Tier.WORKING
    if scope == "global" and category in _SYSTEM_CATEGORIES:
        return Tier.SYSTEM
    return Tier.CORE


def select_context(
    blocks: Iterable[Block],
    memories: Iterable[ScoredMemory],
    budget: int,
    count_tokens: Callable[[str], int],
) -> Selection:
    """Blocks (by their tier and priority) and recalled memories (by score) within `budget`.

    A block's stored `token_count` is trusted when set; memories are measured with
    `count_tokens`. Each chosen Candidate's `payload` is the Block or ScoredMemory.
    """
    items: list[Candidate] = []
    for block in blocks:
        tokens = block.token_count or count_tokens(block.content)
        items.append(Candidate(("block", block.id), tier_for_block(block.scope.value,
                                                                   block.category),
                               tokens, float(block.priority), block))
    for scored in memories:
        items.append(Candidate(("memory", scored.memory.id), Tier.RETRIEVED,
                               count_tokens(scored.memory.content), scored.score.total, scored))
    return select(items, budget)

"""Keeping long-term memory tidy: every new memory is checked against what is already known.

Cheap first: a text-similarity ratio above 0.8 (difflib) against an existing active memory of
the same chat is a duplicate. For the rest, the existing memories that share the key or are
vector neighbours go to the LLM, which decides ADD / UPDATE / SUPERSEDE / NOOP (Mem0 style) in
JSON. Superseding keeps the old memory with status `superseded` so history is never lost.
"""

from __future__ import annotations

import difflib
import json
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from rumi.agent.llm import LLMClient, LLMUnavailable
from rumi.memory.models import Memory, MemoryInputError, NewMemory

log = logging.getLogger(__name__)

DUPLICATE_RATIO = 0.8
MAX_CANDIDATES = 5

Neighbours = Callable[[str, str, int], Awaitable[Sequence[Memory]]]

DECIDE_PROMPT = """\
You maintain a long-term memory about a user. A NEW memory arrived; EXISTING similar memories \
are listed with their ids. Decide what to do and reply with ONE JSON object:
{"action": "ADD|UPDATE|SUPERSEDE|NOOP", "target_id": <id or null>, "content": "<text or null>"}
- ADD: the new memory is different information; keep both.
- UPDATE: it refines/extends an existing memory without contradicting it; give the merged text \
in "content" (same language, third person) and the target_id.
- SUPERSEDE: it contradicts an existing memory (the situation changed, e.g. a new job or city); \
give the target_id that is now outdated.
- NOOP: it is already known; nothing to store."""

Action = Literal["ADD", "UPDATE", "SUPERSEDE", "NOOP"]


class Decision(BaseModel):
    model_config = ConfigDict(extra="ignore")

    action: Action
    target_id: int | None = None
    content: str | None = None


@dataclass(frozen=True)
class Outcome:
    action: Action
    memory: Memory | None
    target: Memory | None = None
    reason: str = ""


def store_neighbours(store: Any, min_similarity: float = 0.55) -> Neighbours:
    """Vector neighbours from the store (cosine >= `min_similarity`); [] without embeddings."""

    async def find(chat_id: str, text: str, limit: int) -> Sequence[Memory]:
        hits = await store.vector_search(chat_id, text, limit)
        return await store.get_many(chat_id, [i for i, s in hits if s >= min_similarity])

    return find


def normalize(text: str) -> str:
    return " ".join(text.casefold().split()).strip(" .")


def similarity(a: str, b: str) -> float:
    return difflib.SequenceMatcher(None, normalize(a), normalize(b)).ratio()


def similar(a: str, b: str, threshold: float) -> float | None:
    """The ratio when it exceeds `threshold`, else None; cheap upper bounds first, because
    this runs against every active memory of a chat."""
    matcher = difflib.SequenceMatcher(None, normalize(a), normalize(b))
    if matcher.real_quick_ratio() <= threshold or matcher.quick_ratio() <= threshold:
        return None
    ratio = matcher.ratio()
    return ratio if ratio > threshold else None


def parse_decision(text: str, candidate_ids: set[int]) -> Decision:
    """Validate the LLM's decision; ValueError if it is not usable."""
    try:
        data: Any = json.loads(text or "")
        decision = Decision.model_validate(data)
    except (json.JSONDecodeError, ValidationError) as exc:
        raise ValueError(f"invalid decision JSON: {exc}") from exc
    if decision.action in ("UPDATE", "SUPERSEDE") and decision.target_id not in candidate_ids:
        raise ValueError(f"target {decision.target_id} is not one of the candidates")
    if decision.action == "UPDATE" and not (decision.content or "").strip():
        raise ValueError("UPDATE without content")
    return decision


class Consolidator:
    """Integrates new memories into a chat's store without duplicates or silent contradictions."""

    def __init__(
        self,
        store: Any,
        llm: LLMClient | None,
        *,
        neighbours: Neighbours | None = None,
        duplicate_ratio: float = DUPLICATE_RATIO,
    ) -> None:
        self.store = store
        self.llm = llm
        self.neighbours = neighbours
        self.duplicate_ratio = duplicate_ratio

    async def integrate_many(self, chat_id: str, items: Sequence[NewMemory]) -> list[Outcome]:
        return [await self.integrate(chat_id, item) for item in items]

    async def integrate(self, chat_id: str, new: NewMemory) -> Outcome:
        """Store `new` the right way: add, merge into, supersede, or skip an existing memory."""
        active = await self.store.list(chat_id, limit=2_000)
        duplicate = self._duplicate_of(new, active)
        if duplicate is not None:
            if new.importance > duplicate.importance + 1e-9:
                duplicate = await self.store.update(chat_id, duplicate.id,
                                                    importance=new.importance)
            return Outcome("NOOP", None, duplicate, "duplicate text")
        candidates = await self._candidates(chat_id, new, active)
        if not candidates or self.llm is None:
            saved = await self.store.save(chat_id, new)
            return Outcome("ADD", saved.memory, None, "no similar memory")
        decision = await self._decide(new, candidates)
        by_id = {m.id: m for m in candidates}
        target = by_id.get(decision.target_id) if decision.target_id is not None else None
        if decision.action == "NOOP":
            return Outcome("NOOP", None, target, "model: already known")
        if decision.action == "UPDATE" and target is not None:
            try:
                updated = await self.store.update(
                    chat_id, target.id, content=(decision.content or "").strip(),
                    importance=max(target.importance, new.importance),
                    confidence=max(target.confidence, new.confidence),
                )
            except MemoryInputError as exc:
                return Outcome("NOOP", None, target, f"merge not applied: {exc}")
            return Outcome("UPDATE", updated, target, "model: merged")
        if decision.action == "SUPERSEDE" and target is not None:
            fresh = new if new.key or not target.key else replace(new, key=target.key)
            created = await self.store.supersede(chat_id, target.id, fresh)
            return Outcome("SUPERSEDE", created, target, "model: contradiction")
        saved = await self.store.save(chat_id, new)
        return Outcome("ADD", saved.memory, None, "model: different information")

    def _duplicate_of(self, new: NewMemory, active: Sequence[Memory]) -> Memory | None:
        best: tuple[float, Memory] | None = None
        for memory in active:
            ratio = similar(new.content, memory.content, self.duplicate_ratio)
            if ratio is not None and (best is None or ratio > best[0]):
                best = (ratio, memory)
        return best[1] if best else None

    async def _candidates(
        self, chat_id: str, new: NewMemory, active: Sequence[Memory]
    ) -> list[Memory]:
        found: dict[int, Memory] = {}
        if new.key:
            for memory in active:
                if memory.key == new.key:
                    found[memory.id] = memory
        if self.neighbours is not None:
            try:
                for memory in await self.neighbours(chat_id, new.content, MAX_CANDIDATES):
                    if memory.status == "active":
                        found.setdefault(memory.id, memory)
            except Exception:
                log.exception("consolidation: neighbour search failed in chat %s", chat_id)
        return list(found.values())[:MAX_CANDIDATES]

    async def _decide(self, new: NewMemory, candidates: Sequence[Memory]) -> Decision:
        """Ask the model; anything unusable (bad JSON twice, model down) means ADD — never lose."""
        listing = "\n".join(
            f"- id {m.id} [{m.type}{', key ' + m.key if m.key else ''}]: {m.content}"
            for m in candidates
        )
        key = f" (key {new.key})" if new.key else ""
        messages = [
            {"role": "system", "content": DECIDE_PROMPT},
            {"role": "user", "content": (
                f"NEW [{new.type}{key}]: {new.content}\n\nEXISTING:\n{listing}")},
        ]
        ids = {m.id for m in candidates}
        assert self.llm is not None
        for attempt in (1, 2):
            try:
                response = await self.llm.complete(messages, json_mode=True, max_tokens=400,
                                                   temperature=0)
            except LLMUnavailable as exc:
                log.warning("consolidation: model unavailable (%s); adding", exc)
                return Decision(action="ADD")
            try:
                return parse_decision(response.content, ids)
            except ValueError as exc:
                log.warning("consolidation attempt %d: %s", attempt, exc)
                messages = [*messages, {"role": "assistant", "content": response.content[:2000]},
                            {"role": "user", "content": f"Invalid: {exc}. Reply with the JSON."}]
        return Decision(action="ADD")

    async def deduplicate_chat(self, chat_id: str, since: datetime | None = None) -> int:
        """Periodic pass: forget near-identical active memories, keeping the most important.

        Only memories updated at or after `since` are compared (against all others), so a
        run costs O(new × all), not O(all²). Pairs are compared within a type so that a
        preference and a fact that read alike are both kept. Returns how many were removed.
        """
        active = await self.store.list(chat_id, limit=5_000)
        fresh = {m.id for m in active if since is None or m.updated_at >= since}
        removed: set[int] = set()
        ordered = sorted(active, key=lambda m: (-m.importance, -m.confidence, m.id))
        for i, keep in enumerate(ordered):
            if keep.id in removed:
                continue
            for other in ordered[i + 1:]:
                if other.id in removed or other.type != keep.type:
                    continue
                if keep.id not in fresh and other.id not in fresh:
                    continue
                if keep.key and other.key and keep.key != other.key:
                    continue
                if similar(keep.content, other.content, self.duplicate_ratio) is not None:
                    await self.store.forget(chat_id, memory_id=other.id)
                    removed.add(other.id)
        if removed:
            log.info("consolidation: removed %d duplicates in chat %s", len(removed), chat_id)
        return len(removed)

"""Keeping long-term memory tidy: every new memory is checked against what is already known.

Cheap first: a text-similarity ratio above 0.8 (difflib) only *nominates* a pair. It is a
duplicate (NOOP, no model call) only when the normalised content words are the same: "Le gusta
el café" / "No le gusta el café", "Tiene 30 años" / "Tiene 31 años" and "Vive en Lima" / "Vive
en Lisboa" read alike but say different things, so such near matches go to the LLM with the
existing memories that share the key or are vector neighbours. The LLM decides ADD / UPDATE /
SUPERSEDE / NOOP (Mem0 style) in JSON. Superseding keeps the old memory with status
`superseded` so history is never lost — the periodic dedup pass supersedes too.

The text comparisons run in a worker thread (`asyncio.to_thread`): a chat with thousands of
memories would otherwise stall the event loop, and Telegram with it. Episodic memories are
not text-deduplicated: two same-text events on different days are both real.
"""

from __future__ import annotations

import asyncio
import difflib
import json
import logging
import re
import unicodedata
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from rumi.llm.client import LLMClient
from rumi.llm.errors import LLMUnavailable
from rumi.memory.redaction.text import holds_tombstone
from rumi.memory.store.codec import content_hash
from rumi.memory.store.models import Memory, MemoryInputError, MemorySource, MemoryType, NewMemory

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


# Words that never change what a memory says. Negations ("no", "nunca", "sin", "not"),
# numbers and every content word are deliberately absent: a difference there is a
# different memory, however similar the characters.
_STOP_WORDS = frozenset({
    "el", "la", "los", "las", "lo", "un", "una", "unos", "unas", "al", "del", "de", "en",
    "por", "para", "the", "an", "of", "to", "in", "on", "at", "for"})
_WORD = re.compile(r"\w+")
NOT_TEXT_DEDUPLICATED = frozenset({MemoryType.EPISODIC})


def content_words(text: str) -> tuple[str, ...]:
    """The words that carry meaning, in order: case, accents, punctuation, articles and
    common prepositions removed."""
    folded = unicodedata.normalize("NFKD", text.casefold())
    folded = "".join(ch for ch in folded if not unicodedata.combining(ch))
    return tuple(w for w in _WORD.findall(folded) if w not in _STOP_WORDS)


def same_content(a: str, b: str) -> bool:
    """True when two texts differ only in punctuation, case, accents or filler words."""
    return content_words(a) == content_words(b)


def near_matches(text: str, memories: Sequence[Memory], threshold: float
                 ) -> list[tuple[float, Memory]]:
    """Memories whose normalised text has a difflib ratio above `threshold` (blocking).

    The new text is the matcher's second sequence, so difflib indexes it once; a length
    bound (ratio <= 2·min/(la+lb)) skips most memories before any matcher work.
    """
    target = normalize(text)
    matcher = difflib.SequenceMatcher(None)
    matcher.set_seq2(target)
    found: list[tuple[float, Memory]] = []
    for memory in memories:
        other = normalize(memory.content)
        total = len(other) + len(target)
        if total == 0 or 2 * min(len(other), len(target)) / total <= threshold:
            continue
        matcher.set_seq1(other)
        if matcher.real_quick_ratio() <= threshold or matcher.quick_ratio() <= threshold:
            continue
        ratio = matcher.ratio()
        if ratio > threshold:
            found.append((ratio, memory))
    found.sort(key=lambda pair: (-pair[0], pair[1].id))
    return found


def classify(new: NewMemory, active: Sequence[Memory], threshold: float
             ) -> tuple[Memory | None, list[Memory]]:
    """(true duplicate, near matches the model must judge) for a new memory (blocking)."""
    if new.type in NOT_TEXT_DEDUPLICATED:
        return None, []
    pool = [m for m in active if m.type not in NOT_TEXT_DEDUPLICATED]
    near = near_matches(new.content, pool, threshold)
    for _, memory in near:
        if same_content(new.content, memory.content):
            return memory, []
    return None, [m for _, m in near]


def duplicate_pairs(active: Sequence[Memory], fresh: set[int], threshold: float
                    ) -> list[tuple[Memory, Memory]]:
    """(keep, drop) pairs of true duplicates within a type, for the periodic pass (blocking).

    A true duplicate has the same content words, so memories are grouped by (type, words)
    in one linear pass instead of comparing every pair (O(n²) difflib was ~25 s for 1,000
    memories). Only groups holding a memory from `fresh` are looked at; the difflib ratio is
    then checked inside the (tiny) group, the same guard `integrate` uses. The more
    important (then more confident, then older) memory is kept; different keys never merge.
    """
    ordered = sorted(active, key=lambda m: (-m.importance, -m.confidence, m.id))
    groups: dict[tuple[MemoryType, str | None, tuple[str, ...]], list[Memory]] = {}
    for memory in ordered:   # two group members' twins are not duplicates: both are kept
        if memory.type not in NOT_TEXT_DEDUPLICATED:
            groups.setdefault((memory.type, memory.owner_id, content_words(memory.content)),
                              []).append(memory)
    pairs: list[tuple[Memory, Memory]] = []
    for group in groups.values():
        if len(group) < 2 or not any(m.id in fresh for m in group):
            continue
        kept: list[Memory] = []
        for memory in group:   # already in keep-first order
            keeper = next((k for k in kept
                           if not (k.key and memory.key and k.key != memory.key)
                           and near_matches(memory.content, [k], threshold)), None)
            if keeper is None:
                kept.append(memory)
            elif keeper.id in fresh or memory.id in fresh:
                pairs.append((keeper, memory))
    return pairs


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
        if new.source != MemorySource.EXPLICIT and await self.store.forgotten(
                chat_id, [content_hash(new.content, new.key)]):
            return Outcome("NOOP", None, None, "forgotten by the person")
        if new.source != MemorySource.EXPLICIT and holds_tombstone(new.content):
            return Outcome("NOOP", None, None, "redacted by the person")
        # in a group, one member's "dni" never merges with or replaces another's
        active = [m for m in await self.store.list(chat_id, limit=2_000)
                  if m.owner_id == new.owner_id]
        duplicate, near = await asyncio.to_thread(classify, new, active, self.duplicate_ratio)
        if duplicate is not None:
            if new.importance > duplicate.importance + 1e-9:
                duplicate = await self.store.update(chat_id, duplicate.id,
                                                    importance=new.importance)
            return Outcome("NOOP", None, duplicate, "duplicate text")
        candidates = await self._candidates(chat_id, new, active, near)
        decision = await self._decide(new, candidates) if candidates and self.llm else None
        if decision is None:
            # no usable answer: a new value for a key already known (same type) replaces it,
            # the old one kept as history, so both are never active at once
            same_key = [m for m in active if new.key and m.key == new.key and m.type == new.type]
            if len(same_key) == 1:
                created = await self.store.supersede(chat_id, same_key[0].id, new)
                return Outcome("SUPERSEDE", created, same_key[0], "same key, new value")
            saved = await self.store.save(chat_id, new)
            return Outcome("ADD", saved.memory, None,
                           "model: no usable answer" if candidates else "no similar memory")
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

    async def _candidates(
        self, chat_id: str, new: NewMemory, active: Sequence[Memory],
        near: Sequence[Memory] = (),
    ) -> list[Memory]:
        """Existing memories the model should weigh: near texts first (the likely
        contradictions), then the same key, then vector neighbours."""
        found: dict[int, Memory] = {m.id: m for m in near}
        if new.key:
            for memory in active:
                if memory.key == new.key:
                    found[memory.id] = memory
        if self.neighbours is not None:
            try:
                for memory in await self.neighbours(chat_id, new.content, MAX_CANDIDATES):
                    if memory.status == "active" and memory.owner_id == new.owner_id:
                        found.setdefault(memory.id, memory)
            except Exception:
                log.exception("consolidation: neighbour search failed in chat %s", chat_id)
        return list(found.values())[:MAX_CANDIDATES]

    async def _decide(self, new: NewMemory, candidates: Sequence[Memory]) -> Decision | None:
        """Ask the model; None when there is no usable answer (bad JSON twice, model down)."""
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
                                                   temperature=0, background=True)
            except LLMUnavailable as exc:
                log.warning("consolidation: model unavailable (%s); adding", exc)
                return None
            try:
                return parse_decision(response.content, ids)
            except ValueError as exc:
                log.warning("consolidation attempt %d: %s", attempt, exc)
                messages = [*messages, {"role": "assistant", "content": response.content[:2000]},
                            {"role": "user", "content": f"Invalid: {exc}. Reply with the JSON."}]
        return None

    async def deduplicate_chat(self, chat_id: str, since: datetime | None = None) -> int:
        """Periodic pass: supersede true duplicates by the more important twin.

        Superseding, not forgetting: the dropped twin stays as history pointing at the one
        kept. The same guard as `integrate` applies (near texts that differ in a number, a
        negation or a content word are both kept). Only memories updated at or after `since`
        are compared, in a worker thread. Returns how many were superseded.
        """
        active = await self.store.list(chat_id, limit=5_000)
        fresh = {m.id for m in active if since is None or m.updated_at >= since}
        if not fresh:
            return 0
        pairs = await asyncio.to_thread(duplicate_pairs, active, fresh, self.duplicate_ratio)
        done = 0
        for keep, drop in pairs:
            twin = NewMemory(
                content=keep.content, type=keep.type, key=keep.key, summary=keep.summary,
                source=MemorySource.EXPLICIT if MemorySource.EXPLICIT in (keep.source,
                                                                          drop.source)
                else keep.source,
                importance=max(keep.importance, drop.importance),
                confidence=max(keep.confidence, drop.confidence),
                expires_at=keep.expires_at, metadata=keep.metadata, owner_id=keep.owner_id)
            try:
                await self.store.supersede(chat_id, drop.id, twin)
            except MemoryInputError as exc:   # changed meanwhile (edited, forgotten)
                log.info("consolidation: kept #%s (%s)", drop.id, exc)
                continue
            done += 1
        if done:
            log.info("consolidation: superseded %d duplicates in chat %s", done, chat_id)
        return done

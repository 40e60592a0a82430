"""What a person's MEMORY.md edit means, decided before the store is touched, then done.

`plan_edit` checks every line against the store's rules and runs the three-way merge
(`markdown_merge.classify`); `apply_step` carries out one add, update or merge.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from rumi import messages as msg
from rumi.memory.files.markdown_format import Entry, MalformedMemoryFile
from rumi.memory.files.markdown_merge import (
    Intent,
    Item,
    Line,
    choose_base,
    classify,
    snapshots,
)
from rumi.memory.store.codec import clean_key, clean_text, content_hash
from rumi.memory.store.models import Memory, MemoryInputError, MemorySource, NewMemory


@dataclass(frozen=True)
class Step:
    action: str          # "add" | "update" | "merge"
    entry: Item
    old: Memory | None = None


@dataclass
class Plan:
    intent: Intent
    steps: list[Step] = field(default_factory=list)
    removed: list[int] = field(default_factory=list)


def line_of(memory: Memory) -> Line:
    """What a memory looks like as a MEMORY.md line (content, key, type) for comparisons."""
    return " ".join(memory.content.split()), memory.key, memory.type


async def plan_edit(store: Any, chat_id: str, entries: Sequence[Entry], state: dict[str, Any],
                version: int | None, known: dict[int, Memory]) -> Plan:
    """Decide what every line means before touching the store.

    A line whose text fails the store's checks (too long, binary, bad key) is an error;
    the rest is the three-way merge of `markdown_merge.classify`; an edit that makes a
    memory equal to another active one merges into that one.
    """
    max_chars = int(getattr(getattr(store, "settings", None), "max_content_chars",
                            20_000))
    items: list[Item] = []
    for entry in entries:
        try:
            content = clean_text(entry.content, "el recuerdo", max_chars)
            key = clean_key(entry.key)
        except MemoryInputError as exc:
            raise MalformedMemoryFile(msg.MD_LINE.format(line=entry.line,
                                                         reason=exc)) from exc
        assert content is not None
        items.append(Item(entry.type, content, key, entry.memory_id, entry.line))
    current = {i: line_of(m) for i, m in known.items()}
    in_file = {i.memory_id for i in items if i.memory_id is not None}
    base, removable = choose_base(snapshots(state), version, in_file)
    base_lines = base.lines if base is not None and base.lines is not None else {}
    earlier: dict[int, Line] = {}
    for memory_id in sorted(in_file - set(current) - set(base_lines)):
        gone = await store.get(chat_id, memory_id)
        if gone is not None:
            earlier[memory_id] = line_of(gone)
    intent = classify(items, base, current, earlier, removable)
    active = await store.list(chat_id, limit=100_000)
    taken = {m.content_hash: m.id for m in active}
    plan = Plan(intent=intent, removed=list(intent.removed))
    for item in intent.adds:
        taken.setdefault(content_hash(item.content, item.key), -item.line)
        plan.steps.append(Step("add", item))
    for item in intent.updates:
        assert item.memory_id is not None
        old = known[item.memory_id]
        digest = content_hash(item.content, item.key)
        twin = taken.get(digest)
        if twin is not None and twin != old.id:
            plan.steps.append(Step("merge", item, old))
            continue
        taken.pop(old.content_hash, None)
        taken[digest] = old.id
        plan.steps.append(Step("update", item, old))
    return plan


async def apply_step(store: Any, chat_id: str, step: Step) -> bool:
    """Carry out one step; True when it added a memory, False when it changed one."""
    entry, old = step.entry, step.old
    if step.action == "add":
        await store.save(chat_id, NewMemory(
            content=entry.content, type=entry.type, key=entry.key,
            source=MemorySource.EXPLICIT, importance=0.8, confidence=1.0,
            metadata={"origin": "MEMORY.md"}))
        return True
    assert old is not None
    if step.action == "merge":   # now says exactly what another memory says
        await store.forget(chat_id, memory_id=old.id)
        return False
    history = [*(old.metadata or {}).get("edited_from", []), old.content][-5:]
    await store.update(
        chat_id, old.id, content=entry.content, key=entry.key, type=entry.type,
        importance=max(old.importance, 0.7), confidence=1.0,
        metadata={**(old.metadata or {}), "origin": "MEMORY.md", "edited_from": history})
    return False

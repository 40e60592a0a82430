"""Copying one store into the other (`rumi store migrate`, SQLite ⇄ PostgreSQL) through the
store API alone, so it works the same in both directions.

Chat by chat, in this order, each step idempotent — a run killed at any point (even `kill -9`)
is completed by the next run, and the source is only read:

1. the chat's forgotten texts (their hashes) first, so the import that follows skips them;
   a row the target still holds of a text the source forgot after that row was last written
   is erased there too: what a person forgot never comes back on the other side;
2. the memories — active, superseded history with its links, expired — as export lines into
   the target's import (one transaction per chat), each with its stored vector copied as it is
   and its `source` kept. Nothing is embedded again: that is slow on a Pi and, with another
   model, would silently change recall, so vectors of another model than the configured one
   are refused (`ModelMismatch`) unless the person asks for `reembed`;
3. the chat's memory switch (`/memory off`);

then the context blocks (global and each chat's, upserted by their code; one the target holds
with the same text is left alone). Then the checks: every memory of the source is in the
target, and a sample memory is recalled there.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from rumi.memory.store.api import MemoryStoreAPI
from rumi.memory.store.blocks import Block, BlockStore
from rumi.memory.store.codec import VECTOR_CONTEXT_RECIPE

_ALL = 10_000_000


class ModelMismatch(Exception):
    """The source's vectors were made by another model than the target's: one line."""


@dataclass
class ChatCopy:
    chat: str
    in_source: int = 0
    copied: int = 0
    already: int = 0
    forgotten: int = 0        # lines the target's chat had forgotten: left out
    forgotten_carried: int = 0
    erased: int = 0           # target rows of texts the source forgot after they were written
    vectors: int = 0
    switch: bool = False
    missing: int = 0
    errors: list[str] = field(default_factory=list)

    @property
    def moved(self) -> bool:
        return bool(self.copied or self.forgotten_carried or self.erased or self.switch)


@dataclass
class MigrationReport:
    source: str
    target: str
    model: str | None                  # the vectors' model (None: embeddings off)
    reembed: bool = False
    chats: list[ChatCopy] = field(default_factory=list)
    sample: str | None = None          # the memory recalled as the sample
    sample_found: bool | None = None   # None: nothing to sample
    blocks: int = 0                    # context blocks in the source (each upserted)
    blocks_new: int = 0                # of which the target had none or another text
    notes: list[str] = field(default_factory=list)   # what the caller carried too
    others_moved: bool = False

    @property
    def ok(self) -> bool:
        return all(c.missing == 0 and not c.errors for c in self.chats) \
            and self.sample_found is not False

    def lines(self, data_dir: object) -> list[str]:
        total = sum(c.in_source for c in self.chats)
        copied = sum(c.copied for c in self.chats)
        already = sum(c.already for c in self.chats)
        out = [f"from {self.source}", f"to   {self.target}"]
        for c in self.chats:
            extra = [f"{c.forgotten} forgotten there (left out)" if c.forgotten else "",
                     f"{c.forgotten_carried} forgotten texts carried" if c.forgotten_carried
                     else "",
                     f"{c.erased} erased there (forgotten here)" if c.erased else "",
                     "memory switch copied" if c.switch else "",
                     f"{c.missing} MISSING" if c.missing else ""]
            out.append(f"  chat {c.chat}: {c.in_source} memories, {c.copied} copied, "
                       f"{c.already} already there" + "".join(f", {e}" for e in extra if e))
            out += [f"    line {e}" for e in c.errors[:5]]
        vectors = sum(c.vectors for c in self.chats)
        out.append(f"{copied} of {total} memories copied ({already} were already there) in "
                   f"{len(self.chats)} chats; "
                   f"{sum(c.forgotten_carried for c in self.chats)} forgotten texts carried; "
                   f"{sum(1 for c in self.chats if c.switch)} memory switches copied")
        if self.model is None:
            out.append("vectors: none (memory.embeddings_enabled = false); keyword recall only")
        elif self.reembed:
            out.append(f"vectors: {vectors} embedded again with {self.model} (--reembed)")
        else:
            out.append(f"vectors: {vectors} copied as they are ({self.model}), none embedded")
        out.append(f"context blocks: {self.blocks_new} of {self.blocks} copied "
                   f"({self.blocks - self.blocks_new} were already there)")
        out += self.notes
        if not any(c.moved for c in self.chats) and not self.blocks_new \
                and not self.others_moved:
            out.append("nothing new to move: the target already holds all of it")
        if self.sample_found is None:
            out.append("sample recall: nothing to recall (no active memory)")
        else:
            verdict = "found" if self.sample_found else "NOT FOUND"
            out.append(f"sample recall: {verdict} in the new store: {self.sample!r}")
        out.append("the tape index is not copied: each Rumi rebuilds it from the tape files "
                   "in its data dir")
        out.append(f"nothing was removed from {data_dir}; "
                   + ("set [store] backend in config.toml when ready" if self.ok
                      else "the copy is incomplete: see above"))
        return out


async def check_models(source: MemoryStoreAPI, model: str | None, reembed: bool) -> None:
    """Refuse (ModelMismatch) vectors of another model than `model`, unless re-embedding."""
    if model is None or reembed:
        return
    others = {name: n for name, n in (await source.vector_models()).items() if name != model}
    if others:
        name, count = max(others.items(), key=lambda item: item[1])
        recipe = f"+{VECTOR_CONTEXT_RECIPE}"
        if name.removesuffix(recipe) == model.removesuffix(recipe):   # the same model
            fix = ("set memory.recall_vector_context = "
                   f"{'true' if name.endswith(recipe) else 'false'}")
        else:
            fix = f"set memory.embedding_model to {name}"
        raise ModelMismatch(
            f"the source's vectors were made by {name} ({count} of them) but this Rumi is "
            f"configured with {model}: {fix} to copy them as they are, or pass --reembed to "
            f"embed every memory again with {model} (slower; recall will change)")


def _identity(line: str) -> tuple[Any, ...]:
    record = json.loads(line)
    return (record.get("key"), record.get("content"), record.get("status"))


async def _carry_forgotten(target: MemoryStoreAPI, chat: str, forgot: dict[str, datetime],
                           copy: ChatCopy) -> None:
    """The source's forgotten texts into the target's chat; rows the target holds of them,
    written before the forget, are erased (the person forgot that text)."""
    if not forgot:
        return
    newer: set[str] = set()
    stale: list[int] = []
    for memory in await target.list(chat, status=None, limit=_ALL):
        when = forgot.get(memory.content_hash or "")
        if when is None:
            continue
        if memory.updated_at <= when:
            stale.append(memory.id)
        else:
            newer.add(memory.content_hash or "")
    if stale:
        await target.erase(chat, stale)
        copy.erased = len(stale)
    wanted = set(forgot) - newer
    known = await target.forgotten(chat, wanted)
    todo = sorted(wanted - known)
    if todo:
        await target.mark_forgotten(chat, todo)
    copy.forgotten_carried = len(todo)


async def _copy_memories(source: MemoryStoreAPI, target: MemoryStoreAPI, chat: str,
                         carry_vectors: bool, copy: ChatCopy) -> None:
    lines = await source.export_jsonl(chat)
    vectors = None
    if carry_vectors:
        ids = [json.loads(line)["id"] for line in lines]
        vectors = await source.stored_vectors(chat, ids)
    result = await target.import_report(chat, lines, vectors=vectors, keep_source=True)
    copy.in_source = len(lines)
    copy.copied, copy.already, copy.forgotten = result.imported, result.duplicates, \
        result.forgotten
    copy.vectors = result.vectors
    copy.errors = [f"{n}: {why}" for n, why in result.errors]
    arrived = {_identity(line) for line in await target.export_jsonl(chat)}
    wanted = [_identity(line) for line in lines]
    copy.missing = max(0, sum(1 for w in wanted if w not in arrived) - result.forgotten)


def _block_key(block: Block) -> tuple[Any, ...]:
    return (block.scope, block.chat_id or "", block.session_id or "", block.code)


async def _copy_blocks(source: MemoryStoreAPI, target: MemoryStoreAPI, chats: list[str],
                       report: MigrationReport) -> None:
    """Global blocks and each chat's, as they are (code, text, priority, status, …)."""
    into = BlockStore(target)
    found: dict[tuple[Any, ...], Block] = {}
    there: dict[tuple[Any, ...], Block] = {}
    for chat in [None, *chats]:
        found.update({_block_key(b): b for b in await BlockStore(source).list(chat)})
        there.update({_block_key(b): b for b in await into.list(chat)})
    report.blocks = len(found)
    for key, b in sorted(found.items(), key=lambda item: str(item[0])):
        old = there.get(key)
        if old is not None and (old.content, old.status, old.priority) == \
                (b.content, b.status, b.priority):
            continue
        await into.upsert(b.code, b.content, scope=b.scope, chat_id=b.chat_id or None,
                          session_id=b.session_id or None, name=b.name, category=b.category,
                          priority=b.priority, token_count=b.token_count, status=b.status,
                          metadata=b.metadata)
        report.blocks_new += 1


async def copy_store(source: MemoryStoreAPI, target: MemoryStoreAPI, source_name: str,
                     target_name: str, *, model: str | None,
                     reembed: bool = False) -> MigrationReport:
    """Every chat's forgotten texts, memories and switch from `source` into `target`, then
    the checks. `model`: the target's embedding model (None: embeddings off, no vectors)."""
    await check_models(source, model, reembed)
    report = MigrationReport(source_name, target_name, model, reembed)
    forgotten: dict[str, dict[str, datetime]] = defaultdict(dict)
    for chat, digest, when in await source.forgotten_list():
        forgotten[chat][digest] = when
    switches = await source.switch_list()
    sample: tuple[str, str] | None = None
    for chat in sorted(set(await source.chats()) | set(forgotten) | set(switches)):
        copy = ChatCopy(chat)
        report.chats.append(copy)
        await _carry_forgotten(target, chat, forgotten.get(chat, {}), copy)
        await _copy_memories(source, target, chat, model is not None and not reembed, copy)
        state = switches.get(chat)
        if state is not None and await target.switch_state(chat) != state:
            await target.set_switch(chat, state, "rumi store migrate")
            copy.switch = True
        if sample is None:
            active = await source.list(chat, limit=1)
            if active:
                sample = (chat, active[0].content)
    await _copy_blocks(source, target, [c.chat for c in report.chats], report)
    if sample is not None:
        chat, text = sample
        report.sample = text if len(text) <= 80 else text[:77] + "…"
        hits = await target.vector_search(chat, text, 5) if target.can_embed else []
        if not hits:
            hits = await target.keyword_search(chat, text, 5)
        found = await target.get_many(chat, [memory_id for memory_id, _ in hits])
        report.sample_found = any(m.content == text for m in found)
    return report

"""Memories translated when saved, off the write path, and searched by a question's own words.

A Spanish question about an English chat is translated by recall (`machine_translation`), but
Apertium's English for it seldom says what the chat said. The other side helps too: each
memory translated once into the chat's other language (the store keeps it,
`store.translations`), so the question's *own* words can find the memory's translation.
Measured on LoCoMo: docs/benchmarks.md, "Step 10: memories translated when saved".

`MemoryTranslator` is a background task: woken after saves (`wake`), and at start for every
chat with untranslated memories (a database from before this feature: the upgrade), it
translates them in small batches, oldest first (a memory's earlier neighbours are its
context), through a `MachineTranslator` of its own — its pipelines, not recall's, so a
question's translation never waits behind a thousand memories. A save never waits for it or
fails with it; recall meanwhile finds what is already translated. Stopping is cancelling: what
was not written is simply still missing at the next start (resumable, idempotent). Without
Apertium it does nothing.

`translated_hits` is recall's search: the question's own words over the chat's translations,
for `retrieval` to add to its other keyword searches.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from rumi.memory.recall.machine_translation import MachineTranslator, Translation, language, other
from rumi.memory.store.api import MemoryTranslations
from rumi.memory.store.coverage import KeywordHits
from rumi.memory.store.translations import Translated, Untranslated, spanish_stems

log = logging.getLogger(__name__)

BATCH = 32   # memories per store read and write: a recall waits for one write at most
# seconds between a wake and the work: a conversation's saves come in bursts, translated
# together (and a start's pass waits until the bot has answered its first messages)
DELAY = 10.0
IDLE = 60.0   # its pipelines stop after this long unused (~100 MiB each while they run)


def indexed_text(translation: Translation) -> str:
    """What the translations table holds of a memory: Apertium's text, and on a line of its
    own the other senses its dictionary gives the words (those not already said), which
    measured better than the text alone (docs/benchmarks.md, "Step 10")."""
    said = set(translation.text.lower().split())
    extra = [w for w in translation.senses if w.lower() not in said]
    return translation.text + ("\n" + " ".join(extra) if extra else "")


class MemoryTranslator:
    """Translates the memories that have no translation yet, chat by chat, in the background."""

    def __init__(self, translations: MemoryTranslations, translator: MachineTranslator, *,
                 batch: int = BATCH, delay: float = DELAY) -> None:
        self.translations = translations
        self.translator = translator
        self.batch = max(1, batch)
        self.delay = delay
        self.translated = 0
        self._pending: dict[str, None] = {}   # chats to look at, in the order they came
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._closed = False

    @classmethod
    def of(cls, store: Any, settings: Any) -> MemoryTranslator | None:
        """One for the store when the settings want it and the store keeps translations."""
        translations = getattr(store, "translations", None)
        if (translations is None or not settings.recall_machine_translation
                or not settings.recall_translated_memories):
            return None
        return cls(translations, MachineTranslator(senses=True, timeout=30.0, cache_size=64,
                                                   idle_seconds=IDLE))

    def wake(self, chat_id: str) -> None:
        """The chat has new or changed memories: translate them soon (never blocks)."""
        if self._closed:
            return
        self._pending[chat_id] = None
        self._wake.set()

    async def start(self) -> bool:
        """Start the task, which first queues every chat with untranslated memories; False
        (and nothing runs) without Apertium."""
        missing = await self.translator.check()
        if missing:
            log.info("memories are not translated when saved: %s", missing)
            self._closed = True
            return False
        self._task = asyncio.create_task(self._run(), name="rumi-translate-memories")
        return True

    async def _run(self) -> None:
        await asyncio.sleep(self.delay)   # the start's first messages are answered first
        try:   # tables an older version made (before the Spanish stems): searched again
            await self.translations.rebuild_stale()
        except Exception:   # each such chat's next write rebuilds its table instead
            log.exception("rebuilding the translations tables failed")
        try:
            for chat in await self.translations.chats_missing():
                self.wake(chat)
        except Exception:   # the next save of each chat wakes it instead
            log.exception("listing chats with untranslated memories failed")
        while not self._closed:
            await self._wake.wait()
            await asyncio.sleep(self.delay)
            self._wake.clear()
            while self._pending and not self._closed:
                chat = next(iter(self._pending))
                del self._pending[chat]
                try:
                    await self.translate_chat(chat)
                except Exception:   # its next save tries again
                    log.exception("translating the memories of chat %s failed", chat)

    async def translate_chat(self, chat_id: str) -> int:
        """Translate every memory of the chat that has none, a batch at a time; how many
        were written. Stops early (to try again at the next wake) when Apertium gives no
        answer: nothing is written for a memory it could not translate."""
        done = last = 0
        while batch := await self.translations.missing(chat_id, self.batch, last):
            last = batch[-1].id
            out = await self._translate(batch)
            if out:
                written = await self.translations.write(chat_id, out)
                done += written
                self.translated += written
            if len(out) < len(batch):
                log.info("Apertium gave no translation; chat %s resumes at its next save",
                         chat_id)
                break
        return done

    async def _translate(self, batch: Sequence[Untranslated]) -> list[Translated]:
        """Each memory from its own language (the batch's when a memory alone cannot tell)
        into the other; an empty translation for one in neither language, so it is not
        read again. Stops at the first memory Apertium gives nothing for."""
        usual = language(" ".join(m.content for m in batch), marks=False)
        out: list[Translated] = []
        for memory in batch:
            source = language(memory.content, marks=False) or usual
            if source is None:
                out.append(Translated(memory.id, memory.content_hash, "", ""))
                continue
            found = await self.translator.translate(memory.content, source, other(source))
            if found is None:
                break
            out.append(Translated(memory.id, memory.content_hash, other(source),
                                  indexed_text(found)))
        return out

    async def close(self) -> None:
        """Stop the task (what it had not written is missing still: the next start does it)
        and the pipelines."""
        self._closed = True
        self._wake.set()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        await self.translator.close()


async def translated_hits(translations: MemoryTranslations | None, chat: str, query: Any,
                          limit: int, doc_budget: int, semantic: bool) -> KeywordHits:
    """The question's own words (no word-list alternatives) over the chat's memories as
    translated when saved: BM25 hits with their coverage, empty where the store keeps none.
    A Spanish question's words as Spanish stems, as SQLite indexes Spanish translations
    (`store.translations.spanish_stems`): "donó" finds "donación"; PostgreSQL stems them in
    the server, as it stems its translations (`stems_questions` False)."""
    if translations is None:
        return KeywordHits(coverage=0.0)
    terms = tuple(query.terms)
    if (terms and translations.stems_questions
            and language(getattr(query, "text", "")) == "es"):
        stems = await asyncio.to_thread(lambda: [spanish_stems(t) for t in terms])
        terms = tuple(dict.fromkeys(s for s in stems if s))
    hits = await translations.search(chat, replace(query, terms=terms, alternatives={}), limit,
                                     doc_budget, rank_common_words=not semantic)
    return hits if isinstance(hits, KeywordHits) else KeywordHits(hits)


def added(base: list[tuple[int, float]], extra: list[tuple[int, float]], limit: int
          ) -> list[tuple[int, float]]:
    """The translations' search added to the question's other searches (already merged):
    each side's BM25 over its best, times its coverage, summed per memory, so a memory both
    find rises over one only one finds (against taking the better of the two, as the other
    searches merge: ES→EN R@10 +0.4, EN→ES +2.2; docs/benchmarks.md, "Step 10")."""
    if not extra:
        return base
    if not base:
        return extra[:limit] if isinstance(extra, KeywordHits) else KeywordHits(extra[:limit])
    merged: dict[int, float] = {}
    for hits in (base, extra):
        best = max(s for _, s in hits) or 1.0
        weight = float(getattr(hits, "coverage", 1.0))
        for memory_id, value in hits:
            merged[memory_id] = merged.get(memory_id, 0.0) + weight * value / best
    ranked = sorted(merged.items(), key=lambda item: -item[1])[:limit]
    return KeywordHits(ranked, coverage=max(float(getattr(h, "coverage", 1.0))
                                            for h in (base, extra)))

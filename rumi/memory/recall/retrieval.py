"""`MemoryRecall`: the memories of one chat that matter for a query, scored and explained.

Pipeline (every step measured on LoCoMo, see docs/benchmarks.md "LoCoMo recall"):

1. `query.plan`: content words (question and stop words dropped) and the dates named —
   written ("21 de mayo de 2023") or relative ("ayer", "la semana pasada", resolved by
   `relative_time` in the chat's timezone at the time of the question).
2. Candidates: BM25 over the chat's own keyword table (each memory with its conversational
   context, Porter stemming; per-chat statistics, see `recall_index`) and cosine top-N from
   the chat's vector index; keyword-only hits get their cosine from the stored vectors.
   A question in the chat's other language is also searched as its Apertium translation
   (and the other senses of its words) in the keyword half, and embedded together with its
   translation in the vector half; its words the translation does not render are searched
   as the chat's nearest words by the model (`bridge`, after both halves).
   Without an embedding model: keyword only. A relative span adds the chat's memories from
   that span (newest first, up to the candidate limit), since the words of "¿qué hice
   ayer?" match nothing.
3. `fusion.fuse`: normalised BM25 × its coverage of the question (the idf share of the
   question's words the chat holds: names said everywhere and words of another language are
   no evidence) + 0.5 · normalised cosine + a boost for memories whose time falls in a date
   the query names → relevance 0–1.
   Then `fusion.with_sessions` (the turns around a strong hit rise with it) and
   `speakers.weigh_speakers` (a question that names a speaker: other speakers' turns × 0.9).
4. `scoring.Scorer`: the CTO score with per-type decay; ordered by it, `min_score` applied to
   the total, access stats of what is returned updated.

Only active, unexpired memories of the chat are ever candidates.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import replace
from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import numpy as np

from rumi import messages as msg
from rumi.base.daemon_thread import in_daemon_thread
from rumi.config import MemorySettings
from rumi.memory.recall import relative_time
from rumi.memory.recall.bridge import WordBridge, content_words, merged, unrendered
from rumi.memory.recall.fusion import fuse, with_sessions
from rumi.memory.recall.machine_translation import (
    MachineTranslator,
    Translation,
    language,
    other,
)
from rumi.memory.recall.memory_translation import added, translated_hits
from rumi.memory.recall.query import STOPWORDS, QueryPlan, plan, search_terms
from rumi.memory.recall.scoring import Scorer
from rumi.memory.recall.selection import Candidate, Tier, select
from rumi.memory.recall.speakers import speaker, weigh_speakers
from rumi.memory.recall.translate import Translator
from rumi.memory.store import fts
from rumi.memory.store.api import MemoryStoreAPI
from rumi.memory.store.codec import check_chat_id
from rumi.memory.store.coverage import KeywordHits
from rumi.memory.store.models import Memory, MemoryStatus, RecallRow, ScoredMemory

log = logging.getLogger(__name__)

MAX_QUERY_CHARS = 2_000
LAST_KEPT = 3  # recalled memories remembered per chat for /status
_LAST_CHATS = 256
MODES = ("hybrid", "keyword", "vector")
# A chat's language: told from its newest memories, again after this many seconds
CHAT_LANGUAGE_SAMPLE = 50
CHAT_LANGUAGE_SECONDS = 600.0


def _approx_tokens(text: str) -> int:
    return max(1, (len(text) + 3) // 4)


class MemoryRecall:
    """Hybrid recall + CTO scoring over a `MemoryStore`; implements the context `RecallProvider`.

    `count_tokens` should be the context engine's `TokenCounter.count` so recall blocks are
    measured the way the prompt is; without it ~4 characters per token is assumed.
    `mode` "keyword" / "vector" runs one half of the same pipeline (benchmark comparisons);
    the assistant always uses "hybrid".
    `timezone` gives a chat's zone (relative expressions like "ayer" are resolved in it; UTC
    when not given); `relative_dates=False` ignores them (the benchmark's "without" rows).
    """

    def __init__(
        self,
        store: MemoryStoreAPI,
        settings: MemorySettings,
        *,
        count_tokens: Callable[[str], int] | None = None,
        mode: str = "hybrid",
        timezone: Callable[[str], Awaitable[ZoneInfo]] | None = None,
        relative_dates: bool = True,
        translator: Translator | None = None,
        machine_translator: MachineTranslator | None = None,
    ) -> None:
        if mode not in MODES:
            raise ValueError(f"recall mode must be one of {', '.join(MODES)}")
        self.mode = mode
        self.timezone = timezone
        self.relative_dates = relative_dates
        self.store = store
        self.settings = settings
        self.count_tokens = count_tokens or _approx_tokens
        self.keyword_index = store.keyword_index
        self.translator = translator if translator is not None else (
            Translator(stop=STOPWORDS) if settings.recall_translate else None)
        self.machine_translator = machine_translator if machine_translator is not None else (
            MachineTranslator(senses=settings.recall_translation_senses != "off")
            if settings.recall_machine_translation else None)
        # a translated question's unrendered words → the chat's nearest words (hybrid only)
        self.bridge = (WordBridge(store.embed_query, settings.recall_bridge_similarity)
                       if settings.recall_bridge and self.machine_translator is not None
                       and mode == "hybrid" else None)
        # chat → (its language or None, when it was told): a question in the other language
        # is translated, starting when it arrives (the prefetch)
        self._languages: OrderedDict[str, tuple[str | None, float]] = OrderedDict()
        self._loading: asyncio.Future[object] | None = None
        # what the last prompt's recall block chose, per chat, with why (for /status)
        self._last: OrderedDict[str, list[ScoredMemory]] = OrderedDict()
        # query texts being embedded now (a prefetch's), shared by every recall of that text
        self._embedding: dict[str, asyncio.Future[np.ndarray | None]] = {}
        self._prefetches: set[asyncio.Task[None]] = set()

    def last_recalled(self, chat_id: str) -> list[ScoredMemory]:
        """The top memories the last recall block of this chat put in the prompt, best first."""
        return list(self._last.get(chat_id, []))

    def _remember_last(self, chat_id: str, chosen: list[ScoredMemory]) -> None:
        self._last[chat_id] = chosen[:LAST_KEPT]
        self._last.move_to_end(chat_id)
        while len(self._last) > _LAST_CHATS:
            self._last.popitem(last=False)

    async def recall(
        self,
        chat_id: str,
        query: str,
        k: int = 6,
        min_score: float = 0.0,
        *,
        now: datetime | None = None,
        touch: bool = True,
    ) -> list[ScoredMemory]:
        """Up to `k` memories of `chat_id` for `query`, best first, each with its ScoreParts.

        `now` is the moment recall happens (recency and access times); the wall clock when
        None. `touch=False` leaves access stats alone (for inspection commands like
        `rumi memory search`; the assistant and the benchmark keep the default).
        """
        chat = check_chat_id(chat_id)
        if not isinstance(query, str) or not query.strip() or k <= 0:
            return []
        when = _utc(now)
        text = query.strip()[:MAX_QUERY_CHARS]
        query_plan = await self._translated(plan(text, await self.spans(chat, text, when)))
        limit = max(self.settings.recall_candidates, 2 * k)
        keyword, cosines, rows, dated = await self._candidates(chat, text, query_plan, limit,
                                                               when)
        memories = {i: m for i, m in rows.items() if _alive(m, when)}
        in_range = frozenset(i for i, m in memories.items()
                             if any(r.contains(m.created_at) for r in query_plan.dates)
                             ) if query_plan.dates else frozenset()
        fused = fuse([(i, s) for i, s in keyword if i in memories],
                     {i: c for i, c in cosines.items() if i in memories},
                     vector_weight=self.settings.recall_vector_weight,
                     keyword_weight=self._keyword_weight(keyword, cosines),
                     min_similarity=self.settings.recall_min_similarity,
                     date_boost=self.settings.recall_date_boost, in_date_range=in_range,
                     date_candidates=frozenset(i for i in dated if i in memories))
        fused = with_sessions(fused, {i: m.created_at.date() for i, m in memories.items()},
                              self.settings.recall_session_weight,
                              self.settings.recall_session_radius)
        if self.settings.recall_speaker_weight != 1.0:
            fused = weigh_speakers(fused, {i: speaker(m.content) for i, m in memories.items()},
                                   text, self.settings.recall_speaker_weight)
        scorer = Scorer(self.settings, when)
        ranked: list[tuple[float, float, int, int]] = []
        for n, f in enumerate(fused):
            rel, _, _, _, total = scorer.components(memories[f.memory_id], f.relevance)
            if total >= min_score:
                ranked.append((-total, -rel, f.memory_id, n))
        ranked.sort()   # ids are unique: the order is (total, relevance) desc, then id
        # the whole memory only for those returned (`RecallRow`)
        result = [ScoredMemory(_whole(memories[i]), scorer.parts(
            memories[i], fused[n].relevance, keyword=fused[n].keyword, vector=fused[n].vector))
                  for _, _, i, n in ranked[:k]]
        if touch and result:
            await self.store.mark_accessed(chat, [s.memory.id for s in result], when,
                                           wait=False)   # written behind the answer
        return result

    async def _translated(self, query_plan: QueryPlan) -> QueryPlan:
        """The plan with its terms' alternatives in the other language. The word lists load
        in a worker thread, started by the first recall, which does not wait for them (like
        the embedding model: recall works without them meanwhile); `load_word_lists` waits."""
        if self.translator is None or not query_plan.terms or self.mode == "vector":
            return query_plan
        if not self.translator.loaded:
            self._start_loading()
            return query_plan
        found = self.translator.alternatives(query_plan.terms)
        return replace(query_plan, alternatives=found) if found else query_plan

    def _start_loading(self) -> asyncio.Future[object] | None:
        if self.translator is None:
            return None
        if self._loading is None:
            # a daemon thread: stemming the lists takes seconds, and a bot stopped meanwhile
            # must not wait for them (the default executor's threads are joined at exit)
            self._loading = in_daemon_thread(self.translator.load, "rumi-word-lists")
        return self._loading

    async def load_word_lists(self) -> None:
        """Load the cross-language word lists now (benchmarks, start-up); no-op without."""
        loading = self._start_loading()
        if loading is not None:
            await loading

    def _keyword_weight(self, keyword: list[tuple[int, float]],
                        cosines: dict[int, float]) -> float:
        """How much the keyword half counts for this query: its coverage of the query's
        evidence (`recall_keyword_coverage` on), 1 without a vector half to trust instead."""
        if not self.settings.recall_keyword_coverage or not cosines:
            return 1.0
        coverage = getattr(keyword, "coverage", 1.0)
        return float(coverage) ** self.settings.recall_keyword_coverage_power

    def prefetch(self, chat_id: str, query: str) -> asyncio.Task[None] | None:
        """Start embedding `query` now, in the background, for the recall of it to come.

        The query's embedding is most of a recall's cost (tens of ms of CPU with the default
        model, against a few ms for the rest at 100k memories: docs/benchmarks.md "Recall
        latency"). The bot calls this when a message arrives, so the embedding runs while
        the turn is set up (the chat's lock, the tape's durable append) and the recall
        finds the vector ready or under way; the vector is the one recall would compute
        (same text, relative dates taken out the same way). In a chat whose last question
        needed its machine translation, the translation of this one starts too. Never
        raises; returns the background task (None when there is nothing to embed or
        translate), which never raises either."""
        if not isinstance(query, str) or not query.strip():
            return None
        embed = self.mode != "keyword" and self.store.can_embed
        translate = self.machine_translator is not None and self.mode != "vector"
        if not embed and not translate:
            return None
        task = asyncio.ensure_future(
            self._prefetch(chat_id, query.strip()[:MAX_QUERY_CHARS], embed, translate))
        self._prefetches.add(task)
        task.add_done_callback(self._prefetches.discard)
        return task

    async def _prefetch(self, chat_id: str, text: str, embed: bool = True,
                        translate: bool = False) -> None:
        try:
            chat = check_chat_id(chat_id)
            query_plan = plan(text, await self.spans(chat, text, _utc(None)))
            # a question in the chat's other language is translated meanwhile (the recall
            # joins the translation under way: the translator shares it)
            translating = (asyncio.ensure_future(self._translation(chat, _about(query_plan,
                                                                                text)))
                           if translate else None)
            stemming = None
            if self.mode != "vector" and query_plan.terms:
                # the question's words stemmed and tokenized now, in a worker thread
                # (pure-Python Snowball ~1 ms, SQLite's tokenizer a fraction: not on the event
                # loop), while the query embeds; both are cached, so the recall finds them
                stemming = asyncio.ensure_future(asyncio.to_thread(self._words_ahead,
                                                                   query_plan.terms))
            if embed:   # and the translation's vector, when recall searches with both
                await self._query_vector(chat, _about(query_plan, text))
            for pending in (stemming, translating):
                if pending is not None:
                    await pending
        except Exception:  # noqa: BLE001 - only a head start: the recall embeds it anyway
            log.debug("query prefetch failed for chat %s", chat_id, exc_info=True)

    def _words_ahead(self, terms: tuple[str, ...]) -> None:
        """What the recall of these terms will look up on the event loop, done now
        (blocking: a worker thread): their alternatives (`_translated`) and their tokens."""
        found: dict[str, tuple[str, ...]] = {}
        if self.translator is not None and self.translator.loaded:
            found = self.translator.alternatives(terms)
        self.keyword_index.tokenize_ahead([*terms, *(a for t in terms for a in found.get(t, ()))])

    async def _embed(self, text: str) -> np.ndarray | None:
        """The query vector of `text`, joining an embedding of it already under way (the
        store caches finished ones)."""
        pending = self._embedding.get(text)
        if pending is None:
            pending = asyncio.ensure_future(self.store.embed_query(text))
            self._embedding[text] = pending

            def done(_: object, text: str = text, mine: asyncio.Future = pending) -> None:
                if self._embedding.get(text) is mine:
                    del self._embedding[text]

            pending.add_done_callback(done)
        # shielded: a recall that gives up must not cancel the embedding others wait for
        return await asyncio.shield(pending)

    async def spans(self, chat_id: str, text: str, now: datetime) -> list[relative_time.Span]:
        """The relative time expressions of `text` resolved in the chat's zone at `now`
        (none when `relative_dates` is off or the text has none: dateparser is not loaded)."""
        if not self.relative_dates or not relative_time.mentions(text):
            return []
        zone = await self.timezone(chat_id) if self.timezone is not None else ZoneInfo("UTC")
        return await asyncio.to_thread(relative_time.resolve, text, now, zone)

    async def _candidates(
        self, chat: str, text: str, query_plan: QueryPlan, limit: int, now: datetime,
    ) -> tuple[list[tuple[int, float]], dict[int, float], dict[int, RecallRow], list[int]]:
        """Keyword hits (id, bm25), cosines (vector hits + the stored vectors of the keyword
        hits and date candidates), the rows of every candidate (liveness not yet checked) and
        the date candidates (memories in a relative span of the query).

        Two halves run at once: the query is embedded (ONNX, a worker thread) and searched in
        usearch, while the keyword half runs BM25 (SQLite, aiosqlite's thread). When the
        vector half is done by then (a prefetched query vector: usearch takes about a
        millisecond), the rows of every candidate of both halves load in one statement, with
        the stored vectors the keyword hits need: one trip to SQLite's thread instead of two.
        When the query is still being embedded, the keyword hits' rows load meanwhile and
        the vector hits' after.
        """
        semantic = self.mode != "keyword" and self.store.can_embed
        nearest = None
        if semantic:
            nearest = asyncio.ensure_future(self._nearest(chat, _about(query_plan, text), limit))
            # One loop turn, so the vector half queues its index check (one PRAGMA) on the
            # connection before BM25 occupies it for milliseconds; otherwise usearch waits
            # for BM25 to finish.
            await asyncio.sleep(0)
        keyword: list[tuple[int, float]] = []
        stored: dict[int, np.ndarray] = {}
        dated: list[int] = []
        rows: dict[int, RecallRow] = {}
        try:
            if self.mode != "vector":
                keyword = await self._keyword_half(chat, text, query_plan, limit, semantic)
            if query_plan.relative:
                dated = await self.store.ids_between(
                    chat, [(r.start, r.end) for r in query_plan.relative], limit, now)
            ids = list(dict.fromkeys([i for i, _ in keyword] + dated))
            loaded: set[int] = set()
            if ids and nearest is not None and not nearest.done():
                # the query is still being embedded: these rows load meanwhile
                found, stored = await self.store.recall_rows_with_vectors(chat, ids)
                rows.update((m.id, m) for m in found)
                loaded.update(ids)
            vector, hits = await nearest if nearest is not None else (None, [])
            rest = [i for i in dict.fromkeys(ids + [i for i, _ in hits]) if i not in loaded]
            if rest:
                if vector is not None and not loaded:
                    found, stored = await self.store.recall_rows_with_vectors(chat, rest)
                else:   # the vector hits' cosines come from the index
                    found = await self.store.recall_rows(chat, rest)
                rows.update((m.id, m) for m in found)
        finally:
            if nearest is not None and not nearest.done():
                nearest.cancel()
        if self.bridge is not None and keyword and hits:
            keyword, more = await self._bridged(chat, text, query_plan, limit, semantic,
                                                keyword, hits, rows)
            if more:   # turns only the bridge's words found
                found, extra = await self.store.recall_rows_with_vectors(chat, more)
                rows.update((m.id, m) for m in found)
                stored.update(extra)
        cosines = {i: s for i, s in hits}
        if vector is not None:
            for memory_id, emb in stored.items():
                if memory_id not in cosines and emb.shape == vector.shape:
                    cosines[memory_id] = float(np.dot(emb, vector))
        return keyword, cosines, rows, dated

    async def _keyword_half(self, chat: str, text: str, query_plan: QueryPlan, limit: int,
                            semantic: bool) -> list[tuple[int, float]]:
        """BM25 hits for the question, and for its machine translation when the question is
        in the chat's other language, and for every sense Apertium's dictionary gives its
        words (`recall_translation_senses = "search"`: "tienda" comes out "tent", the chat
        says "shop"), all merged by `_union`. A question in the chat's language is never
        translated, so it ranks as without translation and pays nothing for it. The vector
        half searches with the question and its translation embedded as one text
        (`_query_vector`; docs/benchmarks.md, "Step 9 (Spanish)")."""
        async def search(terms: QueryPlan) -> list[tuple[int, float]]:
            return await self.keyword_index.search(
                chat, terms, limit, self.settings.recall_keyword_doc_budget,
                rank_common_words=not semantic)

        keyword = await search(query_plan)
        if self.machine_translator is None or _coverage(keyword) >= 1.0:
            return keyword   # nothing a translation could cover better
        translation = await self._translation(chat, _about(query_plan, text))
        if translation is None or not translation.text:
            return keyword
        # No word-list alternatives: they lead the translation's words back to the
        # question's language (English R@5 −0.2 when they did). Nor the question's own words
        # beside the translation's (multi-hop −0.8 R@10): docs/benchmarks.md, "Ablation".
        found = await search(replace(query_plan, terms=search_terms(translation.text),
                                     alternatives={}))
        senses = self.settings.recall_translation_senses
        if senses == "off" or not translation.senses:
            merged = _union([found, keyword], limit)
        else:
            sensed = await search(replace(query_plan, terms=search_terms(" ".join(
                translation.senses)), alternatives={}))
            merged = _union([sensed, keyword] if senses == "replace"
                            else [found, sensed, keyword], limit)
        if not self.settings.recall_translated_memories:
            return merged
        # its own words over the memories as translated when saved (memory_translation)
        return added(merged, await translated_hits(
            getattr(self.store, "translations", None), chat, query_plan, limit,
            self.settings.recall_keyword_doc_budget, semantic), limit)

    async def _bridged(
        self, chat: str, text: str, query_plan: QueryPlan, limit: int, semantic: bool,
        keyword: list[tuple[int, float]], hits: list[tuple[int, float]],
        rows: dict[int, RecallRow],
    ) -> tuple[list[tuple[int, float]], list[int]]:
        """The keyword hits with those of the bridge's words (`recall/bridge.py`) for a
        question that was translated, and the ids only the bridge found (their rows are not
        loaded yet). The chat's words are those of the question's best vector hits."""
        assert self.bridge is not None
        translation = await self._translation(chat, _about(query_plan, text))
        if translation is None or not translation.text:
            return keyword, []
        vocabulary = content_words(rows[i].content for i, _ in
                                   hits[:self.settings.recall_bridge_hits] if i in rows)
        # a word Apertium did not know is in the translation's text, not rendered by it
        rendered = (set(search_terms(translation.text)) - {
            w for u in translation.unknown for w in search_terms(u)}) | set(
            search_terms(" ".join(translation.senses)))
        sources = unrendered(query_plan.terms, rendered, text, vocabulary)
        words = await self.bridge.bridge(sources, [w for w in vocabulary if w not in rendered])
        if not words:
            return keyword, []
        found = await self.keyword_index.search(
            chat, replace(query_plan, terms=tuple(words), alternatives={}), limit,
            self.settings.recall_keyword_doc_budget, rank_common_words=not semantic)
        known = {i for i, _ in keyword}
        return (merged(keyword, found, self.settings.recall_bridge_weight, limit),
                [i for i, _ in found if i not in known and i not in rows])

    async def _translation(self, chat: str, text: str) -> Translation | None:
        """`text` in the chat's other language; None when the question is in the chat's
        language, either is unclear, or there is no translation in time."""
        source = language(text)
        if source is None or self.machine_translator is None:
            return None
        if await self._chat_language(chat) != other(source):
            return None
        return await self.machine_translator.translate(text, source, other(source))

    async def _chat_language(self, chat: str) -> str | None:
        """The language of the chat's newest memories (None: cannot tell), remembered for
        CHAT_LANGUAGE_SECONDS: one store call per chat every ten minutes at most."""
        now = time.monotonic()
        known = self._languages.get(chat)
        if known is not None and now - known[1] < CHAT_LANGUAGE_SECONDS:
            return known[0]
        memories = await self.store.list(chat, limit=CHAT_LANGUAGE_SAMPLE)
        found = language(" ".join(m.content for m in memories), marks=False)
        self._languages[chat] = (found, now)
        self._languages.move_to_end(chat)
        while len(self._languages) > _LAST_CHATS:
            self._languages.popitem(last=False)
        return found

    async def start_translation(self) -> None:
        """Start the machine translation's pipelines now (benchmarks: as a bot that has
        translated once has them); no-op without."""
        if self.machine_translator is not None:
            await self.machine_translator.start()

    async def close(self) -> None:
        """Stop what recall started outside the process (the translation pipelines)."""
        if self.machine_translator is not None:
            await self.machine_translator.close()

    async def _nearest(
        self, chat: str, text: str, limit: int
    ) -> tuple[np.ndarray | None, list[tuple[int, float]]]:
        """The query vector and its nearest memories (None, [] when it cannot be embedded).

        The index check runs while the query is embedded."""
        embedding = asyncio.ensure_future(self._query_vector(chat, text))
        try:
            ready = await self.store.prepare_vectors(chat)
            embedded = await embedding
        finally:
            if not embedding.done():
                embedding.cancel()
        if embedded is None:
            return None, []
        vector = np.asarray(embedded, dtype=np.float32)
        if not ready:
            return vector, []
        return vector, await self.store.nearest(chat, vector, limit)

    async def _query_vector(self, chat: str, text: str) -> np.ndarray | None:
        """The query's vector. For a question in the chat's other language,
        `recall_translation_vector` "joined" embeds the question and its translation as one
        text (a newline between), "mean" takes the normalised mean of their two vectors; the
        question's own vector when there is no translation, or with "off"."""
        how = self.settings.recall_translation_vector
        if how == "off" or self.machine_translator is None:
            return await self._embed(text)
        if how == "joined":
            translation = await self._translation(chat, text)
            if translation is None or not translation.text:
                return await self._embed(text)
            return await self._embed(f"{text}\n{translation.text}")
        own = asyncio.ensure_future(self._embed(text))
        try:
            translation = await self._translation(chat, text)
            if translation is None or not translation.text:
                return await own
            theirs = await self._embed(translation.text)
            mine = await own
        finally:
            if not own.done():
                own.cancel()
        if mine is None or theirs is None or np.shape(mine) != np.shape(theirs):
            return mine
        both = np.asarray(mine, dtype=np.float32) + np.asarray(theirs, dtype=np.float32)
        norm = float(np.linalg.norm(both))
        return both / norm if norm > 0 else mine

    async def recall_block(self, chat_id: str, query: str, budget_tokens: int) -> str:
        """The recalled memories as a compact prompt block within `budget_tokens` (may be '')."""
        if budget_tokens <= 0:
            return ""
        found = await self.recall(chat_id, query, k=self.settings.recall_k,
                                  min_score=self.settings.recall_min_score, touch=False)
        if not found:
            self._remember_last(chat_id, [])
            return ""
        header = msg.RECALL_BLOCK_HEADER   # in the chat's language
        header_cost = self.count_tokens(header) + 1
        lines = {s.memory.id: format_line(s) for s in found}
        chosen = select(
            [Candidate(key=s.memory.id, tier=Tier.RETRIEVED, tokens=self.count_tokens(lines[
                s.memory.id]) + 1, priority=s.score.total) for s in found],
            budget_tokens - header_cost,
        )
        picked = {c.key for c in chosen.items}
        self._remember_last(chat_id, [s for s in found if s.memory.id in picked])
        if not chosen.items:
            return ""
        await self.store.mark_accessed(chat_id, [c.key for c in chosen.items], wait=False)
        return "\n".join([header, *(lines[c.key] for c in chosen.items)])


def format_line(scored: ScoredMemory) -> str:
    """`- [#12 fact · 01/03/2024] content` — the id lets the model refer back to it; the
    date and the owner's label are written as the chat's language writes them."""
    m: Memory = scored.memory
    label = f"{m.type.value}:{m.key}" if m.key else m.type.value
    content = " ".join(m.content.split())
    if m.owner_id is not None:   # a group member's memory says whose it is
        owner = str(m.metadata.get("owner_name") or "?")
        label += f" · {msg.MEMORY_OWNER.format(name=owner)} (id {m.owner_id})"
    return f"- [#{m.id} {label} · {msg.format_datetime(m.created_at.date())}] {content}"


def _about(query_plan: QueryPlan, text: str) -> str:
    """What the query's vector is made of: "¿qué cené ayer?" is about dinner, and a stored
    turn that says "ayer" is not closer to it."""
    return query_plan.without_time if fts.terms(query_plan.without_time) else text


def _union(searches: list[list[tuple[int, float]]], limit: int) -> list[tuple[int, float]]:
    """Keyword searches of one question (its words, its translation's, its senses') as one:
    each hit's BM25 over its search's best, times that search's coverage, the best of them
    for a memory found by several; the coverage is the best-covering search's. BM25 scores of two
    queries are not comparable, their shares of each search's best are. Measured against
    keeping only the better-covering search: Spanish questions over English chats R@10
    +1.8, the reverse +0.7 (docs/benchmarks.md, "Step 5")."""
    searches = [hits for hits in searches if hits]
    if len(searches) < 2:
        return searches[0] if searches else []
    merged: dict[int, float] = {}
    for hits in searches:
        best = max(s for _, s in hits) or 1.0
        weight = _coverage(hits)
        for memory_id, value in hits:
            merged[memory_id] = max(merged.get(memory_id, 0.0), weight * value / best)
    ranked = sorted(merged.items(), key=lambda item: -item[1])[:limit]   # stable: ties keep order
    return KeywordHits(ranked, coverage=max(_coverage(hits) for hits in searches))


def _coverage(hits: list[tuple[int, float]]) -> float:
    return float(getattr(hits, "coverage", 1.0))


def _utc(when: datetime | None) -> datetime:
    if when is None:
        return datetime.now(UTC)
    return when.replace(tzinfo=UTC) if when.tzinfo is None else when.astimezone(UTC)


def _whole(row: RecallRow | Memory) -> Memory:
    return row.memory() if isinstance(row, RecallRow) else row


def _alive(memory: RecallRow | Memory, now: datetime) -> bool:
    if memory.status != MemoryStatus.ACTIVE:
        return False
    return memory.expires_at is None or memory.expires_at > now

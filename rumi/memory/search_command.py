"""/search and the `search_memory` tool: one search over memories, conversations and daily logs.

Relative time ("/search pizza la semana pasada", "/search ayer") is resolved in the chat's
timezone at the time of the search (`relative_time`); its words are not searched for, and
hits from that span come first — only those when nothing else was asked.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from rumi import messages as msg
from rumi.base.commands import CommandRequest
from rumi.base.replies import Reply
from rumi.memory.files.journal import Journal
from rumi.memory.lines import memory_line
from rumi.memory.recall import relative_time
from rumi.memory.store import fts
from rumi.memory.store.tape_index import TapeIndex


class MemorySearch:
    """Dated hits from the store, the tapes (`TapeIndex`) and the journal, for one chat."""

    def __init__(self, store: Any, tape_index: TapeIndex, journal: Journal, *,
                 timezone: Callable[[str], Awaitable[ZoneInfo]] | None,
                 clock: Callable[[], datetime]) -> None:
        self.store = store
        self.tape_index = tape_index
        self.journal = journal
        self.timezone = timezone
        self.clock = clock

    async def search(self, chat_id: str, query: str, limit: int = 8,
                     spans: list[relative_time.Span] | None = None) -> list[str]:
        """Dated hits from long-term memory, the tape and the daily logs/snapshots.

        A relative time expression in `query` ("ayer", "last week") puts the hits from its
        span first; with no other words, it lists what that span holds. `spans`: the query's
        already resolved (`spans`)."""
        if spans is None:
            spans = await self.spans(chat_id, query)
        words = relative_time.without(query, [s.expression for s in spans]) if spans else query
        only_span = bool(spans) and not fts.terms(words)

        def in_span(when: datetime | None) -> bool:
            return when is not None and any(s.contains(when) for s in spans)

        found: list[tuple[bool, str]] = []
        if only_span:
            ids = await self.store.ids_between(chat_id, [(s.start, s.end) for s in spans],
                                               limit, self.clock())
        else:
            ids = [i for i, _ in await self.store.keyword_search(chat_id, words, limit)]
        for memory in await self.store.get_many(chat_id, ids):
            found.append((in_span(memory.created_at),
                          f"🧠 {memory.created_at:%Y-%m-%d} {memory_line(memory)}"))
        tape = await self._search_tape(
            chat_id, words, limit if not spans else 10 * limit,
            [(s.start, s.end) for s in spans] if only_span else None)
        marked = [(in_span(when), line) for when, line in tape]
        found += sorted(marked, key=lambda f: not f[0])[:limit]
        zone = await self.zone(chat_id)
        days = {d for s in spans for d in local_days(s, zone)}
        for hit in await self.journal.search(chat_id, words, limit,
                                             days=days if only_span else None):
            found.append((hit.day in days, f"📓 {hit.day} {hit.line}"))
        if spans:
            found.sort(key=lambda f: not f[0])  # stable: each source keeps its own order
        return [line for _, line in found]

    async def zone(self, chat_id: str) -> ZoneInfo:
        return await self.timezone(chat_id) if self.timezone is not None else ZoneInfo("UTC")

    async def spans(self, chat_id: str, query: str) -> list[relative_time.Span]:
        if not relative_time.mentions(query):
            return []
        zone = await self.zone(chat_id)
        return await asyncio.to_thread(relative_time.resolve, query, self.clock(), zone)

    async def _search_tape(
        self, chat_id: str, query: str, limit: int,
        spans: list[tuple[datetime, datetime]] | None = None,
    ) -> list[tuple[datetime | None, str]]:
        """(time, line) of conversation hits, the chat's own tape and the ones /import kept
        (`imp…:id`), newest first; with `spans`, only messages from them."""
        hits = await self.tape_index.search(chat_id, query, limit, spans or ())
        return [(hit.when, f"💬 {hit.day} [#{hit.ref}] {hit.text}") for hit in hits]

    async def cmd_search(self, request: CommandRequest) -> Reply:
        query = request.args.strip()
        if not query:
            return Reply(msg.SEARCH_USAGE, markdown=False)
        spans = await self.spans(request.chat_id, query)
        hits = await self.search(request.chat_id, query, spans=spans)
        period = ""
        if spans:  # what "ayer" was taken to mean, so the person can check it
            zone = await self.zone(request.chat_id)
            period = msg.SEARCH_PERIOD.format(
                periods="; ".join(f"«{s.expression.text}» = {period_text(s, zone)}"
                                  for s in spans)) + "\n"
        if not hits:
            return Reply(period + msg.SEARCH_NONE.format(query=query), markdown=False)
        return Reply(msg.SEARCH_RESULTS.format(query=query) + "\n" + period + "\n".join(hits[:20]),
                     markdown=False)


def period_text(span: relative_time.Span, zone: ZoneInfo) -> str:
    """24/11/2026 · 16/11/2026–22/11/2026 · 24/11/2026 12:00–21:00 (local), as the active
    language writes dates (`msg.format_datetime`: 24 Nov 2026 in English)."""
    start = span.start.astimezone(zone)
    last = (span.end - timedelta(microseconds=1)).astimezone(zone)
    if start.hour or start.minute or span.end - span.start < timedelta(days=1):
        return f"{msg.format_datetime(start)}–{span.end.astimezone(zone):%H:%M}"
    if start.date() == last.date():
        return msg.format_datetime(start.date())
    return f"{msg.format_datetime(start.date())}–{msg.format_datetime(last.date())}"


def local_days(span: relative_time.Span, zone: ZoneInfo) -> list[str]:
    """The local dates (YYYY-MM-DD, the daily logs' names) a span touches."""
    day, last = span.start.astimezone(zone).date(), (span.end.astimezone(zone)
                                                     - timedelta(microseconds=1)).date()
    out = []
    while day <= last:
        out.append(day.isoformat())
        day += timedelta(days=1)
    return out

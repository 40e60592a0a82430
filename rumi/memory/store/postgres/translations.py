"""Each memory machine-translated into the chat's other language, on PostgreSQL (issue 35):
what the background translator (`recall.memory_translation`) reads and writes, and recall's
search of the translations by a question's own words.

The rows are `rumi.memory_translations` (migration 011): a translation's words in its own
language's text search configuration, with its two context translations as weights B and C,
and per-chat word statistics kept by triggers, so the search is the memories' own BM25
(`search.rank_bm25`) over other rows. Derived data, never the only copy of anything: export
leaves it out, import and a transfer between stores translate again. The migration's triggers
and foreign key take a translation away in the same transaction as whatever makes it wrong or
removes what it was made from, as SQLite's (`store/translations.py`) do.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rumi.memory.store.codec import check_chat_id
from rumi.memory.store.coverage import KeywordHits
from rumi.memory.store.ports import QueryTerms
from rumi.memory.store.postgres.rows import owner
from rumi.memory.store.postgres.search import RankedRows, rank_bm25
from rumi.memory.store.translations import Translated, Untranslated

# a translation's words as the ranking reads them: in its language's column, the other empty
# (`tr`: the ranking's own `t` is its query terms)
_IN = "CASE WHEN tr.lang = '{cfg}' THEN tr.tsv || ''::tsvector ELSE ''::tsvector END"
TRANSLATIONS = RankedRows(
    rows="rumi.memory_translations tr JOIN cto.memory m ON m.id = tr.memory_id "
         "AND m.owner_type = tr.owner_type AND m.owner_id = tr.owner_id",
    detoasted=f"m.id, {_IN.format(cfg='es')} AS tsv_es, {_IN.format(cfg='en')} AS tsv_en",
    match="((tr.lang = 'es' AND tr.tsv @@ q.es) OR (tr.lang = 'en' AND tr.tsv @@ q.en))",
    totals="rumi.translation_word_totals", stats="rumi.translation_word_stats",
    docs_by_config="t.docs_es, t.docs_en")

# the conversation context rule of migration 004 (`rumi.memory_context`): the earlier active
# memories of the same owner and type within 3 hours, newest first
_NEIGHBOUR = """(SELECT p.id FROM cto.memory p WHERE p.owner_type = m.owner_type
    AND p.owner_id = m.owner_id AND p.type = m.type AND p.status = 'active' AND p.id < m.id
    AND abs(extract(epoch FROM m.created_at - p.created_at)) <= 10800
    ORDER BY p.id DESC LIMIT 1 OFFSET {n})"""

# `FOR SHARE OF m`: an edit, a forget or an expiry of the memory either waits for this
# transaction (and then takes the translation away with its own triggers) or is waited for,
# and the memory is read again after it (its new hash, or its absence, then inserts nothing)
_WRITE = f"""INSERT INTO rumi.memory_translations AS t
    (memory_id, owner_type, owner_id, hash, lang, text, ctx1_id, ctx2_id)
SELECT m.id, m.owner_type, m.owner_id, m.hash, u.lang, u.text, {_NEIGHBOUR.format(n=0)},
       {_NEIGHBOUR.format(n=1)}
FROM cto.memory m JOIN unnest(%s::bigint[], %s::text[], %s::text[], %s::text[])
     AS u(id, hash, lang, text) ON u.id = m.id AND u.hash = m.hash
WHERE m.owner_type = %s AND m.owner_id = %s AND m.status = 'active'
ORDER BY m.id
FOR SHARE OF m
ON CONFLICT (memory_id) DO NOTHING"""  # noqa: S608 - constants only


class PgTranslations:
    """The memories' translations in `rumi.memory_translations`, through the store's pool."""

    available = True
    # the `spanish` configuration stems a question's words in the server, as it stems the
    # translations (accents folded first): recall hands it the words as they were said
    stems_questions = False

    def __init__(self, pool: Any) -> None:
        self.pool = pool

    async def _rows(self, sql: str, params: Sequence[Any] = ()) -> list[dict[str, Any]]:
        async with self.pool.connection() as conn:
            cur = await conn.execute(sql, params)
            return list(await cur.fetchall())

    async def chats_missing(self) -> list[str]:
        """Chats with an active memory that has no translation (new ones; every chat after
        the upgrade that brought the table)."""
        rows = await self._rows(
            "SELECT DISTINCT m.owner_id FROM cto.memory m LEFT JOIN rumi.memory_translations t "
            "ON t.memory_id = m.id WHERE m.status = 'active' AND t.memory_id IS NULL "
            "ORDER BY 1")
        return [str(r["owner_id"]) for r in rows]

    async def rebuild_stale(self) -> list[str]:
        """Nothing to rebuild: the server computes each row's words by the migration's own
        functions, so no row was made by an older definition (a future change of it is a
        migration that rewrites the rows)."""
        return []

    async def missing(self, chat_id: str, limit: int, after: int = 0) -> list[Untranslated]:
        """Up to `limit` of the chat's active memories without a translation with an id
        above `after`, oldest first (a memory's earlier neighbours are its context)."""
        chat = check_chat_id(chat_id)
        rows = await self._rows(
            "SELECT m.id, m.content, m.hash FROM cto.memory m LEFT JOIN "
            "rumi.memory_translations t ON t.memory_id = m.id WHERE m.owner_type = %s "
            "AND m.owner_id = %s AND m.status = 'active' AND m.id > %s "
            "AND t.memory_id IS NULL ORDER BY m.id LIMIT %s",
            (*owner(chat), int(after), int(limit)))
        return [Untranslated(int(r["id"]), str(r["content"]), str(r["hash"]).strip())
                for r in rows]

    async def write(self, chat_id: str, done: Sequence[Translated]) -> int:
        """Store translations, each only while its memory is still active with the content
        it was made from (an edit or a forget meanwhile wins); how many were stored."""
        chat = check_chat_id(chat_id)
        if not done:
            return 0
        async with self.pool.connection() as conn, conn.transaction():
            cur = await conn.execute(_WRITE, (
                [int(d.id) for d in done], [d.content_hash for d in done],
                [d.lang for d in done], [d.text for d in done], *owner(chat)))
            return max(0, cur.rowcount)

    async def count(self, chat_id: str) -> int:
        """How many of the chat's memories have a translation."""
        rows = await self._rows(
            "SELECT count(*) AS n FROM rumi.memory_translations WHERE owner_type = %s "
            "AND owner_id = %s", owner(check_chat_id(chat_id)))
        return int(rows[0]["n"])

    async def search(self, chat: str, query: QueryTerms, limit: int, doc_budget: int,
                     *, rank_common_words: bool = True) -> KeywordHits:
        """(memory id, BM25) of the chat's active, unexpired memories whose translation (with
        its context's) matches the query's words, best first; empty while none is."""
        async with self.pool.connection() as conn:
            hits = await rank_bm25(conn, TRANSLATIONS, chat, query, limit, doc_budget,
                                   rank_common_words=rank_common_words)
        return hits if isinstance(hits, KeywordHits) else KeywordHits(hits, coverage=0.0)

"""The keyword half of recall in PostgreSQL: full-text search in Spanish and in English.

Each memory has two generated `tsvector`s (content, the conversation's two earlier turns,
key + summary, as weights A-D; accents folded by
`rumi.fold`, stemmed by the `spanish` and `english` configurations) with GIN indexes; a query
matches either, and ranks by the better `ts_rank_cd` of the two. Words only reach
`to_tsquery` as word tokens (`fts.terms`), so nothing a person types is query syntax.
"""

from __future__ import annotations

from typing import Any

from rumi.memory.store.ports import QueryTerms
from rumi.memory.store.postgres.rows import owner

RECALL = "ABC"        # content and the two earlier turns
TEXT = "AD"           # content, key and summary (/search, /forget <words>)
# ts_rank_cd's weights for {D, C, B, A}: the earlier turns count less than the memory itself
_RECALL_WEIGHTS = "{0.0, 0.25, 0.5, 1.0}"
_TEXT_WEIGHTS = "{1.0, 0.0, 0.0, 1.0}"


def tsquery(words: list[str], joiner: str = "|", labels: str = TEXT) -> str:
    """`to_tsquery` text of word tokens (letters and digits only: no operator can appear),
    each restricted to the weight `labels` it may match in."""
    return f" {joiner} ".join(f"{w}:{labels}" for w in words if w.isalnum())


class PgKeywords:
    """Ranked keyword candidates of one chat (the owner filter comes first)."""

    def __init__(self, pool: Any) -> None:
        self.pool = pool

    async def search(self, chat: str, query: QueryTerms, limit: int, doc_budget: int = 0,
                     *, rank_common_words: bool = True) -> list[tuple[int, float]]:
        """(id, rank > 0) of active, unexpired memories matching any word, best first."""
        words = [w for w in query.terms if w.isalnum()]
        if not words or limit <= 0:
            return []
        return await self.ranked(chat, tsquery(words, "|", RECALL), limit, _RECALL_WEIGHTS)

    async def ranked(self, chat: str, expression: str, limit: int,
                     weights: str = _TEXT_WEIGHTS) -> list[tuple[int, float]]:
        if not expression.strip() or limit <= 0:
            return []
        async with self.pool.connection() as conn:
            cur = await conn.execute(
                "WITH q AS (SELECT to_tsquery('spanish', rumi.fold(%s)) AS es, "
                "to_tsquery('english', rumi.fold(%s)) AS en) "
                "SELECT m.id, greatest(ts_rank_cd(%s::float4[], m.tsv_es, q.es), "
                "ts_rank_cd(%s::float4[], m.tsv_en, q.en)) "
                "AS rank FROM cto.memory m, q WHERE m.owner_type = %s AND m.owner_id = %s "
                "AND m.status = 'active' AND (m.expires_at IS NULL OR m.expires_at > now()) "
                "AND (m.tsv_es @@ q.es OR m.tsv_en @@ q.en) ORDER BY rank DESC, m.id LIMIT %s",
                (expression, expression, weights, weights, *owner(chat), int(limit)))
            rows = await cur.fetchall()
        return [(int(r["id"]), float(r["rank"])) for r in rows if float(r["rank"]) > 0]

"""The keyword half of recall in PostgreSQL: full-text search in Spanish and in English.

Each memory has two generated `tsvector`s (content, the conversation's two earlier turns,
key + summary, as weights A-D; accents folded by
`rumi.fold`, stemmed by the `spanish` and `english` configurations) with GIN indexes; a query
matches either. Recall ranks like BM25 (`PgKeywords.search`: each word's rarity in the chat
times its `ts_rank_cd` match); text search by the better `ts_rank_cd` of the two. Words only reach
`to_tsquery` as word tokens (`fts.terms`), so nothing a person types is query syntax.
"""

from __future__ import annotations

import math
from typing import Any

from rumi.memory.store.ports import QueryTerms
from rumi.memory.store.postgres.rows import owner

RECALL = "ABC"        # content and the two earlier turns
TEXT = "AD"           # content, key and summary (/search, /forget <words>)
# ts_rank_cd's weights for {D, C, B, A}: the earlier turns count less than the memory itself
_RECALL_WEIGHTS = "{0.0, 0.25, 0.5, 1.0}"
_TEXT_WEIGHTS = "{1.0, 0.0, 0.0, 1.0}"


_MAX_TERMS = 32
_LIVE = ("m.owner_type = %s AND m.owner_id = %s AND m.status = 'active' "
         "AND (m.expires_at IS NULL OR m.expires_at > now())")
# each word's document frequency among the chat's live memories (GIN bitmap scans per word)
_DF = f"""WITH t AS (SELECT w, to_tsquery('spanish', rumi.fold(w || ':{RECALL}')) AS es,
                            to_tsquery('english', rumi.fold(w || ':{RECALL}')) AS en
                     FROM unnest(%s::text[]) AS w)
SELECT t.w, (SELECT count(*) FROM cto.memory m WHERE {_LIVE}
             AND (m.tsv_es @@ t.es OR m.tsv_en @@ t.en)) AS df,
       (SELECT count(*) FROM cto.memory m WHERE {_LIVE}) AS total
FROM t"""  # noqa: S608 - constants only; the words are parameters
# BM25-like: Σ idf(word) · match(word), over the memories matching any kept word
_RANK = f"""WITH t AS (SELECT to_tsquery('spanish', rumi.fold(w || ':{RECALL}')) AS es,
                            to_tsquery('english', rumi.fold(w || ':{RECALL}')) AS en, idf
                     FROM unnest(%s::text[], %s::float8[]) AS u(w, idf)),
     q AS (SELECT to_tsquery('spanish', rumi.fold(%s)) AS es,
                  to_tsquery('english', rumi.fold(%s)) AS en)
SELECT m.id, sum(t.idf * greatest(ts_rank_cd(%s::float4[], m.tsv_es, t.es, 1),
                                  ts_rank_cd(%s::float4[], m.tsv_en, t.en, 1))) AS rank
FROM cto.memory m CROSS JOIN q CROSS JOIN t
WHERE {_LIVE} AND (m.tsv_es @@ q.es OR m.tsv_en @@ q.en)
GROUP BY m.id ORDER BY rank DESC, m.id LIMIT %s"""  # noqa: S608 - constants only


def tsquery(words: list[str], joiner: str = "|", labels: str = TEXT) -> str:
    """`to_tsquery` text of word tokens (letters and digits only: no operator can appear),
    each restricted to the weight `labels` it may match in."""
    return f" {joiner} ".join(f"{w}:{labels}" for w in words if w.isalnum())


class PgKeywords:
    """Ranked keyword candidates of one chat (the owner filter comes first)."""

    def __init__(self, pool: Any) -> None:
        self.pool = pool

    async def search(self, chat: str, query: QueryTerms, limit: int, doc_budget: int = 2_000,
                     *, rank_common_words: bool = True) -> list[tuple[int, float]]:
        """(id, rank > 0) of the chat's active, unexpired memories matching any word, best
        first, ranked like BM25: each word's match (`ts_rank_cd`, length-normalised, the
        earlier turns weighing less) times its rarity in this chat (BM25's idf, from this
        chat's documents only). A word in more than `doc_budget` memories is left out when
        rarer words match (it would rank little and cost much); without rarer ones, only
        the rarest common word ranks."""
        words = list(dict.fromkeys(w for w in query.terms if w.isalnum()))[:_MAX_TERMS]
        if not words or limit <= 0:
            return []
        async with self.pool.connection() as conn:
            cur = await conn.execute(_DF, (words, *owner(chat), *owner(chat)))
            stats = await cur.fetchall()
            known = [(r["w"], int(r["df"]), int(r["total"])) for r in stats if int(r["df"]) > 0]
            if not known:
                return []
            kept = [k for k in known if k[1] <= doc_budget] or [min(known, key=lambda k: k[1])]
            idf = [math.log(1 + (total - df + 0.5) / (df + 0.5)) for _, df, total in kept]
            either = tsquery([w for w, _, _ in kept], "|", RECALL)
            cur = await conn.execute(_RANK, ([w for w, _, _ in kept], idf, either, either,
                                             _RECALL_WEIGHTS, _RECALL_WEIGHTS, *owner(chat),
                                             int(limit)))
            rows = await cur.fetchall()
        return [(int(r["id"]), float(r["rank"])) for r in rows if float(r["rank"]) > 0]

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

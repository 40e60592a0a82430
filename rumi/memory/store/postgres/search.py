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
# each word's document frequency among the chat's active memories and the chat's total, read
# from the statistics the write triggers keep (migration 005): two index lookups per word, the
# same at 100 memories as at 100,000. A word's count is the larger of its Spanish and English
# stems' (a memory matches either).
_DF = """WITH w AS (SELECT w, c.config, (SELECT min(l) FROM unnest(tsvector_to_array(
                        to_tsvector(c.cfg, rumi.fold(w)))) AS l) AS lexeme
                   FROM unnest(%s::text[]) AS w
                   CROSS JOIN (VALUES ('es', 'spanish'::regconfig),
                                      ('en', 'english'::regconfig)) AS c(config, cfg))
SELECT w.w, max(coalesce(s.df, 0)) AS df,
       (SELECT docs FROM rumi.word_totals WHERE owner_type = %s AND owner_id = %s) AS total
FROM w LEFT JOIN rumi.word_stats s ON s.owner_type = %s AND s.owner_id = %s
     AND s.config = w.config AND s.lexeme = w.lexeme
GROUP BY w.w"""
_TERMS = f"""t AS (SELECT to_tsquery('spanish', rumi.fold(w || ':{RECALL}')) AS es,
                          to_tsquery('english', rumi.fold(w || ':{RECALL}')) AS en, idf
                   FROM unnest(%s::text[], %s::float8[]) AS u(w, idf)),
     q AS (SELECT to_tsquery('spanish', rumi.fold(%s)) AS es,
                  to_tsquery('english', rumi.fold(%s)) AS en)"""  # noqa: S608 - constants
_SCORE = ("sum(t.idf * greatest(ts_rank_cd(%s::float4[], m.tsv_es, t.es, 1), "
          "ts_rank_cd(%s::float4[], m.tsv_en, t.en, 1)))")
# BM25-like: Σ idf(word) · match(word), over the memories matching any kept word
_RANK = f"""WITH {_TERMS}
SELECT m.id, {_SCORE} AS rank
FROM cto.memory m CROSS JOIN q CROSS JOIN t
WHERE {_LIVE} AND (m.tsv_es @@ q.es OR m.tsv_en @@ q.en)
GROUP BY m.id ORDER BY rank DESC, m.id LIMIT %s"""  # noqa: S608 - constants only
# one word too common for the budget: only its newest `budget` matches are ranked (as SQLite's
# rowid floor does), so the cost stays bounded however common it is
_RANK_NEWEST = f"""WITH {_TERMS},
     newest AS MATERIALIZED (SELECT m.id FROM cto.memory m CROSS JOIN q
                             WHERE {_LIVE} AND (m.tsv_es @@ q.es OR m.tsv_en @@ q.en)
                             ORDER BY m.id DESC LIMIT %s)
SELECT m.id, {_SCORE} AS rank
FROM newest JOIN cto.memory m ON m.id = newest.id CROSS JOIN t
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
        budget = max(1, int(doc_budget))
        async with self.pool.connection() as conn:
            cur = await conn.execute(_DF, (words, *owner(chat), *owner(chat)))
            stats = await cur.fetchall()
            known = sorted((int(r["df"]), r["w"]) for r in stats if int(r["df"]) > 0)
            if not known:
                return []
            total = max(int(stats[0]["total"] or 0), known[-1][0])
            kept: list[tuple[int, str]] = []
            for df, word in known:   # rarest first, while their matches fit the budget
                if kept and sum(d for d, _ in kept) + df > budget:
                    break
                kept.append((df, word))
            common = kept[0][0] > budget
            if common and not rank_common_words and 2 * kept[0][0] >= total:
                return []   # in half the chat or more: BM25 gives it no weight
            idf = [math.log(1 + (total - df + 0.5) / (df + 0.5)) for df, _ in kept]
            kept_words = [w for _, w in kept]
            either = tsquery(kept_words, "|", RECALL)
            head = (kept_words, idf, either, either)
            if common:
                cur = await conn.execute(_RANK_NEWEST, (
                    *head, *owner(chat), budget, _RECALL_WEIGHTS, _RECALL_WEIGHTS, int(limit)))
            else:
                cur = await conn.execute(_RANK, (
                    *head, _RECALL_WEIGHTS, _RECALL_WEIGHTS, *owner(chat), int(limit)))
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

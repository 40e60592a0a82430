"""The keyword half of recall in PostgreSQL: full-text search in Spanish and in English.

Each memory has two generated `tsvector`s (content, the conversation's two earlier turns,
key + summary, as weights A-D; accents folded by `rumi.fold`, stemmed by the `spanish` and
`english` configurations) with GIN indexes; a query matches either. Recall ranks by BM25 as
SQLite's FTS5 does (`PgKeywords.search`), from per-chat word statistics that triggers keep in
the writing transaction (migration 005, `rumi.word_stats` / `rumi.word_totals`), so a recall
costs a few index lookups plus the ranking of at most `doc_budget` memories however large the
chat is; text search ranks by the better `ts_rank_cd` of the two languages. Words only reach
`to_tsquery` as word tokens (`fts.terms`), so nothing a person types is query syntax.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rumi.memory.store.coverage import KeywordHits, query_coverage
from rumi.memory.store.ports import QueryTerms
from rumi.memory.store.postgres.rows import owner

RECALL = "ABC"        # content and the two earlier turns
TEXT = "AD"           # content, key and summary (/search, /forget <words>)
# ts_rank_cd's weights for {D, C, B, A} in text search: content, key and summary
_TEXT_WEIGHTS = "{1.0, 0.0, 0.0, 1.0}"


_MAX_TERMS = 32
_LIVE = ("m.owner_type = %s AND m.owner_id = %s AND m.status = 'active' "
         "AND (m.expires_at IS NULL OR m.expires_at > now())")
# BM25 as SQLite's FTS5 computes it (rumi/memory/store/recall_index.py): k1 = 1.2, b = 0.75,
# a word's frequency weighted per column — content 2, the earlier turn 1, the one before 0.5
# (weights A, B, C of the tsvector; D, key and summary, counts in the length only).
K1, B = 1.2, 0.75
# Each query word's stem in each language and its document frequency among the chat's active
# memories, with the chat's totals, read from the statistics the write triggers keep
# (migration 005): index lookups, the same at 100 memories as at 100,000.
_DF_TEMPLATE = """WITH w AS (SELECT w, c.config, (SELECT min(l) FROM unnest(tsvector_to_array(
                        to_tsvector(c.cfg, rumi.fold(w)))) AS l) AS lexeme
                   FROM unnest(%s::text[]) AS w
                   CROSS JOIN (VALUES ('es', 'spanish'::regconfig),
                                      ('en', 'english'::regconfig)) AS c(config, cfg))
SELECT w.w, w.config, w.lexeme, coalesce(s.df, 0) AS df, t.docs, t.tokens_es, t.tokens_en,
       {docs_by_config}
FROM w LEFT JOIN {totals} t ON t.owner_type = %s AND t.owner_id = %s
LEFT JOIN {stats} s ON s.owner_type = %s AND s.owner_id = %s
     AND s.config = w.config AND s.lexeme = w.lexeme"""
# One language's BM25 of memory c: Σ idf · f·(k1+1) / (f + k1·(1 − b + b·|c| / avgdl)) over
# the query's stems. f is read with `@@` on the stored tsvector (a binary search each, no
# unnesting: ranking 2,000 memories by unnesting them took ~0.2 ms a memory): 2 if the stem is
# in the content, +1 in the earlier turn, +0.5 in the one before — a repeat inside one column
# counts once, which is rare in a chat's short turns. |c| is the memory's distinct stems
# (`length`, read from the tsvector's header), the average from the chat's totals.
_BM25 = """(SELECT coalesce(sum(x.idf * x.f * {k1p1} / (x.f + {k1} * (1 - {b} + {b}
    * length(c.tsv_{cfg}) / %s::float8))), 0)
  FROM (SELECT t.idf, CASE WHEN c.tsv_{cfg} @@ t.qany THEN 2.0 * (c.tsv_{cfg} @@ t.qa)::int
                 + (c.tsv_{cfg} @@ t.qb)::int + 0.5 * (c.tsv_{cfg} @@ t.qc)::int ELSE 0 END AS f
        FROM t WHERE t.config = '{cfg}') x)"""


def _bm25(cfg: str) -> str:
    return _BM25.format(cfg=cfg, k1=K1, b=B, k1p1=K1 + 1)


_TERMS = """t AS MATERIALIZED (
        SELECT config, idf, (quote_literal(lexeme) || ':ABC')::tsquery AS qany,
               (quote_literal(lexeme) || ':A')::tsquery AS qa,
               (quote_literal(lexeme) || ':B')::tsquery AS qb,
               (quote_literal(lexeme) || ':C')::tsquery AS qc
        FROM unnest(%s::text[], %s::text[], %s::float8[]) AS u(config, lexeme, idf)),
     q AS (SELECT to_tsquery('spanish', rumi.fold(%s)) AS es,
                  to_tsquery('english', rumi.fold(%s)) AS en)"""
_MATCH = "(m.tsv_es @@ q.es OR m.tsv_en @@ q.en)"
_DETOASTED = "m.id, m.tsv_es || ''::tsvector AS tsv_es, m.tsv_en || ''::tsvector AS tsv_en"
# the better of the two languages' BM25, over the memories matching any kept word (`|| ''`
# detoasts each tsvector once, not once per `@@`)
_SCORED = f"""SELECT c.id, greatest({_bm25("es")}, {_bm25("en")}) AS rank
FROM c ORDER BY rank DESC, c.id LIMIT %s"""  # noqa: S608 - constants only
_RANK_TEMPLATE = f"""WITH {_TERMS},
     c AS MATERIALIZED (SELECT {{detoasted}} FROM {{rows}} CROSS JOIN q
                        WHERE {_LIVE} AND {{match}})
{_SCORED}"""  # noqa: S608 - constants only
# One word too common for the budget: only its newest `budget` matches are ranked (as SQLite's
# rowid floor does), so the cost stays bounded however common it is. The matches are found by
# the GIN indexes first, then the newest kept: walking the primary key backwards with the match
# as a filter read 85,000 rows of a 100,000-memory chat.
_RANK_NEWEST_TEMPLATE = f"""WITH {_TERMS},
     hits AS MATERIALIZED (SELECT m.id FROM {{rows}} CROSS JOIN q
                           WHERE {_LIVE} AND {{match}}),
     c AS MATERIALIZED (SELECT {{detoasted}} FROM {{rows}} WHERE m.id IN (
                            SELECT id FROM hits ORDER BY id DESC LIMIT %s))
{_SCORED}"""  # noqa: S608 - constants only


@dataclass(frozen=True)
class RankedRows:
    """What the BM25 ranking (`rank_bm25`) reads: the rows (`m` is always the memory), each
    candidate's id and two tsvectors as `tsv_es` / `tsv_en` (empty where a row has no words
    in that language), the match of the query's `q.es` / `q.en`, and the statistics tables
    the write triggers keep (`word_totals`-shaped, `word_stats`-shaped). The memories
    themselves (`MEMORIES`) and their translations (`postgres.translations`) rank alike."""

    rows: str
    detoasted: str
    match: str
    totals: str
    stats: str
    docs_by_config: str

    def sql(self) -> tuple[str, str, str]:
        """(document frequencies, ranking, ranking of one common word's newest matches)."""
        parts = {"rows": self.rows, "detoasted": self.detoasted, "match": self.match}
        return (_DF_TEMPLATE.format(totals=self.totals, stats=self.stats,
                                    docs_by_config=self.docs_by_config),
                _RANK_TEMPLATE.format(**parts), _RANK_NEWEST_TEMPLATE.format(**parts))


MEMORIES = RankedRows(rows="cto.memory m", detoasted=_DETOASTED, match=_MATCH,
                      totals="rumi.word_totals", stats="rumi.word_stats",
                      docs_by_config="t.docs AS docs_es, t.docs AS docs_en")


def idf(total: int, df: int) -> float:
    """FTS5's BM25 idf: log((N − n + ½) / (n + ½)), a word in half the chat or more ~0."""
    value = math.log((total - df + 0.5) / (df + 0.5))
    return value if value > 0 else 1e-6


def _stand_ins(words: list[str], alternatives: Mapping[str, Sequence[str]],
               df: dict[str, int]) -> dict[str, list[tuple[str, int]]]:
    """word → [(alternative, its document count)] for the query's words the chat never said
    whose alternatives (the same word in the other language, `recall.translate`) it did:
    those are searched instead, as SQLite's recall index does."""
    out = {w: [(a, df[a]) for a in alternatives.get(w, ()) if df.get(a)]
           for w in words if not df[w]}
    return {w: pairs for w, pairs in out.items() if pairs}


def tsquery(words: list[str], joiner: str = "|", labels: str = TEXT) -> str:
    """`to_tsquery` text of word tokens (letters and digits only: no operator can appear),
    each restricted to the weight `labels` it may match in."""
    return f" {joiner} ".join(f"{w}:{labels}" for w in words if w.isalnum())


async def rank_bm25(conn: Any, source: RankedRows, chat: str, query: QueryTerms, limit: int,
                    doc_budget: int = 2_000, *, rank_common_words: bool = True
                    ) -> list[tuple[int, float]]:
    """(id, BM25 > 0) of the chat's active, unexpired memories whose `source` rows (the
    memories, or their translations) match any word, best first. Words are kept rarest
    first while their summed document counts fit `doc_budget` (the rarest always); when
    even the rarest is in more memories than that, only its newest `doc_budget` matches
    are ranked, and with
    `rank_common_words=False` (the vector half runs too) nothing is when it is in half
    the chat or more — BM25 gives it no weight, and fusion would blow that noise up. The
    same rules as SQLite's recall index (rumi/memory/store/recall_index.py)."""
    words = list(dict.fromkeys(w for w in query.terms if w.isalnum()))[:_MAX_TERMS]
    if not words or limit <= 0:
        return []
    budget = max(1, int(doc_budget))
    alternatives = getattr(query, "alternatives", None) or {}
    probe = list(dict.fromkeys(a for w in words for a in alternatives.get(w, ())
                               if a.isalnum() and a not in words))
    df_sql, rank_sql, newest_sql = source.sql()
    cur = await conn.execute(df_sql, (words + probe, *owner(chat), *owner(chat)))
    stats = await cur.fetchall()
    if not stats or not stats[0]["docs"]:
        return []
    first = stats[0]
    total = int(first["docs"])
    # each language's average length over the rows in it (a memory is in both)
    avg = {cfg: max(1.0, int(first[f"tokens_{cfg}"]) / max(1, int(first[f"docs_{cfg}"])))
           for cfg in ("es", "en")}
    df: dict[str, int] = {}
    for r in stats:
        df[r["w"]] = max(df.get(r["w"], 0), int(r["df"]))
    stand_in = _stand_ins(words, alternatives, df)
    searched = {a: n for w in words for a, n in stand_in.get(w) or [(w, df[w])]}
    known = sorted((n, w) for w, n in searched.items() if n > 0)
    if not known:
        return KeywordHits(coverage=0.0)
    kept: list[tuple[int, str]] = []
    for n, word in known:   # rarest first, while their matches fit the budget
        if kept and sum(d for d, _ in kept) + n > budget:
            break
        kept.append((n, word))
    common = kept[0][0] > budget
    if common and not rank_common_words and 2 * kept[0][0] >= total:
        return KeywordHits(coverage=0.0)  # in half the chat or more: no BM25 weight
    chosen = {w for _, w in kept}
    coverage = query_coverage(
        [min(n for _, n in stand_in[w]) if w in stand_in else df[w] for w in words],
        [any(a in chosen for a, _ in stand_in.get(w) or [(w, 0)]) for w in words],
        total)
    terms = [(r["config"], r["lexeme"], idf(total, int(r["df"]))) for r in stats
             if r["w"] in chosen and r["lexeme"] and int(r["df"]) > 0]
    either = tsquery(sorted(chosen), "|", RECALL)
    window = (budget,) if common else ()
    cur = await conn.execute(
        newest_sql if common else rank_sql,
        ([c for c, _, _ in terms], [lex for _, lex, _ in terms],
         [v for _, _, v in terms], either, either, *owner(chat), *window,
         avg["es"], avg["en"], int(limit)))
    rows = await cur.fetchall()
    return KeywordHits([(int(r["id"]), float(r["rank"])) for r in rows
                        if float(r["rank"]) > 0], coverage=coverage)


class PgKeywords:
    """Ranked keyword candidates of one chat (the owner filter comes first)."""

    def __init__(self, pool: Any) -> None:
        self.pool = pool

    async def prepare(self, chat: str) -> bool:
        """Nothing to read ahead: PostgreSQL ranks in the server (the SQLite store's keyword
        arrays have no counterpart here)."""
        return False

    def tokenize_ahead(self, words: Sequence[str]) -> None:
        """Nothing to tokenize ahead: the server does it."""

    async def search(self, chat: str, query: QueryTerms, limit: int, doc_budget: int = 2_000,
                     *, rank_common_words: bool = True) -> list[tuple[int, float]]:
        """(id, BM25 > 0) of the chat's active, unexpired memories matching any word, best
        first (`rank_bm25`)."""
        async with self.pool.connection() as conn:
            return await rank_bm25(conn, MEMORIES, chat, query, limit, doc_budget,
                                   rank_common_words=rank_common_words)

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

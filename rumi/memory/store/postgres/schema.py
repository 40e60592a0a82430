"""Named, versioned migrations of the PostgreSQL store, recorded in `rumi.schema_migrations`.

Seed 001 (CTO schema v2.0) gives `cto.memory`, `cto.blocks`, `cto.algorithms` and the
functions `cto.calculate_memory_score`, `cto.search_memories`, `cto.get_active_blocks`; what
else Rumi keeps about memory (forgotten texts, the per-chat switch, the Rumis sharing the store)
lives in a `rumi` schema of the same database, so one `pg_dump` covers everything.

Where Rumi departs from the seed, and why:
- the vector dimension is the configured embedding model's (`{dim}`; the seed's 1536 is
  OpenAI's text-embedding-3-small), fixed when the schema is created;
- `owner_id` holds the chat's Telegram id (a private chat's id is the person's id, so two Rumis
  see the same person's memories) and `owner_type` is 'user' or 'group'; VARCHAR(64), not
  CHAR(64), because it is an id, not a hash;
- `hash` is unique among a chat's *active* memories only: superseded history may repeat a text;
- added columns: `key` (facts upsert on key + value), `source` (auto/explicit/import),
  `member_id` (the group member a group memory is about), `server_code` (the `store.name` of the
  Rumi that wrote the row), and two generated `tsvector`s (Spanish and English, accents folded)
  for the keyword half of recall;
- `embedding_model` is VARCHAR(200): multilingual model names are longer than 50 characters;
- recency counts from `created_at` (when it was said), not from the last access, exactly as
  Rumi's Python score does (see rumi/memory/recall/scoring.py for why); the active
  `cto.algorithms` row holds the weights, the per-type decay rates, the frequency saturation
  and whether recency and frequency are gated by relevance;
- frequency reads `access_days` (the days a memory was used, uses at least 20 hours apart),
  not `access_count_v2` (every access, still counted): a burst of questions in one
  conversation is not many days of use (rumi/memory/store/days.py).

A database that has applied a migration this Rumi does not know is refused in one line.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import Any

log = logging.getLogger(__name__)

LOCK_KEY = 0x52554D49   # "RUMI": one migrator at a time when two Rumis start together


class StoreSchemaError(RuntimeError):
    """The database's schema cannot be used by this Rumi (message is one line, no secret)."""


DEFAULT_ALGORITHM: dict[str, Any] = {
    "version": "2.0.0",
    "extraction": {"enabled": True, "async": True, "batch_size": 10},
    "scoring": {
        "weights": {"recency": 0.20, "importance": 0.40, "relevance": 0.30, "frequency": 0.10},
        "decay_rates": {"preference": 0.01, "decision": 0.05, "fact": 0.10, "entity": 0.05,
                        "temporal": 0.50, "episodic": 0.10, "summary": 0.05, "profile": 0.0},
        "frequency_saturation": 10,
        "gate_by_relevance": True,
    },
    "selection": {"strategy": "priority", "token_budget": 8000,
                  "priority_order": ["system", "core", "working", "retrieved"]},
    "compression": {"strategy": "progressive", "keep_first": 3, "keep_last": 10},
}

_FOLD = ("translate(lower({x}), 'áàâäãéèêëíìîïóòôöõúùûüñç', "
         "'aaaaaeeeeiiiiooooouuuunc')")


def _m001(dim: int) -> list[str]:
    text = "coalesce(key, '') || ' ' || content || ' ' || coalesce(summary, '')"
    return [
        "CREATE EXTENSION IF NOT EXISTS vector",
        "CREATE SCHEMA IF NOT EXISTS cto",
        f"""CREATE FUNCTION rumi.fold(t text) RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE
            AS $$ SELECT {_FOLD.format(x='t')} $$""",
        f"""CREATE TABLE cto.blocks (
            id          BIGSERIAL PRIMARY KEY,
            hash        CHAR(64) NOT NULL,
            code        VARCHAR(50) NOT NULL,
            name        VARCHAR(200) NOT NULL DEFAULT '',
            session_hash CHAR(64),
            owner_id    VARCHAR(64),
            block_type  VARCHAR(50),
            category    VARCHAR(50) NOT NULL DEFAULT 'knowledge',
            content     TEXT NOT NULL,
            embedding   vector({dim}),
            priority    INT NOT NULL DEFAULT 0,
            scope       VARCHAR(20) NOT NULL DEFAULT 'global'
                        CHECK (scope IN ('global', 'server', 'agent', 'session')),
            server_code VARCHAR(20),
            agent_code  VARCHAR(50),
            token_count INT NOT NULL DEFAULT 0,
            status      VARCHAR(20) NOT NULL DEFAULT 'active'
                        CHECK (status IN ('active', 'inactive', 'deprecated')),
            metadata    JSONB NOT NULL DEFAULT '{{}}',
            created_at  TIMESTAMPTZ NOT NULL DEFAULT now(),
            updated_at  TIMESTAMPTZ NOT NULL DEFAULT now(),
            UNIQUE (hash)
        )""",
        "CREATE INDEX ix_blocks_scope ON cto.blocks (status, scope, server_code, agent_code)",
        f"""CREATE TABLE cto.memory (
            id              BIGSERIAL PRIMARY KEY,
            hash            CHAR(64) NOT NULL,
            session_hash    CHAR(64),
            block_hash      CHAR(64),
            owner_id        VARCHAR(64) NOT NULL,
            owner_type      VARCHAR(20) NOT NULL
                            CHECK (owner_type IN ('user', 'group', 'agent', 'system')),
            type            VARCHAR(20) NOT NULL,
            content         TEXT NOT NULL,
            summary         VARCHAR(500),
            importance      FLOAT8 NOT NULL DEFAULT 0.5
                            CHECK (importance >= 0 AND importance <= 1),
            confidence      FLOAT8 NOT NULL DEFAULT 0.8
                            CHECK (confidence >= 0 AND confidence <= 1),
            embedding       vector({dim}),
            embedding_model VARCHAR(200),
            access_count_v2 INT NOT NULL DEFAULT 0,
            last_access     TIMESTAMPTZ,
            source_hash     CHAR(64),
            expires_at      TIMESTAMPTZ,
            status          VARCHAR(20) NOT NULL DEFAULT 'active'
                            CHECK (status IN ('active', 'superseded', 'expired', 'deleted')),
            superseded_by   BIGINT REFERENCES cto.memory(id) ON DELETE SET NULL,
            related_to      BIGINT[] NOT NULL DEFAULT '{{}}',
            metadata        JSONB NOT NULL DEFAULT '{{}}',
            created_at      TIMESTAMPTZ NOT NULL DEFAULT now(),
            updated_at      TIMESTAMPTZ NOT NULL DEFAULT now(),
            key             TEXT,
            source          VARCHAR(20) NOT NULL DEFAULT 'auto',
            member_id       VARCHAR(64),
            server_code     VARCHAR(20),
            tsv_es tsvector GENERATED ALWAYS AS
                (to_tsvector('spanish'::regconfig, rumi.fold({text}))) STORED,
            tsv_en tsvector GENERATED ALWAYS AS
                (to_tsvector('english'::regconfig, rumi.fold({text}))) STORED
        )""",
        """CREATE UNIQUE INDEX ux_memory_active_hash ON cto.memory (owner_type, owner_id, hash)
           WHERE status = 'active'""",
        "CREATE INDEX ix_memory_owner ON cto.memory (owner_type, owner_id, status, type)",
        "CREATE INDEX ix_memory_owner_time ON cto.memory (owner_type, owner_id, created_at)",
        "CREATE INDEX ix_memory_key ON cto.memory (owner_type, owner_id, key) "
        "WHERE key IS NOT NULL",
        "CREATE INDEX ix_memory_expiry ON cto.memory (expires_at) WHERE status = 'active'",
        "CREATE INDEX ix_memory_superseded_by ON cto.memory (superseded_by) "
        "WHERE superseded_by IS NOT NULL",
        "CREATE INDEX ix_memory_embedding ON cto.memory USING hnsw "
        "(embedding vector_cosine_ops)",
        "CREATE INDEX ix_memory_tsv_es ON cto.memory USING gin (tsv_es)",
        "CREATE INDEX ix_memory_tsv_en ON cto.memory USING gin (tsv_en)",
        """CREATE TABLE cto.algorithms (
            id            SERIAL PRIMARY KEY,
            code          VARCHAR(50) NOT NULL,
            name          VARCHAR(100) NOT NULL DEFAULT '',
            version       VARCHAR(20) NOT NULL,
            config        JSONB NOT NULL,
            enabled       BOOLEAN NOT NULL DEFAULT true,
            status        VARCHAR(20) NOT NULL DEFAULT 'draft'
                          CHECK (status IN ('draft', 'active', 'experiment', 'deprecated')),
            parent_id     INT REFERENCES cto.algorithms(id),
            metrics       JSONB NOT NULL DEFAULT '{}',
            activated_at  TIMESTAMPTZ,
            deprecated_at TIMESTAMPTZ,
            created_at    TIMESTAMPTZ NOT NULL DEFAULT now(),
            updated_at    TIMESTAMPTZ NOT NULL DEFAULT now(),
            UNIQUE (code, version)
        )""",
        # exactly one active row
        "CREATE UNIQUE INDEX ux_algorithms_one_active ON cto.algorithms ((true)) "
        "WHERE status = 'active'",
        """CREATE TABLE rumi.forgotten_hashes (
            owner_type   VARCHAR(20) NOT NULL,
            owner_id     VARCHAR(64) NOT NULL,
            hash         CHAR(64) NOT NULL,
            forgotten_at TIMESTAMPTZ NOT NULL DEFAULT now(),
            PRIMARY KEY (owner_type, owner_id, hash)
        )""",
        """CREATE TABLE rumi.memory_switch (
            chat_id    VARCHAR(64) PRIMARY KEY,
            enabled    BOOLEAN NOT NULL,
            changed_by VARCHAR(64),
            changed_at TIMESTAMPTZ NOT NULL DEFAULT now()
        )""",
        """CREATE TABLE rumi.stores (
            name       VARCHAR(20) PRIMARY KEY,
            first_seen TIMESTAMPTZ NOT NULL DEFAULT now(),
            last_seen  TIMESTAMPTZ NOT NULL DEFAULT now()
        )""",
        """CREATE TABLE rumi.settings (
            name  TEXT PRIMARY KEY,
            value TEXT NOT NULL
        )""",
        # an int, formatted: DDL migrations are plain statements without parameters
        f"INSERT INTO rumi.settings(name, value) VALUES ('embedding_dim', '{int(dim)}')",  # noqa: S608
    ]


_FUNCTIONS = [
    # seed 001: score = 0.20·recency + 0.40·importance + 0.30·relevance + 0.10·frequency, the
    # weights and decay rates read from the active algorithm (Rumi's Python score, same rows)
    """CREATE FUNCTION cto.calculate_memory_score(
            p_memory_id BIGINT, p_query_embedding vector, p_current_time TIMESTAMPTZ)
        RETURNS FLOAT8 LANGUAGE sql STABLE AS $$
        WITH cfg AS (
            SELECT config -> 'scoring' AS s FROM cto.algorithms WHERE status = 'active'
            UNION ALL SELECT NULL WHERE NOT EXISTS
                (SELECT 1 FROM cto.algorithms WHERE status = 'active')
            LIMIT 1),
        m AS (
            SELECT mem.*,
                   greatest(0.0, least(1.0, CASE WHEN mem.embedding IS NULL
                       OR p_query_embedding IS NULL THEN 0.0
                       ELSE 1.0 - (mem.embedding <=> p_query_embedding) END)) AS rel
            FROM cto.memory mem WHERE mem.id = p_memory_id),
        parts AS (
            SELECT m.rel,
                exp(-greatest(0.0, coalesce((cfg.s -> 'decay_rates' ->> m.type)::float8, 0.10))
                    * greatest(0.0, extract(epoch FROM p_current_time - m.created_at)
                               / 86400.0)) AS rec,
                greatest(0.0, least(1.0, m.importance)) AS imp,
                CASE WHEN m.access_count_v2 <= 0 THEN 0.0
                     ELSE least(1.0, ln(1 + m.access_count_v2) / ln(1 + greatest(1,
                          coalesce((cfg.s ->> 'frequency_saturation')::int, 10)))) END AS freq,
                coalesce((cfg.s -> 'weights' ->> 'recency')::float8, 0.20) AS w_rec,
                coalesce((cfg.s -> 'weights' ->> 'importance')::float8, 0.40) AS w_imp,
                coalesce((cfg.s -> 'weights' ->> 'relevance')::float8, 0.30) AS w_rel,
                coalesce((cfg.s -> 'weights' ->> 'frequency')::float8, 0.10) AS w_freq,
                coalesce((cfg.s ->> 'gate_by_relevance')::boolean, true) AS gated
            FROM m CROSS JOIN cfg)
        SELECT w_imp * imp + w_rel * rel
               + (CASE WHEN gated THEN rel ELSE 1.0 END) * (w_rec * rec + w_freq * freq)
        FROM parts
    $$""",
    # seed 001: the owner's active, unexpired memories by cosine similarity. pgvector's
    # iterative index scan keeps an HNSW scan going until `p_limit` rows pass the owner filter.
    """CREATE FUNCTION cto.search_memories(
            p_query_embedding vector, p_owner_id VARCHAR, p_limit INT DEFAULT 20,
            p_min_similarity FLOAT8 DEFAULT 0.3)
        RETURNS TABLE (id BIGINT, content TEXT, type VARCHAR, importance FLOAT8,
                       similarity FLOAT8, score FLOAT8)
        LANGUAGE sql STABLE
        SET hnsw.iterative_scan = 'relaxed_order'
        AS $$
        WITH near AS MATERIALIZED (
            SELECT m.id, m.content, m.type, m.importance,
                   1.0 - (m.embedding <=> p_query_embedding) AS similarity
            FROM cto.memory m
            WHERE m.owner_id = p_owner_id AND m.status = 'active'
              AND (m.expires_at IS NULL OR m.expires_at > now())
              AND m.embedding IS NOT NULL
            ORDER BY m.embedding <=> p_query_embedding
            LIMIT greatest(p_limit, 0) * 4)
        SELECT near.id, near.content, near.type, near.importance, near.similarity,
               cto.calculate_memory_score(near.id, p_query_embedding, now())
        FROM near WHERE near.similarity >= p_min_similarity
        ORDER BY near.similarity DESC, near.id LIMIT greatest(p_limit, 0)
    $$""",
    # seed 001: active blocks of a scope; 'server' filters on server_code, 'agent' on agent_code
    """CREATE FUNCTION cto.get_active_blocks(
            p_scope VARCHAR, p_server_code VARCHAR DEFAULT NULL,
            p_agent_code VARCHAR DEFAULT NULL)
        RETURNS SETOF cto.blocks LANGUAGE sql STABLE AS $$
        SELECT * FROM cto.blocks b
        WHERE b.status = 'active' AND b.scope = p_scope
          AND (p_scope <> 'server' OR b.server_code = p_server_code)
          AND (p_scope <> 'agent' OR b.agent_code = p_agent_code)
        ORDER BY b.priority DESC, b.id
    $$""",
]


def _tsv(config: str) -> str:
    """A memory's words for one language: content (A), the two earlier turns of the same
    conversation (B, C) and key + summary (D); recall matches A-C, text search A and D."""
    def part(text: str, weight: str) -> str:
        return f"setweight(to_tsvector('{config}'::regconfig, rumi.fold({text})), '{weight}')"
    return " || ".join([part("content", "A"), part("coalesce(ctx1, '')", "B"),
                        part("coalesce(ctx2, '')", "C"),
                        part("coalesce(key, '') || ' ' || coalesce(summary, '')", "D")])


# What was said just before a memory (up to two earlier active memories of the same owner and
# type, within 3 hours), captured at insert from what already exists, as the SQLite recall
# index does (rumi/memory/store/recall_index.py): a reply rarely repeats the question's words.
_CONTEXT = [
    "ALTER TABLE cto.memory ADD COLUMN ctx1 TEXT, ADD COLUMN ctx2 TEXT",
    """CREATE FUNCTION rumi.memory_context() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        IF NEW.ctx1 IS NULL AND NEW.status = 'active' THEN
            SELECT p.content INTO NEW.ctx1 FROM cto.memory p
            WHERE p.owner_type = NEW.owner_type AND p.owner_id = NEW.owner_id
              AND p.type = NEW.type AND p.status = 'active' AND p.id < NEW.id
              AND abs(extract(epoch FROM NEW.created_at - p.created_at)) <= 10800
            ORDER BY p.id DESC LIMIT 1;
            SELECT p.content INTO NEW.ctx2 FROM cto.memory p
            WHERE p.owner_type = NEW.owner_type AND p.owner_id = NEW.owner_id
              AND p.type = NEW.type AND p.status = 'active' AND p.id < NEW.id
              AND abs(extract(epoch FROM NEW.created_at - p.created_at)) <= 10800
            ORDER BY p.id DESC LIMIT 1 OFFSET 1;
        END IF;
        RETURN NEW;
    END $$""",
    "CREATE TRIGGER memory_context BEFORE INSERT ON cto.memory FOR EACH ROW "
    "EXECUTE FUNCTION rumi.memory_context()",
    "ALTER TABLE cto.memory DROP COLUMN tsv_es, DROP COLUMN tsv_en",
    f"ALTER TABLE cto.memory ADD COLUMN tsv_es tsvector GENERATED ALWAYS AS ({_tsv('spanish')}) "
    "STORED",
    f"ALTER TABLE cto.memory ADD COLUMN tsv_en tsvector GENERATED ALWAYS AS ({_tsv('english')}) "
    "STORED",
    "CREATE INDEX ix_memory_tsv_es ON cto.memory USING gin (tsv_es)",
    "CREATE INDEX ix_memory_tsv_en ON cto.memory USING gin (tsv_en)",
]


# The tape index (`tape_rows.PgTapeRows`): each Rumi's own tapes, by its `store.name`, since
# every Rumi keeps its own tape files of a chat; the words are folded ('simple' config, no
# stemming: every word of a search as a word prefix, as SQLite's FTS5 index does).
_TAPE_INDEX = [
    """CREATE TABLE rumi.tape_sources (
        id            BIGSERIAL PRIMARY KEY,
        server_code   VARCHAR(20) NOT NULL,
        chat_id       VARCHAR(64) NOT NULL,
        tag           TEXT NOT NULL,
        indexed_bytes BIGINT NOT NULL DEFAULT 0,
        head          TEXT NOT NULL DEFAULT '',
        messages      INT NOT NULL DEFAULT 0,
        UNIQUE (server_code, chat_id, tag)
    )""",
    """CREATE TABLE rumi.tape_messages (
        id      BIGSERIAL PRIMARY KEY,
        source  BIGINT NOT NULL REFERENCES rumi.tape_sources(id) ON DELETE CASCADE,
        msg_id  BIGINT NOT NULL,
        at      TEXT NOT NULL,
        content TEXT NOT NULL,
        words   tsvector GENERATED ALWAYS AS
                (to_tsvector('simple'::regconfig, rumi.fold(content))) STORED
    )""",
    "CREATE INDEX ix_tape_messages_words ON rumi.tape_messages USING gin (words)",
    "CREATE INDEX ix_tape_messages_source_at ON rumi.tape_messages (source, at)",
]


# Rumi's context blocks (`postgres/blocks.py`) in seed 001's `cto.blocks`: a session block
# keeps its session's id (the seed's `session_hash` is a hash: it cannot be shown back).
_BLOCKS = [
    "ALTER TABLE cto.blocks ADD COLUMN session_id VARCHAR(64)",
    "CREATE INDEX ix_blocks_owner ON cto.blocks (server_code, agent_code)",
]


# The reminders (`postgres/reminders.py`): each belongs to one chat of one bot, so the row keeps
# the bot's `store.name`; a chat's time zone is the chat's (the person's), for every Rumi.
_REMINDERS = [
    """CREATE TABLE rumi.reminders (
        id          BIGSERIAL PRIMARY KEY,
        server_code VARCHAR(20) NOT NULL,
        chat_id     VARCHAR(64) NOT NULL,
        text        TEXT NOT NULL,
        is_task     BOOLEAN NOT NULL DEFAULT false,
        recurrence  TEXT,
        timezone    TEXT NOT NULL,
        due_at      TIMESTAMPTZ NOT NULL,
        state       VARCHAR(20) NOT NULL DEFAULT 'pending'
                    CHECK (state IN ('pending', 'firing', 'done', 'cancelled')),
        fired_count INT NOT NULL DEFAULT 0,
        interrupted BOOLEAN NOT NULL DEFAULT false,
        created_at  TIMESTAMPTZ NOT NULL,
        updated_at  TIMESTAMPTZ NOT NULL,
        set_by      VARCHAR(64)
    )""",
    "CREATE INDEX ix_reminders_live ON rumi.reminders (server_code, state, due_at)",
    "CREATE INDEX ix_reminders_chat ON rumi.reminders (server_code, chat_id, state)",
    """CREATE TABLE rumi.chat_timezones (
        chat_id  VARCHAR(64) PRIMARY KEY,
        timezone TEXT NOT NULL
    )""",
]


# Per-chat word statistics for the keyword half's BM25 (rumi/memory/store/postgres/search.py):
# each recall used to count every query word's documents and the chat's total over the chat's
# rows, which grew with the chat (1.6 s at 20k memories). Statement-level triggers with
# transition tables keep them in the writing transaction itself — a crash or a rollback leaves
# rows and statistics together, never one without the other. A memory counts while its status
# is 'active' (as SQLite's per-chat FTS5 table holds it); a word counts in the weights recall
# matches (A-C: content and the two earlier turns); `tokens` is the memories' summed length
# (distinct stems, every weight), for BM25's length normalisation. `PgUpkeep.recount_words`
# rebuilds a chat's rows from `cto.memory` (a repair, and the check the tests hold them to).
_CHANGES = {
    "insert": "SELECT owner_type, owner_id, 1 AS sign, tsv_es, tsv_en FROM new_rows "
              "WHERE status = 'active'",
    "delete": "SELECT owner_type, owner_id, -1 AS sign, tsv_es, tsv_en FROM old_rows "
              "WHERE status = 'active'",
    # only rows whose counted state changed (an access count or an expiry date changes none)
    "update": "SELECT o.owner_type, o.owner_id, -1 AS sign, o.tsv_es, o.tsv_en "
              "FROM old_rows o JOIN new_rows n ON n.id = o.id WHERE o.status = 'active' "
              "AND (n.status <> 'active' OR n.tsv_es <> o.tsv_es OR n.tsv_en <> o.tsv_en "
              "OR n.owner_id <> o.owner_id OR n.owner_type <> o.owner_type) "
              "UNION ALL SELECT n.owner_type, n.owner_id, 1, n.tsv_es, n.tsv_en "
              "FROM old_rows o JOIN new_rows n ON n.id = o.id WHERE n.status = 'active' "
              "AND (o.status <> 'active' OR n.tsv_es <> o.tsv_es OR n.tsv_en <> o.tsv_en "
              "OR n.owner_id <> o.owner_id OR n.owner_type <> o.owner_type)",
}
RECALL_WEIGHTS = "'{A,B,C}'::text[]"
# a memory's length for BM25: its distinct stems in every weight (`length`, read from the
# tsvector's header; the keyword half normalises by the same measure)
TOKENS = "length({tsv})"


def _word_rows(changes: str) -> str:
    """(owner, config, lexeme, Σ sign) of `changes`: one row per memory and recall word."""
    per_config = [
        f"SELECT c.owner_type, c.owner_id, '{cfg}'::char(2) AS config, u.lexeme, c.sign "  # noqa: S608
        f"FROM ({changes}) c CROSS JOIN unnest(c.tsv_{cfg}) u "
        f"WHERE u.weights && {RECALL_WEIGHTS}" for cfg in ("es", "en")]
    return " UNION ALL ".join(per_config)


def _stats_function(event: str) -> str:
    changes = _CHANGES[event]
    es, en = TOKENS.format(tsv="c.tsv_es"), TOKENS.format(tsv="c.tsv_en")
    # the chat's totals row first: it is the lock that orders two writers of one chat, so
    # their word rows (upserted in key order) never deadlock
    return f"""CREATE FUNCTION rumi.word_stats_{event}() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        INSERT INTO rumi.word_totals AS t (owner_type, owner_id, docs, tokens_es, tokens_en)
        SELECT c.owner_type, c.owner_id, sum(c.sign), sum(c.sign * {es}), sum(c.sign * {en})
        FROM ({changes}) c GROUP BY 1, 2 ORDER BY 1, 2
        ON CONFLICT (owner_type, owner_id) DO UPDATE SET docs = t.docs + excluded.docs,
            tokens_es = t.tokens_es + excluded.tokens_es,
            tokens_en = t.tokens_en + excluded.tokens_en;
        INSERT INTO rumi.word_stats AS s (owner_type, owner_id, config, lexeme, df)
        SELECT w.owner_type, w.owner_id, w.config, w.lexeme, sum(w.sign)
        FROM ({_word_rows(changes)}) w GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4
        ON CONFLICT (owner_type, owner_id, config, lexeme) DO UPDATE SET df = s.df + excluded.df;
        RETURN NULL;
    END $$"""  # noqa: S608 - constants only


def recount_sql() -> list[str]:
    """A chat's statistics recomputed from its rows (parameters: owner_type, owner_id, each
    statement); run in one transaction after locking the chat's totals row."""
    live = "SELECT owner_type, owner_id, 1 AS sign, tsv_es, tsv_en FROM cto.memory " \
           "WHERE owner_type = %s AND owner_id = %s AND status = 'active'"
    es, en = TOKENS.format(tsv="c.tsv_es"), TOKENS.format(tsv="c.tsv_en")
    return [
        "DELETE FROM rumi.word_stats WHERE owner_type = %s AND owner_id = %s",
        f"INSERT INTO rumi.word_stats (owner_type, owner_id, config, lexeme, df) "  # noqa: S608
        f"SELECT w.owner_type, w.owner_id, w.config, w.lexeme, sum(w.sign) "
        f"FROM ({_word_rows(live)}) w GROUP BY 1, 2, 3, 4",
        f"UPDATE rumi.word_totals t SET docs = c.docs, tokens_es = c.es, tokens_en = c.en "  # noqa: S608
        f"FROM (SELECT count(*) AS docs, coalesce(sum({es}), 0) AS es, "
        f"coalesce(sum({en}), 0) AS en FROM ({live}) c) c "
        "WHERE t.owner_type = %s AND t.owner_id = %s",
    ]


_WORD_STATISTICS = [
    # what the conversation-context trigger looks up on every insert (the two newest active
    # memories of the owner and type): without it each insert sorted the chat's rows
    "CREATE INDEX ix_memory_context ON cto.memory (owner_type, owner_id, type, id) "
    "WHERE status = 'active'",
    """CREATE TABLE rumi.word_totals (
        owner_type VARCHAR(20) NOT NULL,
        owner_id   VARCHAR(64) NOT NULL,
        docs       BIGINT NOT NULL DEFAULT 0,
        tokens_es  BIGINT NOT NULL DEFAULT 0,
        tokens_en  BIGINT NOT NULL DEFAULT 0,
        PRIMARY KEY (owner_type, owner_id)
    )""",
    """CREATE TABLE rumi.word_stats (
        owner_type VARCHAR(20) NOT NULL,
        owner_id   VARCHAR(64) NOT NULL,
        config     CHAR(2) NOT NULL CHECK (config IN ('es', 'en')),
        lexeme     TEXT NOT NULL,
        df         BIGINT NOT NULL,
        PRIMARY KEY (owner_type, owner_id, config, lexeme)
    )""",
    *(_stats_function(event) for event in ("insert", "update", "delete")),
    "CREATE TRIGGER word_stats_insert AFTER INSERT ON cto.memory REFERENCING NEW TABLE AS "
    "new_rows FOR EACH STATEMENT EXECUTE FUNCTION rumi.word_stats_insert()",
    "CREATE TRIGGER word_stats_update AFTER UPDATE ON cto.memory REFERENCING OLD TABLE AS "
    "old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION rumi.word_stats_update()",
    "CREATE TRIGGER word_stats_delete AFTER DELETE ON cto.memory REFERENCING OLD TABLE AS "
    "old_rows FOR EACH STATEMENT EXECUTE FUNCTION rumi.word_stats_delete()",
    # what an existing store already holds
    "INSERT INTO rumi.word_totals (owner_type, owner_id) "
    "SELECT DISTINCT owner_type, owner_id FROM cto.memory",
    "WITH a AS (SELECT owner_type, owner_id, tsv_es, tsv_en FROM cto.memory "  # noqa: S608
    "WHERE status = 'active') UPDATE rumi.word_totals t SET docs = x.docs, "
    f"tokens_es = x.es, tokens_en = x.en FROM (SELECT c.owner_type, c.owner_id, "
    f"count(*) AS docs, sum({TOKENS.format(tsv='c.tsv_es')}) AS es, "
    f"sum({TOKENS.format(tsv='c.tsv_en')}) AS en FROM a c GROUP BY 1, 2) x "
    "WHERE t.owner_type = x.owner_type AND t.owner_id = x.owner_id",
    "INSERT INTO rumi.word_stats (owner_type, owner_id, config, lexeme, df) "  # noqa: S608
    "SELECT w.owner_type, w.owner_id, w.config, w.lexeme, sum(w.sign) FROM ("
    + _word_rows("SELECT owner_type, owner_id, 1 AS sign, tsv_es, tsv_en FROM cto.memory "
                 "WHERE status = 'active'") + ") w GROUP BY 1, 2, 3, 4",
]


# The days a memory was used (rumi/memory/store/days.py): the score's frequency reads them
# instead of every access (`access_count_v2` keeps counting those, as seed 001 has it). A
# memory used before this migration counts one day (its last access as the day counted); the
# seed's score function is replaced by the same one reading `access_days`, and scaling the
# relevance of a memory that ends asking by the row's `question_weight` (0.8 when it has none),
# as Rumi's Python score does (rumi/memory/recall/scoring.py).
_ACCESS_DAYS = [
    "ALTER TABLE cto.memory ADD COLUMN access_days INT NOT NULL DEFAULT 0, "
    "ADD COLUMN access_day_at TIMESTAMPTZ",
    "UPDATE cto.memory SET access_days = 1, access_day_at = last_access "
    "WHERE access_count_v2 > 0",
    _FUNCTIONS[0].replace("CREATE FUNCTION", "CREATE OR REPLACE FUNCTION").replace(
        "m.access_count_v2", "m.access_days").replace(
        "ELSE 1.0 - (mem.embedding <=> p_query_embedding) END)) AS rel",
        "ELSE 1.0 - (mem.embedding <=> p_query_embedding) END)) AS rel, "
        "mem.content ~ '[?？]\\s*$' AS asks").replace(
        "            SELECT m.rel,",
        "            SELECT m.rel * CASE WHEN m.asks THEN greatest(0.0, least(1.0, coalesce("
        "(cfg.s ->> 'question_weight')::float8, 0.8))) ELSE 1.0 END AS rel,"),
]


# Issue 35's Step 8 measured the frequency saturation best at 20 days of use with the days
# counted (docs/benchmarks.md): the seeded row moves from 10 to 20, as the config default did.
# A row an operator changed (another value, another version) is theirs and is left alone.
_SATURATION_20 = [
    "UPDATE cto.algorithms SET config = jsonb_set(config, '{scoring,frequency_saturation}', "
    "'20') WHERE code = 'memory_scoring' AND version = '2.0.0' "
    "AND config #> '{scoring,frequency_saturation}' = '10'::jsonb",
]


# Each memory's machine translation into the chat's other language (`translations.PgTranslations`;
# SQLite's is migration 018 with rumi/memory/store/translations.py, and the same rules hold):
# derived data, never the only copy of anything. `tsv` is the translation's words in its own
# language's configuration (weight A) with the translations of the two earlier memories the
# conversation context rule gives it (`ctx1_id`, `ctx2_id`: B and C, as migration 004 weights
# a memory's own context), kept by the triggers: filled when a neighbour's translation comes,
# blanked when it goes. Nothing a person removes survives here: the foreign key takes the row
# with its memory (forget, redaction, a chat's deletion), and `translation_stale` in the same
# transaction as an edit of the text or the memory leaving 'active' (superseded, expired).
_TRANSLATION_WORDS = """CREATE FUNCTION rumi.translation_words(lang text, body text, weight "char")
    RETURNS tsvector LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT setweight(CASE lang
        WHEN 'es' THEN to_tsvector('spanish'::regconfig, rumi.fold(body))
        WHEN 'en' THEN to_tsvector('english'::regconfig, rumi.fold(body))
        ELSE ''::tsvector END, weight) $$"""


# the rows whose counted words a statement changed, signed (migration 005's `_CHANGES`, for
# translations: a context filled or blanked is an update)
_TRANSLATION_CHANGES = {
    "insert": "SELECT owner_type, owner_id, 1 AS sign, lang, tsv FROM new_rows",
    "delete": "SELECT owner_type, owner_id, -1 AS sign, lang, tsv FROM old_rows",
    "update": "SELECT o.owner_type, o.owner_id, -1 AS sign, o.lang, o.tsv FROM old_rows o "
              "JOIN new_rows n ON n.memory_id = o.memory_id "
              "WHERE n.tsv <> o.tsv OR n.lang <> o.lang "
              "UNION ALL SELECT n.owner_type, n.owner_id, 1, n.lang, n.tsv FROM old_rows o "
              "JOIN new_rows n ON n.memory_id = o.memory_id "
              "WHERE n.tsv <> o.tsv OR n.lang <> o.lang",
}


def _translation_stats_function(event: str) -> str:
    """Migration 005's statistics for the translations: the chat's totals row first (the
    lock ordering two writers), then its words in key order; a row counts in its language's
    documents and length, every row (an empty one too) in the chat's documents."""
    changes = _TRANSLATION_CHANGES[event]
    length = "CASE WHEN c.lang = '{cfg}' THEN c.sign * length(c.tsv) ELSE 0 END"
    docs = "CASE WHEN c.lang = '{cfg}' THEN c.sign ELSE 0 END"
    return f"""CREATE FUNCTION rumi.translation_stats_{event}() RETURNS trigger
    LANGUAGE plpgsql AS $$
    BEGIN
        INSERT INTO rumi.translation_word_totals AS t
            (owner_type, owner_id, docs, docs_es, docs_en, tokens_es, tokens_en)
        SELECT c.owner_type, c.owner_id, sum(c.sign), sum({docs.format(cfg='es')}),
               sum({docs.format(cfg='en')}), sum({length.format(cfg='es')}),
               sum({length.format(cfg='en')})
        FROM ({changes}) c GROUP BY 1, 2 ORDER BY 1, 2
        ON CONFLICT (owner_type, owner_id) DO UPDATE SET docs = t.docs + excluded.docs,
            docs_es = t.docs_es + excluded.docs_es, docs_en = t.docs_en + excluded.docs_en,
            tokens_es = t.tokens_es + excluded.tokens_es,
            tokens_en = t.tokens_en + excluded.tokens_en;
        INSERT INTO rumi.translation_word_stats AS s (owner_type, owner_id, config, lexeme, df)
        SELECT c.owner_type, c.owner_id, c.lang::char(2), u.lexeme, sum(c.sign)
        FROM ({changes}) c CROSS JOIN unnest(c.tsv) u WHERE c.lang IN ('es', 'en')
        GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4
        ON CONFLICT (owner_type, owner_id, config, lexeme) DO UPDATE SET df = s.df + excluded.df;
        RETURN NULL;
    END $$"""  # noqa: S608 - constants only


_TRANSLATIONS = [
    """CREATE TABLE rumi.memory_translations (
        memory_id     BIGINT PRIMARY KEY REFERENCES cto.memory(id) ON DELETE CASCADE,
        owner_type    VARCHAR(20) NOT NULL,
        owner_id      VARCHAR(64) NOT NULL,
        hash          CHAR(64) NOT NULL,
        lang          VARCHAR(2) NOT NULL CHECK (lang IN ('es', 'en', '')),
        text          TEXT NOT NULL,
        ctx1_id       BIGINT,
        ctx2_id       BIGINT,
        tsv           tsvector NOT NULL DEFAULT ''::tsvector,
        translated_at TIMESTAMPTZ NOT NULL DEFAULT now()
    )""",
    "CREATE INDEX ix_translations_owner ON rumi.memory_translations "
    "(owner_type, owner_id, memory_id)",
    "CREATE INDEX ix_translations_ctx1 ON rumi.memory_translations (ctx1_id) "
    "WHERE ctx1_id IS NOT NULL",
    "CREATE INDEX ix_translations_ctx2 ON rumi.memory_translations (ctx2_id) "
    "WHERE ctx2_id IS NOT NULL",
    "CREATE INDEX ix_translations_tsv ON rumi.memory_translations USING gin (tsv)",
    _TRANSLATION_WORDS,
    # a translation's words with its two context translations' (in its own language)
    """CREATE FUNCTION rumi.translation_tsv(lang text, body text, ctx1 bigint, ctx2 bigint)
        RETURNS tsvector LANGUAGE sql STABLE AS $$
        SELECT rumi.translation_words(lang, body, 'A')
            || rumi.translation_words(lang, coalesce((SELECT t.text
                   FROM rumi.memory_translations t WHERE t.memory_id = ctx1), ''), 'B')
            || rumi.translation_words(lang, coalesce((SELECT t.text
                   FROM rumi.memory_translations t WHERE t.memory_id = ctx2), ''), 'C') $$""",
    """CREATE FUNCTION rumi.translation_fill() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        NEW.tsv := rumi.translation_tsv(NEW.lang, NEW.text, NEW.ctx1_id, NEW.ctx2_id);
        RETURN NEW;
    END $$""",
    "CREATE TRIGGER translation_fill BEFORE INSERT OR UPDATE OF lang, text, ctx1_id, ctx2_id "
    "ON rumi.memory_translations FOR EACH ROW EXECUTE FUNCTION rumi.translation_fill()",
    # a translation that comes or goes is filled into, or blanked from, the rows it is the
    # context of (its words must not outlive it there)
    """CREATE FUNCTION rumi.translation_context() RETURNS trigger LANGUAGE plpgsql AS $$
    DECLARE
        changed BIGINT := CASE WHEN TG_OP = 'DELETE' THEN OLD.memory_id ELSE NEW.memory_id END;
    BEGIN
        UPDATE rumi.memory_translations t
        SET tsv = rumi.translation_tsv(t.lang, t.text, t.ctx1_id, t.ctx2_id)
        WHERE t.ctx1_id = changed OR t.ctx2_id = changed;
        RETURN NULL;
    END $$""",
    "CREATE TRIGGER translation_context AFTER INSERT OR DELETE ON rumi.memory_translations "
    "FOR EACH ROW EXECUTE FUNCTION rumi.translation_context()",
    # SQLite's `memory_translations_stale`: the translation goes with the text it was made
    # from, or when its memory leaves 'active' or moves
    """CREATE FUNCTION rumi.translation_stale() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        DELETE FROM rumi.memory_translations WHERE memory_id = OLD.id;
        RETURN NULL;
    END $$""",
    "CREATE TRIGGER translation_stale AFTER UPDATE OF content, status, owner_type, owner_id, "
    "type, created_at ON cto.memory FOR EACH ROW WHEN (OLD.content IS DISTINCT FROM "
    "NEW.content OR NEW.status <> 'active' OR OLD.owner_type IS DISTINCT FROM NEW.owner_type "
    "OR OLD.owner_id IS DISTINCT FROM NEW.owner_id OR OLD.type IS DISTINCT FROM NEW.type "
    "OR OLD.created_at IS DISTINCT FROM NEW.created_at) "
    "EXECUTE FUNCTION rumi.translation_stale()",
    # per-chat word statistics for their BM25, as migration 005 keeps the memories'
    """CREATE TABLE rumi.translation_word_totals (
        owner_type VARCHAR(20) NOT NULL,
        owner_id   VARCHAR(64) NOT NULL,
        docs       BIGINT NOT NULL DEFAULT 0,
        docs_es    BIGINT NOT NULL DEFAULT 0,
        docs_en    BIGINT NOT NULL DEFAULT 0,
        tokens_es  BIGINT NOT NULL DEFAULT 0,
        tokens_en  BIGINT NOT NULL DEFAULT 0,
        PRIMARY KEY (owner_type, owner_id)
    )""",
    """CREATE TABLE rumi.translation_word_stats (
        owner_type VARCHAR(20) NOT NULL,
        owner_id   VARCHAR(64) NOT NULL,
        config     CHAR(2) NOT NULL CHECK (config IN ('es', 'en')),
        lexeme     TEXT NOT NULL,
        df         BIGINT NOT NULL,
        PRIMARY KEY (owner_type, owner_id, config, lexeme)
    )""",
    *(_translation_stats_function(event) for event in ("insert", "update", "delete")),
    "CREATE TRIGGER translation_stats_insert AFTER INSERT ON rumi.memory_translations "
    "REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT "
    "EXECUTE FUNCTION rumi.translation_stats_insert()",
    "CREATE TRIGGER translation_stats_update AFTER UPDATE ON rumi.memory_translations "
    "REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT "
    "EXECUTE FUNCTION rumi.translation_stats_update()",
    "CREATE TRIGGER translation_stats_delete AFTER DELETE ON rumi.memory_translations "
    "REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT "
    "EXECUTE FUNCTION rumi.translation_stats_delete()",
]


def migrations(dim: int) -> list[tuple[str, list[str]]]:
    """(name, statements) in the order they run; names never change once released."""
    return [
        ("001_cto_schema", _m001(dim)),
        ("002_cto_functions", list(_FUNCTIONS)),
        ("003_default_algorithm", [
            "INSERT INTO cto.algorithms(code, name, version, config, status, activated_at) "  # noqa: S608 - our own constant
            "VALUES ('memory_scoring', 'Rumi memory scoring (seed 001 v2)', '2.0.0', "
            f"'{json.dumps(DEFAULT_ALGORITHM)}'::jsonb, 'active', now())"]),
        ("004_conversation_context", list(_CONTEXT)),
        ("005_word_statistics", list(_WORD_STATISTICS)),
        ("006_tape_index", list(_TAPE_INDEX)),
        ("007_block_sessions", list(_BLOCKS)),
        ("008_reminders", list(_REMINDERS)),
        ("009_access_days", list(_ACCESS_DAYS)),
        ("010_frequency_saturation_20", list(_SATURATION_20)),
        ("011_memory_translations", list(_TRANSLATIONS)),
    ]


KNOWN = [name for name, _ in migrations(384)]


@dataclass(frozen=True)
class SchemaState:
    applied: list[str]
    dim: int


async def migrate(conn: Any, dim: int) -> SchemaState:
    """Apply what is missing, under an advisory lock, each migration in its own transaction.

    Refuses (StoreSchemaError) a database with migrations this Rumi does not know, or whose
    vector dimension differs from the configured model's."""
    async with conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock(%s)", (LOCK_KEY,))
        await conn.execute("CREATE SCHEMA IF NOT EXISTS rumi")
        await conn.execute(
            "CREATE TABLE IF NOT EXISTS rumi.schema_migrations ("
            "name TEXT PRIMARY KEY, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())")
        cur = await conn.execute("SELECT name FROM rumi.schema_migrations ORDER BY name")
        done = [row[0] for row in await cur.fetchall()]
        unknown = sorted(set(done) - set(KNOWN))
        if unknown:
            raise StoreSchemaError(
                f"the store's schema is newer than this Rumi knows (migration {unknown[-1]}); "
                "upgrade Rumi before using this database")
        applied = []
        for name, statements in migrations(dim):
            if name in done:
                continue
            for sql in statements:
                await conn.execute(sql)
            await conn.execute("INSERT INTO rumi.schema_migrations(name) VALUES (%s)", (name,))
            log.info("store: applied migration %s", name)
            applied.append(name)
        cur = await conn.execute("SELECT value FROM rumi.settings WHERE name = 'embedding_dim'")
        row = await cur.fetchone()
    stored = int(row[0])
    if stored != dim:
        raise StoreSchemaError(
            f"the store holds {stored}-dimensional vectors but the configured embedding model "
            f"makes {dim}; use the model the store was made with, or a new database")
    return SchemaState(applied, stored)

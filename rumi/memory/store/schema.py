"""`rumi.db`: connection settings and named, ordered migrations.

Migrations are registered with `@migration("NNN_name")` (the simonw/llm pattern): each runs once,
inside its own transaction, and is recorded in `schema_migrations`; `PRAGMA user_version` mirrors
the count so a glance at the file tells its version. Other modules (journal, markdown sync) may
register their own migrations in the same registry by importing this module.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path

import aiosqlite

log = logging.getLogger(__name__)

MigrationFn = Callable[[aiosqlite.Connection], Awaitable[None]]
MIGRATIONS: dict[str, MigrationFn] = {}

FTS_TOKENIZER = "unicode61 remove_diacritics 2"


def migration(name: str) -> Callable[[MigrationFn], MigrationFn]:
    """Register `fn` as the migration `name`; names sort into the order they run in."""

    def register(fn: MigrationFn) -> MigrationFn:
        if name in MIGRATIONS:
            raise ValueError(f"duplicate migration {name}")
        MIGRATIONS[name] = fn
        return fn

    return register


async def _run(conn: aiosqlite.Connection, statements: list[str]) -> None:
    for sql in statements:
        await conn.execute(sql)


@migration("001_memories")
async def _m001_memories(conn: aiosqlite.Connection) -> None:
    await _run(conn, [
        """CREATE TABLE memories (
            id               INTEGER PRIMARY KEY AUTOINCREMENT,
            chat_id          TEXT    NOT NULL,
            type             TEXT    NOT NULL,
            content          TEXT    NOT NULL,
            summary          TEXT,
            key              TEXT,
            source           TEXT    NOT NULL DEFAULT 'auto',
            importance       REAL    NOT NULL DEFAULT 0.5
                             CHECK (importance >= 0 AND importance <= 1),
            confidence       REAL    NOT NULL DEFAULT 0.8
                             CHECK (confidence >= 0 AND confidence <= 1),
            access_count     INTEGER NOT NULL DEFAULT 0,
            last_accessed_at TEXT,
            created_at       TEXT    NOT NULL,
            updated_at       TEXT    NOT NULL,
            expires_at       TEXT,
            status           TEXT    NOT NULL DEFAULT 'active',
            superseded_by    INTEGER REFERENCES memories(id) ON DELETE SET NULL,
            related_ids      TEXT    NOT NULL DEFAULT '[]',
            content_hash     TEXT    NOT NULL,
            embedding_model  TEXT,
            metadata         TEXT    NOT NULL DEFAULT '{}'
        )""",
        # Idempotent save: one ACTIVE memory per (chat, hash); history rows may repeat it.
        """CREATE UNIQUE INDEX ux_memories_active_hash ON memories(chat_id, content_hash)
           WHERE status = 'active'""",
        "CREATE INDEX ix_memories_chat_status ON memories(chat_id, status, type)",
        "CREATE INDEX ix_memories_chat_key ON memories(chat_id, key) WHERE key IS NOT NULL",
        "CREATE INDEX ix_memories_expiry ON memories(expires_at) WHERE status = 'active'",
        """CREATE TABLE memory_embeddings (
            memory_id INTEGER PRIMARY KEY REFERENCES memories(id) ON DELETE CASCADE,
            model     TEXT    NOT NULL,
            dim       INTEGER NOT NULL,
            vector    BLOB    NOT NULL
        )""",
        f"""CREATE VIRTUAL TABLE memories_fts USING fts5(
            content, summary, key,
            content='memories', content_rowid='id',
            tokenize='{FTS_TOKENIZER}'
        )""",
        """CREATE TRIGGER memories_ai AFTER INSERT ON memories BEGIN
            INSERT INTO memories_fts(rowid, content, summary, key)
            VALUES (new.id, new.content, new.summary, new.key);
        END""",
        """CREATE TRIGGER memories_ad AFTER DELETE ON memories BEGIN
            INSERT INTO memories_fts(memories_fts, rowid, content, summary, key)
            VALUES ('delete', old.id, old.content, old.summary, old.key);
        END""",
        """CREATE TRIGGER memories_au AFTER UPDATE OF content, summary, key ON memories BEGIN
            INSERT INTO memories_fts(memories_fts, rowid, content, summary, key)
            VALUES ('delete', old.id, old.content, old.summary, old.key);
            INSERT INTO memories_fts(rowid, content, summary, key)
            VALUES (new.id, new.content, new.summary, new.key);
        END""",
    ])


@migration("002_blocks")
async def _m002_blocks(conn: aiosqlite.Connection) -> None:
    await _run(conn, [
        """CREATE TABLE blocks (
            id          INTEGER PRIMARY KEY AUTOINCREMENT,
            code        TEXT    NOT NULL,
            name        TEXT    NOT NULL DEFAULT '',
            scope       TEXT    NOT NULL CHECK (scope IN ('global', 'chat', 'session')),
            chat_id     TEXT    NOT NULL DEFAULT '',
            session_id  TEXT    NOT NULL DEFAULT '',
            category    TEXT    NOT NULL DEFAULT 'knowledge',
            content     TEXT    NOT NULL,
            content_hash TEXT   NOT NULL,
            priority    INTEGER NOT NULL DEFAULT 0,
            token_count INTEGER NOT NULL DEFAULT 0,
            status      TEXT    NOT NULL DEFAULT 'active'
                        CHECK (status IN ('active', 'inactive', 'deprecated')),
            metadata    TEXT    NOT NULL DEFAULT '{}',
            created_at  TEXT    NOT NULL,
            updated_at  TEXT    NOT NULL,
            UNIQUE (scope, chat_id, session_id, code)
        )""",
        "CREATE INDEX ix_blocks_lookup ON blocks(status, scope, chat_id, session_id)",
    ])


RECALL_REGISTRY = "recall_chats"
RECALL_TRIGGERS = ("ai", "ad", "au_content", "au_gone", "au_back")  # per-chat table suffixes
# The recall index (rumi/memory/store/recall_index.py) indexes each memory (content, key, summary)
# with up to two earlier active memories of the same chat and type within 3 hours
# (julianday · 24). Columns: rowid, content, key, summary, ctx1, ctx2.
RECALL_CONTEXT_SQL = """
    {row}.id, {row}.content, coalesce({row}.key, ''), coalesce({row}.summary, ''),
    coalesce((SELECT p.content FROM memories p WHERE p.chat_id = {row}.chat_id
              AND p.type = {row}.type AND p.status = 'active' AND p.id < {row}.id
              AND abs(julianday({row}.created_at) - julianday(p.created_at)) * 24 <= 3
              ORDER BY p.id DESC LIMIT 1 OFFSET 0), ''),
    coalesce((SELECT p.content FROM memories p WHERE p.chat_id = {row}.chat_id
              AND p.type = {row}.type AND p.status = 'active' AND p.id < {row}.id
              AND abs(julianday({row}.created_at) - julianday(p.created_at)) * 24 <= 3
              ORDER BY p.id DESC LIMIT 1 OFFSET 1), '')
"""


@migration("010_recall_fts")
async def _m010_recall_fts(conn: aiosqlite.Connection) -> None:
    """History: built one keyword index shared by all chats, which 011 drops again (its
    statistics mixed chats). A no-op now, so a new database does not build it for nothing."""


@migration("011_recall_fts_per_chat")
async def _m011_recall_fts_per_chat(conn: aiosqlite.Connection) -> None:
    """Drop the shared index (its statistics mixed chats); per-chat tables are built lazily."""
    for name in RECALL_TRIGGERS:
        await conn.execute(f"DROP TRIGGER IF EXISTS recall_fts_{name}")
    await conn.execute("DROP TABLE IF EXISTS recall_fts")
    await conn.execute(
        f"""CREATE TABLE {RECALL_REGISTRY} (
            n          INTEGER PRIMARY KEY AUTOINCREMENT,
            chat_id    TEXT    NOT NULL UNIQUE,
            created_at TEXT    NOT NULL
        )"""
    )


@migration("012_recall_fts_key_summary")
async def _m012_recall_fts_key_summary(conn: aiosqlite.Connection) -> None:
    """Per-chat keyword tables gain the key and summary columns (so `/search` can rank with
    the chat's own statistics too): drop them all; each is rebuilt on its chat's next search."""
    async with conn.execute(f"SELECT n FROM {RECALL_REGISTRY}") as cur:  # noqa: S608
        numbers = [int(row[0]) for row in await cur.fetchall()]
    for n in numbers:
        for name in RECALL_TRIGGERS:
            await conn.execute(f"DROP TRIGGER IF EXISTS recall_fts_{n}_{name}")
        await conn.execute(f"DROP TABLE IF EXISTS recall_fts_{n}")
    await conn.execute(f"DELETE FROM {RECALL_REGISTRY}")  # noqa: S608


@migration("013_forget_erases")
async def _m013_forget_erases(conn: aiosqlite.Connection) -> None:
    """Forget used to mark rows 'deleted' and keep their text; now it erases them. Rows left
    by that older forget are erased here too, and only a hash of each text is kept, in
    `forgotten_hashes`, so extraction and import do not learn it again."""
    await conn.execute(
        """CREATE TABLE forgotten_hashes (
            chat_id      TEXT NOT NULL,
            content_hash TEXT NOT NULL,
            forgotten_at TEXT NOT NULL,
            PRIMARY KEY (chat_id, content_hash)
        ) WITHOUT ROWID"""
    )
    # forget follows `superseded_by` backwards to erase a memory's history
    await conn.execute("CREATE INDEX ix_memories_superseded_by ON memories(superseded_by) "
                       "WHERE superseded_by IS NOT NULL")
    await conn.execute(
        "INSERT OR IGNORE INTO forgotten_hashes(chat_id, content_hash, forgotten_at) "
        "SELECT chat_id, content_hash, updated_at FROM memories WHERE status = 'deleted'"
    )
    cur = await conn.execute("DELETE FROM memories WHERE status = 'deleted'")
    if cur.rowcount:  # merge away the FTS5 segments that still held their words
        await conn.execute("INSERT INTO memories_fts(memories_fts) VALUES ('optimize')")
        async with conn.execute(f"SELECT n FROM {RECALL_REGISTRY}") as found:  # noqa: S608
            numbers = [int(row[0]) for row in await found.fetchall()]
        for n in numbers:
            table = f"recall_fts_{n}"
            async with conn.execute("SELECT 1 FROM sqlite_master WHERE name = ?",
                                    (table,)) as exists:
                if await exists.fetchone() is not None:
                    await conn.execute(f"INSERT INTO {table}({table}) VALUES ('optimize')")  # noqa: S608


@migration("015_group_memory")
async def _m015_group_memory(conn: aiosqlite.Connection) -> None:
    """Groups: a memory names the member it is about (`owner_id`, the Telegram user id; NULL
    in private chats and for what concerns the whole group), and a chat can switch its
    long-term memory off (`memory_switch`, one row per chat that did)."""
    await conn.execute("ALTER TABLE memories ADD COLUMN owner_id TEXT")
    await conn.execute("CREATE INDEX ix_memories_owner ON memories(chat_id, owner_id) "
                       "WHERE owner_id IS NOT NULL")
    await conn.execute(
        """CREATE TABLE memory_switch (
            chat_id    TEXT PRIMARY KEY,
            enabled    INTEGER NOT NULL,
            changed_by TEXT,
            changed_at TEXT NOT NULL
        ) WITHOUT ROWID"""
    )


@migration("016_tape_index")
async def _m016_tape_index(conn: aiosqlite.Connection) -> None:
    """A keyword index of the conversation tapes (rumi/memory/store/tape_index.py): derived from the
    tape files, caught up from `indexed_bytes` on, rebuilt from them when the database is new."""
    await conn.execute(
        """CREATE TABLE tape_sources (
            id            INTEGER PRIMARY KEY AUTOINCREMENT,
            chat_id       TEXT    NOT NULL,
            tag           TEXT    NOT NULL,
            indexed_bytes INTEGER NOT NULL DEFAULT 0,
            head          TEXT    NOT NULL DEFAULT '',
            messages      INTEGER NOT NULL DEFAULT 0,
            UNIQUE (chat_id, tag)
        )"""
    )
    await conn.execute(
        f"""CREATE VIRTUAL TABLE tape_fts USING fts5(
            content, source UNINDEXED, msg_id UNINDEXED, at UNINDEXED,
            tokenize='{FTS_TOKENIZER}'
        )"""
    )


@migration("017_access_days")
async def _m017_access_days(conn: aiosqlite.Connection) -> None:
    """The days a memory was used (rumi/memory/store/days.py), which the score's frequency
    reads instead of every access. What came before is one day at most as far as anyone can
    tell: a memory used at all gets 1 (its last access as the day counted, so a use within
    the next 20 hours adds none), one never used 0; `access_count` is kept as it was."""
    await conn.execute("ALTER TABLE memories ADD COLUMN access_days INTEGER NOT NULL DEFAULT 0")
    await conn.execute("ALTER TABLE memories ADD COLUMN access_day_at TEXT")
    await conn.execute("UPDATE memories SET access_days = 1, access_day_at = last_accessed_at "
                       "WHERE access_count > 0")


TRANSLATIONS = "memory_translations"
TRANSLATION_REGISTRY = "translation_chats"


@migration("018_memory_translations")
async def _m018_memory_translations(conn: aiosqlite.Connection) -> None:
    """Each memory's machine translation into the chat's other language (derived data,
    rumi/memory/store/translations.py): which content it was translated from, and which two
    earlier memories gave its context. The triggers drop it in the same transaction as any
    change that makes it wrong or that removes what it was made from (a delete, an edit of
    the text, the memory leaving 'active', a move); the background translator makes it again."""
    await _run(conn, [
        """CREATE TABLE memory_translations (
            memory_id     INTEGER PRIMARY KEY REFERENCES memories(id) ON DELETE CASCADE,
            chat_id       TEXT    NOT NULL,
            content_hash  TEXT    NOT NULL,
            lang          TEXT    NOT NULL,
            text          TEXT    NOT NULL,
            ctx1_id       INTEGER,
            ctx2_id       INTEGER,
            translated_at TEXT    NOT NULL
        )""",
        "CREATE INDEX ix_translations_chat ON memory_translations(chat_id, memory_id)",
        "CREATE INDEX ix_translations_ctx1 ON memory_translations(ctx1_id) "
        "WHERE ctx1_id IS NOT NULL",
        "CREATE INDEX ix_translations_ctx2 ON memory_translations(ctx2_id) "
        "WHERE ctx2_id IS NOT NULL",
        """CREATE TRIGGER memory_translations_gone AFTER DELETE ON memories BEGIN
            DELETE FROM memory_translations WHERE memory_id = old.id;
        END""",
        """CREATE TRIGGER memory_translations_stale AFTER UPDATE OF content, status, chat_id,
            type, created_at ON memories
            WHEN old.content IS NOT new.content OR new.status != 'active'
              OR old.chat_id IS NOT new.chat_id OR old.type IS NOT new.type
              OR old.created_at IS NOT new.created_at BEGIN
            DELETE FROM memory_translations WHERE memory_id = old.id;
        END""",
        """CREATE TABLE translation_chats (
            n          INTEGER PRIMARY KEY AUTOINCREMENT,
            chat_id    TEXT    NOT NULL UNIQUE,
            created_at TEXT    NOT NULL
        )""",
    ])


async def connect(db_path: Path, *, busy_timeout_ms: int = 5_000) -> aiosqlite.Connection:
    """Open `db_path` in autocommit mode (we issue BEGIN ourselves) with WAL and foreign keys."""
    db_path.parent.mkdir(parents=True, exist_ok=True)
    conn = await aiosqlite.connect(db_path, isolation_level=None)
    try:
        conn.row_factory = aiosqlite.Row
        await conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
        await conn.execute("PRAGMA journal_mode = WAL")
        await conn.execute("PRAGMA synchronous = NORMAL")
        await conn.execute("PRAGMA foreign_keys = ON")
        # a forgotten memory's freed pages are zeroed, not left holding the text
        await conn.execute("PRAGMA secure_delete = ON")
        await apply_migrations(conn)
    except BaseException:
        await conn.close()
        raise
    return conn


async def apply_migrations(conn: aiosqlite.Connection) -> list[str]:
    """Run every registered migration not yet recorded; returns the names applied now."""
    await conn.execute(
        "CREATE TABLE IF NOT EXISTS schema_migrations "
        "(name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)"
    )
    async with conn.execute("SELECT name FROM schema_migrations") as cur:
        done = {row[0] for row in await cur.fetchall()}
    applied: list[str] = []
    for name in sorted(MIGRATIONS):
        if name in done:
            continue
        await conn.execute("BEGIN IMMEDIATE")
        try:
            await MIGRATIONS[name](conn)
            await conn.execute(
                "INSERT INTO schema_migrations(name, applied_at) VALUES (?, ?)",
                (name, datetime.now(UTC).isoformat()),
            )
            await conn.execute(f"PRAGMA user_version = {len(done) + len(applied) + 1}")
            await conn.execute("COMMIT")
        except BaseException:
            await conn.execute("ROLLBACK")
            raise
        log.info("applied migration %s", name)
        applied.append(name)
    return applied

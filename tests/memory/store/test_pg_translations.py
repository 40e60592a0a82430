"""The memories' translations on PostgreSQL (`postgres.translations`, migration 011): the
same promises as SQLite's (tests/memory/store/test_translations.py) — written only for the
content they were made from, searched by a question's own words with their context, and gone,
from the rows, the word statistics and the context of later memories, in the same transaction
as whatever a person does to what they were made from (forget, redaction, edit, expiry, a
chat's erasure) — plus what only a server shared by connections can get wrong: an edit
committed while a translation of the old text is being written.

The translated texts are written by the test itself (the background translator with Apertium
is tests/memory/recall/test_memory_translation.py)."""

from __future__ import annotations

import asyncio
import re
from collections import Counter
from datetime import UTC, datetime, timedelta

import psycopg
import pytest

from rumi.config import MemorySettings
from rumi.memory.recall.memory_translation import translated_hits
from rumi.memory.recall.query import plan
from rumi.memory.store.codec import content_hash
from rumi.memory.store.models import MemoryType, NewMemory
from rumi.memory.store.postgres import schema as pg_schema
from rumi.memory.store.postgres.store import PgMemoryStore
from rumi.memory.store.translations import Translated

KW = MemorySettings(embeddings_enabled=False)
CHAT, OTHER = "42", "-100777"
NOW = datetime(2026, 5, 1, 10, 0, tzinfo=UTC)
SAID = [("I adopted a puppy named Oscar", "adopté un cachorro llamado Oscar"),
        ("He loves chasing the ball", "le encanta perseguir la pelota"),
        ("My secret code is 4417 zanahoria", "mi código secreto es 4417 zanahoria")]
_ENTRY = re.compile(r"'((?:[^']|'')*)'(?::([0-9A-D,]+))?")


async def _saved(pg: PgMemoryStore, chat: str = CHAT) -> list[int]:
    ids = []
    for n, (content, _) in enumerate(SAID):
        result = await pg.save(chat, NewMemory(content=content, type=MemoryType.EPISODIC,
                                               created_at=NOW + timedelta(minutes=n)))
        ids.append(result.memory.id)
    return ids


async def _translate_all(pg: PgMemoryStore, chat: str = CHAT) -> int:
    texts = dict(SAID)
    missing = await pg.translations.missing(chat, 100)
    return await pg.translations.write(chat, [
        Translated(m.id, m.content_hash, "es", texts[m.content]) for m in missing])


async def _found(pg: PgMemoryStore, words: str, chat: str = CHAT) -> list[int]:
    """The memories whose translation (or its context) has `words`, as recall asks."""
    return [i for i, _ in await translated_hits(pg.translations, chat, plan(words), 10, 2_000,
                                                False)]


def _rows(url: str, sql: str, params: tuple = ()) -> list[tuple]:
    with psycopg.connect(url) as conn:
        return conn.execute(sql, params).fetchall()


def _holding(url: str, word: str) -> int:
    """Translation rows holding `word`'s Spanish stem anywhere in their words (their context
    too), and rows whose text says it."""
    [[stem]] = _rows(url, "SELECT (tsvector_to_array(to_tsvector('spanish', rumi.fold(%s))))[1]",
                     (word,))
    [[n]] = _rows(url, "SELECT count(*) FROM rumi.memory_translations WHERE "
                       "tsv @@ to_tsquery('simple', quote_literal(%s)) OR text ILIKE %s",
                  (stem, f"%{word}%"))
    return int(n)


def assert_statistics_right(url: str, *chats: str) -> None:
    """The triggers' word statistics equal a count made here from the rows' tsvectors."""
    for chat in chats:
        kind = "group" if chat.startswith("-") else "user"
        rows = _rows(url, "SELECT lang, tsv::text FROM rumi.memory_translations "
                          "WHERE owner_type = %s AND owner_id = %s", (kind, chat))
        df: Counter[tuple[str, str]] = Counter()
        length = Counter[str]()
        for lang, tsv in rows:
            entries = _ENTRY.findall(tsv)
            if lang in ("es", "en"):
                df.update((lang, lex.replace("''", "'")) for lex, _ in entries)
                length[lang] += len(entries)
        words = _rows(url, "SELECT config, lexeme, df FROM rumi.translation_word_stats "
                           "WHERE owner_type = %s AND owner_id = %s AND df <> 0", (kind, chat))
        assert {(c.strip(), lex): int(n) for c, lex, n in words} == dict(df), chat
        totals = _rows(url, "SELECT docs, docs_es, docs_en, tokens_es, tokens_en FROM "
                            "rumi.translation_word_totals WHERE owner_type = %s "
                            "AND owner_id = %s", (kind, chat))
        langs = Counter(lang for lang, _ in rows)
        kept = tuple(int(x) for x in totals[0]) if totals else (0, 0, 0, 0, 0)
        assert kept == (len(rows), langs["es"], langs["en"], length["es"], length["en"]), chat


async def test_translations_are_found_by_their_words_with_their_context(
        pg: PgMemoryStore, memory_pg_url: str) -> None:
    ids = await _saved(pg)
    assert await pg.translations.chats_missing() == [CHAT]
    assert await _found(pg, "cachorro") == []          # nothing translated yet
    assert await _translate_all(pg) == 3
    assert await _translate_all(pg) == 0               # written once
    assert await pg.translations.missing(CHAT, 100) == []
    assert await pg.translations.chats_missing() == []
    assert await pg.translations.count(CHAT) == 3
    found = await _found(pg, "cachorro")
    assert found[0] == ids[0] and set(found) == set(ids)   # ids[1], ids[2]: as context
    assert (await _found(pg, "pelota"))[0] == ids[1]
    # another inflection of the Spanish word: the server stems the question as it stems
    # the translations ("cachorros" finds "cachorro", "pelotas" "pelota")
    assert (await _found(pg, "¿Tenía cachorros?"))[0] == ids[0]
    assert (await _found(pg, "¿Qué pelotas?"))[0] == ids[1]
    # the chat's own keyword index never sees the translations
    assert await pg.keyword_index.search(CHAT, plan("cachorro"), 10) == []
    assert await pg.translations.rebuild_stale() == []
    assert_statistics_right(memory_pg_url, CHAT)


async def test_an_english_translation_is_found_by_an_english_question(
        pg: PgMemoryStore, memory_pg_url: str) -> None:
    saved = await pg.save(CHAT, NewMemory(content="Fui a nadar a la playa con mi hermana"))
    [m] = await pg.translations.missing(CHAT, 10)
    assert await pg.translations.write(CHAT, [Translated(
        m.id, m.content_hash, "en", "I went swimming at the beach with my sister")]) == 1
    assert await _found(pg, "Where did she go swimming?") == [saved.memory.id]
    assert await _found(pg, "nadar") == []    # Spanish words are not in its English words
    assert_statistics_right(memory_pg_url, CHAT)


async def test_forgotten_memory_leaves_no_translation_behind(
        pg: PgMemoryStore, memory_pg_url: str) -> None:
    ids = await _saved(pg)
    await _translate_all(pg)
    assert _holding(memory_pg_url, "cachorro") == 3        # its row and two as context
    await pg.forget(CHAT, memory_id=ids[0])
    assert await _found(pg, "cachorro") == []
    assert _holding(memory_pg_url, "cachorro") == 0         # not even as a later one's context
    assert await pg.translations.count(CHAT) == 2
    await pg.forget(CHAT, text="ball")                      # forget by words: the same
    assert await _found(pg, "pelota") == []
    assert _holding(memory_pg_url, "pelota") == 0
    assert_statistics_right(memory_pg_url, CHAT)


async def test_redacted_secret_leaves_its_translation(
        pg: PgMemoryStore, memory_pg_url: str) -> None:
    ids = await _saved(pg)
    await _translate_all(pg)
    await pg.erase(CHAT, [ids[2]])   # what a redaction does with every row holding it
    assert await _found(pg, "zanahoria") == []
    assert _holding(memory_pg_url, "zanahoria") == 0
    assert _holding(memory_pg_url, "secreto") == 0
    assert _rows(memory_pg_url, "SELECT count(*) FROM rumi.translation_word_stats "
                                "WHERE lexeme LIKE 'zanahori%%' AND df <> 0") == [(0,)]
    assert_statistics_right(memory_pg_url, CHAT)


async def test_an_edit_drops_the_old_translation_and_asks_for_a_new_one(
        pg: PgMemoryStore, memory_pg_url: str) -> None:
    ids = await _saved(pg)
    old = (await pg.translations.missing(CHAT, 100))[0]
    await _translate_all(pg)
    await pg.update(CHAT, ids[0], content="I adopted a kitten named Oscar")
    assert await _found(pg, "cachorro") == []
    assert _holding(memory_pg_url, "cachorro") == 0          # gone from ids[1]'s context too
    [again] = await pg.translations.missing(CHAT, 100)
    assert again.id == ids[0] and again.content == "I adopted a kitten named Oscar"
    # a translation of the text before the edit (a translator that read it earlier) is refused
    assert await pg.translations.write(
        CHAT, [Translated(old.id, old.content_hash, "es", "adopté un cachorro")]) == 0
    assert await pg.translations.write(
        CHAT, [Translated(again.id, again.content_hash, "es", "adopté un gatito")]) == 1
    assert (await _found(pg, "gatito"))[0] == ids[0]
    assert ids[1] in await _found(pg, "gatito")               # its context again
    # a change of the key alone keeps it (the translation is of the content)
    await pg.update(CHAT, ids[1], key="ball")
    assert await pg.translations.count(CHAT) == 3
    assert_statistics_right(memory_pg_url, CHAT)


async def test_an_edit_committed_while_the_translation_is_written_wins(
        pg: PgMemoryStore, memory_pg_url: str) -> None:
    """The translator read the old text; a person's edit (another connection, another Rumi)
    is in its transaction when the translation arrives: the write waits for it and, the
    edit committed, stores nothing — no translation of a text that is gone."""
    ids = await _saved(pg)
    read = await pg.translations.missing(CHAT, 100)
    edited = "I adopted a kitten named Oscar"
    with psycopg.connect(memory_pg_url) as other:
        other.execute("UPDATE cto.memory SET content = %s, hash = %s WHERE id = %s",
                      (edited, content_hash(edited, None), ids[0]))
        texts = dict(SAID)
        writing = asyncio.create_task(pg.translations.write(CHAT, [
            Translated(m.id, m.content_hash, "es", texts[m.content]) for m in read]))
        await asyncio.sleep(0.5)
        assert not writing.done()   # waiting for the edit's row lock
        other.commit()
    assert await asyncio.wait_for(writing, 30) == 2
    assert await _found(pg, "cachorro") == []
    assert _holding(memory_pg_url, "cachorro") == 0
    [again] = await pg.translations.missing(CHAT, 100)
    assert again.id == ids[0] and again.content == edited
    # and the other way round: a translation written first goes with the edit that follows
    assert await pg.translations.write(
        CHAT, [Translated(again.id, again.content_hash, "es", "adopté un gatito")]) == 1
    await pg.update(CHAT, ids[0], content="I adopted a parrot named Oscar")
    assert await _found(pg, "gatito") == [] and _holding(memory_pg_url, "gatito") == 0
    assert_statistics_right(memory_pg_url, CHAT)


async def test_expired_and_other_chats_memories_are_not_searched(
        pg: PgMemoryStore, memory_pg_url: str) -> None:
    ids = await _saved(pg)
    other = await pg.save(OTHER, NewMemory(content="A puppy too"))
    await _translate_all(pg)
    assert await pg.translations.write(OTHER, [Translated(
        other.memory.id, other.memory.content_hash, "es", "un cachorro también")]) == 1
    # a chat's write never stores another chat's memory
    assert await pg.translations.write(CHAT, [Translated(
        other.memory.id, other.memory.content_hash, "es", "otro")]) == 0
    assert other.memory.id not in await _found(pg, "cachorro")
    assert await _found(pg, "cachorro", OTHER) == [other.memory.id]
    assert_statistics_right(memory_pg_url, CHAT, OTHER)
    # past its expiry, not yet purged: not searched; purged: gone
    await pg.update(CHAT, ids[0], expires_at=datetime.now(UTC) - timedelta(days=1))
    assert ids[0] not in await _found(pg, "cachorro")
    await pg.purge_expired()
    assert ids[0] not in await _found(pg, "cachorro")
    assert _holding(memory_pg_url, "cachorro") == 1          # the other chat's own
    assert_statistics_right(memory_pg_url, CHAT, OTHER)


async def test_superseded_memory_and_erased_chat_leave_nothing(
        pg: PgMemoryStore, memory_pg_url: str) -> None:
    ids = await _saved(pg)
    await _translate_all(pg)
    newer = await pg.supersede(CHAT, ids[1], NewMemory(content="He loves chasing frisbees",
                                                       type=MemoryType.EPISODIC))
    assert await _found(pg, "pelota") == [] and _holding(memory_pg_url, "pelota") == 0
    assert [m.id for m in await pg.translations.missing(CHAT, 10)] == [newer.id]
    everything = [m.id for m in await pg.list(CHAT, status=None, limit=1000)]
    await pg.erase(CHAT, everything)   # a chat's memories erased
    assert await pg.translations.count(CHAT) == 0
    assert _rows(memory_pg_url, "SELECT count(*) FROM rumi.memory_translations") == [(0,)]
    assert_statistics_right(memory_pg_url, CHAT)


async def test_export_leaves_translations_out_and_import_asks_for_them_again(
        pg: PgMemoryStore) -> None:
    await _saved(pg)
    await _translate_all(pg)
    told: list[str] = []
    pg.written.append(told.append)
    lines = await pg.export_jsonl(CHAT)
    assert not any("cachorro" in line for line in lines)
    await pg.import_report("9", lines)
    assert told == ["9"]
    assert len(await pg.translations.missing("9", 100)) == 3
    await pg.save(CHAT, NewMemory(content="A new memory"))
    await pg.save(CHAT, NewMemory(content="A new memory"))   # the same again: nothing new
    assert told == ["9", CHAT]


async def test_a_store_made_before_gets_the_table_and_its_chats_are_translated(
        memory_pg_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A database made by the version before (migrations up to 010, memories in it): the
    upgrade adds the empty table, and the translator's start finds every chat to translate."""
    with psycopg.connect(memory_pg_url, autocommit=True) as conn:   # back to 010
        conn.execute("DROP TABLE rumi.memory_translations, rumi.translation_word_stats, "
                     "rumi.translation_word_totals")
        conn.execute("DROP TRIGGER translation_stale ON cto.memory")
        for name in ("translation_words", "translation_tsv", "translation_fill",
                     "translation_context", "translation_stale", "translation_stats_insert",
                     "translation_stats_update", "translation_stats_delete"):
            conn.execute(f"DROP FUNCTION rumi.{name}")
        conn.execute("DELETE FROM rumi.schema_migrations WHERE name = '011_memory_translations'")
    every = pg_schema.migrations
    with monkeypatch.context() as patch:
        patch.setattr(pg_schema, "migrations", lambda dim: every(dim)[:10])
        old = await PgMemoryStore.open(memory_pg_url, "test", KW, None)
        try:
            await old.save(CHAT, NewMemory(content=SAID[0][0]))
            await old.save(OTHER, NewMemory(content=SAID[1][0]))
        finally:
            await old.close()
    pg = await PgMemoryStore.open(memory_pg_url, "test", KW, None)
    try:
        assert await pg.translations.chats_missing() == sorted([CHAT, OTHER])
        assert await _translate_all(pg) == 1
        assert await pg.translations.chats_missing() == [OTHER]
        assert (await _found(pg, "cachorro"))
    finally:
        await pg.close()

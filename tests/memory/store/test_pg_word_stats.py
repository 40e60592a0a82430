"""The PostgreSQL store's per-chat word statistics (migration 005): the document frequency of
each recall word and the chat's totals, which the keyword half reads instead of counting the
chat's rows on every recall. They are kept by triggers in the writing transaction, so every
path that adds, changes or removes a memory must leave them equal to a count made from the
rows themselves — here computed in Python from the stored `tsvector`s, not by the store's SQL.
"""

from __future__ import annotations

import asyncio
import re
from collections import Counter
from datetime import UTC, datetime, timedelta

import psycopg
import pytest

from rumi.config import MemorySettings
from rumi.memory.store.models import MemoryType, NewMemory
from rumi.memory.store.postgres.store import PgMemoryStore

KW = MemorySettings(embeddings_enabled=False)
CHAT, OTHER = "42", "-100777"
_ENTRY = re.compile(r"'((?:[^']|'')*)'(?::([0-9A-D,]+))?")


def _recall_lexemes(tsv: str) -> set[str]:
    """Lexemes of a tsvector's text form that occur in weight A, B or C (no letter is D)."""
    found = set()
    for lexeme, positions in _ENTRY.findall(tsv):
        if any(p[-1] in "ABC" for p in positions.split(",") if p):
            found.add(lexeme.replace("''", "'"))
    return found


def _length(tsv: str) -> int:
    """A memory's length as BM25 normalises it: its distinct stems, every weight."""
    return len(_ENTRY.findall(tsv))


def expected(url: str, chat: str) -> tuple[dict[tuple[str, str], int], tuple[int, int, int]]:
    """({(config, lexeme): df}, (docs, tokens_es, tokens_en)) counted from the chat's rows."""
    kind = "group" if chat.startswith("-") else "user"
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT tsv_es::text, tsv_en::text FROM cto.memory WHERE owner_type = %s "
            "AND owner_id = %s AND status = 'active'", (kind, chat)).fetchall()
    df: Counter[tuple[str, str]] = Counter()
    for es, en in rows:
        df.update(("es", lex) for lex in _recall_lexemes(es))
        df.update(("en", lex) for lex in _recall_lexemes(en))
    return dict(df), (len(rows), sum(_length(r[0]) for r in rows),
                      sum(_length(r[1]) for r in rows))


def kept(url: str, chat: str) -> tuple[dict[tuple[str, str], int], tuple[int, int, int]]:
    """What the triggers keep for the chat (words whose count fell to 0 are absent)."""
    kind = "group" if chat.startswith("-") else "user"
    with psycopg.connect(url) as conn:
        words = conn.execute(
            "SELECT config, lexeme, df FROM rumi.word_stats WHERE owner_type = %s "
            "AND owner_id = %s AND df <> 0", (kind, chat)).fetchall()
        totals = conn.execute(
            "SELECT docs, tokens_es, tokens_en FROM rumi.word_totals WHERE owner_type = %s "
            "AND owner_id = %s", (kind, chat)).fetchone()
    return ({(c.strip(), lex): int(n) for c, lex, n in words},
            tuple(int(x) for x in totals) if totals else (0, 0, 0))


def stem(url: str, word: str) -> tuple[str, str]:
    """("es", the Spanish stem) of a word, as the store's tsvector holds it."""
    with psycopg.connect(url) as conn:
        row = conn.execute("SELECT (tsvector_to_array(to_tsvector('spanish', rumi.fold(%s))))[1]",
                           (word,)).fetchone()
    return "es", row[0]


def assert_right(url: str, *chats: str) -> None:
    for chat in chats:
        assert kept(url, chat) == expected(url, chat), chat


async def test_statistics_follow_every_write_path(pg, memory_pg_url):
    """remember, the same memory again, an edit, a supersede, a forget (with its history),
    expiry, an access count and an import: after each, the statistics equal the rows' count,
    and another chat's stay its own."""
    url = memory_pg_url
    first = (await pg.save(CHAT, NewMemory("Mi hermana Lucía vive en Valencia desde 2019",
                                           type=MemoryType.FACT))).memory
    await pg.save(OTHER, NewMemory("En el grupo hablamos de Valencia y de paella"))
    assert_right(url, CHAT, OTHER)
    assert kept(url, CHAT)[1][0] == 1

    await pg.save_many(CHAT, [NewMemory("I adopted a dog named Rufus last spring"),
                              NewMemory("Mi hermana Lucía vive en Valencia desde 2019",
                                        type=MemoryType.FACT),
                              NewMemory("Rufus likes running on the beach")])
    assert_right(url, CHAT, OTHER)
    assert kept(url, CHAT)[1][0] == 3          # the repeated memory was refreshed, not added

    valencia = kept(url, CHAT)[0][stem(url, "Valencia")]   # itself + two later ones' context
    await pg.update(CHAT, first.id, content="Mi hermana Lucía vive ahora en Sevilla")
    assert_right(url, CHAT)
    words = kept(url, CHAT)[0]
    assert words[stem(url, "Sevilla")] == 1 and words[stem(url, "Valencia")] == valencia - 1

    newer = await pg.supersede(CHAT, first.id, NewMemory("Lucía se mudó a Bilbao en marzo",
                                                         type=MemoryType.FACT))
    assert_right(url, CHAT)
    assert stem(url, "Sevilla") not in kept(url, CHAT)[0]   # superseded: no longer recalled

    await pg.mark_accessed(CHAT, [newer.id])
    assert_right(url, CHAT)

    forgotten = await pg.forget(CHAT, memory_id=newer.id)
    assert len(forgotten) == 1 and forgotten.history == 1
    assert_right(url, CHAT, OTHER)
    assert stem(url, "Bilbao") not in kept(url, CHAT)[0]

    soon = datetime.now(UTC) + timedelta(minutes=5)
    await pg.save(CHAT, NewMemory("Cita con la dentista el jueves", type=MemoryType.TEMPORAL,
                                  expires_at=soon))
    assert_right(url, CHAT)
    before = kept(url, CHAT)[1][0]
    assert await pg.purge_expired(soon + timedelta(seconds=1)) == 1
    assert_right(url, CHAT)
    assert kept(url, CHAT)[1][0] == before - 1

    lines = await pg.export_jsonl(CHAT)
    await pg.import_report(OTHER, lines)
    assert_right(url, CHAT, OTHER)

    await pg.forget(CHAT, text="Rufus")
    assert_right(url, CHAT, OTHER)


async def test_a_writer_killed_mid_transaction_leaves_rows_and_statistics_together(
        pg, memory_pg_url):
    """A Rumi whose connection dies after inserting (and after its triggers counted) but before
    COMMIT: neither the row nor its counts remain; a committed row keeps both."""
    url = memory_pg_url
    await pg.save(CHAT, NewMemory("Rufus likes running on the beach"))
    settled = kept(url, CHAT)
    writer = await psycopg.AsyncConnection.connect(url)
    try:
        await writer.execute(
            "INSERT INTO cto.memory (owner_type, owner_id, type, content, hash) "
            "VALUES ('user', %s, 'episodic', 'Rufus swims in the cold river', %s)",
            (CHAT, "f" * 64))
        cur = await writer.execute("SELECT docs FROM rumi.word_totals WHERE owner_id = %s",
                                   (CHAT,))
        assert (await cur.fetchone())[0] == 2      # counted inside the open transaction
        cur = await writer.execute("SELECT pg_backend_pid()")
        pid = (await cur.fetchone())[0]
        with psycopg.connect(url, autocommit=True) as killer:
            killer.execute("SELECT pg_terminate_backend(%s, 5000)", (pid,))
        with pytest.raises(psycopg.OperationalError):
            await writer.execute("COMMIT")
    finally:
        await writer.close()
    assert kept(url, CHAT) == settled
    assert_right(url, CHAT)
    await pg.save(CHAT, NewMemory("Rufus swims in the cold river"))
    assert kept(url, CHAT)[1][0] == 2
    assert_right(url, CHAT)


async def test_two_rumis_writing_one_chat_at_once_count_every_memory(memory_pg_url):
    """Two stores (two Rumis) saving overlapping words into one chat concurrently: no deadlock,
    no lost increment."""
    casa = await PgMemoryStore.open(memory_pg_url, "casa", KW, None)
    trabajo = await PgMemoryStore.open(memory_pg_url, "trabajo", KW, None)
    try:
        async def write(store: PgMemoryStore, tag: str) -> None:
            for n in range(6):
                await store.save_many(CHAT, [
                    NewMemory(f"{tag} paseo {n} con Rufus por la playa de Valencia"),
                    NewMemory(f"{tag} walk {n} with Rufus on the Valencia beach")])

        await asyncio.gather(write(casa, "casa"), write(trabajo, "trabajo"))
    finally:
        await casa.close()
        await trabajo.close()
    assert_right(memory_pg_url, CHAT)
    assert kept(memory_pg_url, CHAT)[1][0] == 24
    assert kept(memory_pg_url, CHAT)[0][stem(memory_pg_url, "Rufus")] == 24


async def test_recount_repairs_statistics_edited_by_hand(pg, memory_pg_url):
    url = memory_pg_url
    for text in ("Rufus likes running on the beach", "Lucía vive en Valencia"):
        await pg.save(CHAT, NewMemory(text))
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("UPDATE rumi.word_stats SET df = df + 40 WHERE lexeme = 'rufus'")
        conn.execute("UPDATE rumi.word_totals SET docs = 99")
        conn.execute("INSERT INTO rumi.word_stats VALUES ('user', %s, 'en', 'ghost', 3)",
                     (CHAT,))
    assert kept(url, CHAT) != expected(url, CHAT)
    assert await pg.recount_words(CHAT) == {"docs": 2, "words": len(expected(url, CHAT)[0])}
    assert_right(url, CHAT)
    await pg.reindex(CHAT)
    assert_right(url, CHAT)

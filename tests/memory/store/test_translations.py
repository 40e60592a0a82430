"""The memories' translations (`store.translations`, SQLite): written only for the content
they were made from, searched by a question's own words, and gone — from the rows, the chat's
translations table and the context of later memories — whenever a person removes or changes
what they were made from (forget, redaction, edit, expiry), in the same transaction.

The translated texts are written by the test itself: the store does not translate (the
background translator, tests/memory/recall/test_memory_translation.py, runs Apertium)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from rumi.config import MemorySettings
from rumi.memory.recall.memory_translation import translated_hits
from rumi.memory.recall.query import plan
from rumi.memory.store import translations as tr
from rumi.memory.store.memories import MemoryStore
from rumi.memory.store.models import MemoryType, NewMemory
from tests.memory.backends import SQLITE
from tests.memory.conftest import store_fixture

store = store_fixture(MemorySettings(embeddings_enabled=False), model=False, backends=[SQLITE])
CHAT = "42"
NOW = datetime(2026, 5, 1, 10, 0, tzinfo=UTC)
SAID = [("I adopted a puppy named Oscar", "adopté un cachorro llamado Oscar"),
        ("He loves chasing the ball", "le encanta perseguir la pelota"),
        ("My secret code is 4417 zanahoria", "mi código secreto es 4417 zanahoria")]


async def _saved(store: MemoryStore) -> list[int]:
    ids = []
    for n, (content, _) in enumerate(SAID):
        result = await store.save(CHAT, NewMemory(content=content, type=MemoryType.EPISODIC,
                                                  created_at=NOW + timedelta(minutes=n)))
        ids.append(result.memory.id)
    return ids


async def _translate_all(store: MemoryStore) -> int:
    missing = await store.translations.missing(CHAT, 100)
    texts = dict(SAID)
    return await store.translations.write(CHAT, [
        tr.Translated(m.id, m.content_hash, "es", texts[m.content]) for m in missing])


async def _found(store: MemoryStore, words: str) -> list[int]:
    """The memories whose Spanish translation has `words`, stemmed as recall stems them."""
    return [i for i, _ in await store.translations.search(
        CHAT, plan(tr.spanish_stems(words)), 10, 2_000)]


async def _indexed(store: MemoryStore, word: str) -> int:
    """Rows of the chat's translations table holding `word` in any column (the context too)."""
    table = await store.translations._table(CHAT)   # noqa: SLF001 - the table itself
    assert table is not None
    [[n]] = await store.connection.execute_fetchall(
        f"SELECT count(*) FROM {table} WHERE {table} MATCH ?",  # noqa: S608
        (f'"{tr.spanish_stems(word)}"',))
    return int(n)


async def test_translations_are_found_by_their_words_with_their_context(
        store: MemoryStore) -> None:
    ids = await _saved(store)
    assert await store.translations.chats_missing() == [CHAT]
    assert await _found(store, "cachorro") == []          # nothing translated yet
    assert await _translate_all(store) == 3
    assert await store.translations.missing(CHAT, 100) == []
    assert await store.translations.chats_missing() == []
    found = await _found(store, "cachorro")
    assert found[0] == ids[0] and set(found) == set(ids)   # ids[1], ids[2]: as context
    assert (await _found(store, "pelota"))[0] == ids[1]
    # the chat's own keyword index never sees the translations
    assert await store.keyword_index.search(CHAT, plan("cachorro"), 10) == []


async def test_a_spanish_question_finds_another_inflection_of_its_words(
        store: MemoryStore) -> None:
    """Spanish translations are indexed as Spanish stems and a Spanish question's words are
    stemmed alike (porter stems English only): "donaron" finds "donó", "mudaron" "mudó";
    English translations keep porter. A table an older version built is not searched until
    it is rebuilt, stems included (at the translator's start; or the chat's next write)."""
    said = [("She donated her old books", "ella donó sus libros viejos", "es"),
            ("They moved to Madrid in May", "se mudó a Madrid en mayo", "es"),
            ("Fui a la playa", "I went swimming at the beach", "en")]
    ids = []
    for n, (content, _, _) in enumerate(said):
        ids.append((await store.save(CHAT, NewMemory(
            content=content, created_at=NOW + timedelta(hours=4 * n)))).memory.id)

    async def hits(question: str) -> list[int]:
        return [i for i, _ in await translated_hits(store.translations, CHAT, plan(question),
                                                    10, 2_000, False)]

    async def write(memories: list[tr.Untranslated]) -> int:
        texts = {content: (text, lang) for content, text, lang in said}
        return await store.translations.write(CHAT, [tr.Translated(
            m.id, m.content_hash, texts[m.content][1], texts[m.content][0]) for m in memories])

    missing = await store.translations.missing(CHAT, 100)
    assert await write(missing[:2]) == 2
    assert await hits("¿Qué cosas donaron?") == [ids[0]]
    assert await hits("¿Adónde se mudaron?") == [ids[1]]
    # a table as an older version made it (another trigger): not searched, then rebuilt
    table = await store.translations._table(CHAT)   # noqa: SLF001 - the table itself
    await store.connection.execute(f"DROP TRIGGER {table}_ai")
    await store.connection.execute(
        f"CREATE TRIGGER {table}_ai AFTER INSERT ON memory_translations BEGIN SELECT 1; END")
    store.translations._tables.clear()   # noqa: SLF001 - a new process
    assert await hits("¿Qué cosas donaron?") == []
    assert await store.translations.rebuild_stale() == [CHAT]   # the translator's start
    assert await store.translations.rebuild_stale() == []
    assert await hits("¿Qué cosas donaron?") == [ids[0]]
    assert await hits("¿Adónde se mudaron?") == [ids[1]]
    assert await write(missing[2:]) == 1
    assert [i for i, _ in await store.translations.search(
        CHAT, plan("swimming beach"), 10, 2_000)] == [ids[2]]


async def test_forgotten_memory_leaves_no_translation_behind(store: MemoryStore) -> None:
    ids = await _saved(store)
    await _translate_all(store)
    await store.forget(CHAT, memory_id=ids[0])
    assert await _found(store, "cachorro") == []
    assert await _indexed(store, "cachorro") == 0          # not even as a later one's context
    assert await store.translations.count(CHAT) == 2
    await store.forget(CHAT, key=None, text="ball")       # forget by words: the same
    assert await _found(store, "pelota") == []
    assert await _indexed(store, "pelota") == 0


async def test_redacted_secret_leaves_its_translation(store: MemoryStore) -> None:
    ids = await _saved(store)
    await _translate_all(store)
    assert await _indexed(store, "zanahoria") == 1
    await store.erase(CHAT, [ids[2]])   # what a redaction does with every row holding it
    assert await _found(store, "zanahoria") == []
    assert await _indexed(store, "zanahoria") == 0
    rows = await store.connection.execute_fetchall(
        "SELECT count(*) FROM memory_translations WHERE text LIKE '%zanahoria%'")
    assert rows[0][0] == 0
    # nor the file: the words only the translation said ("secreto") left rumi.db and its WAL
    await store.connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    held = [p.name for p in store.db_path.parent.rglob("*")
            if p.is_file() and b"secreto" in p.read_bytes()]
    assert held == []


async def test_an_edit_drops_the_old_translation_and_asks_for_a_new_one(
        store: MemoryStore) -> None:
    ids = await _saved(store)
    old = (await store.translations.missing(CHAT, 100))[0]
    await _translate_all(store)
    await store.update(CHAT, ids[0], content="I adopted a kitten named Oscar")
    assert await _found(store, "cachorro") == []
    assert await _indexed(store, "cachorro") == 0          # gone from ids[1]'s context too
    [again] = await store.translations.missing(CHAT, 100)
    assert again.id == ids[0] and again.content == "I adopted a kitten named Oscar"
    # a translation of the text before the edit (a translator that read it earlier) is refused
    assert await store.translations.write(
        CHAT, [tr.Translated(old.id, old.content_hash, "es", "adopté un cachorro")]) == 0
    assert await store.translations.write(
        CHAT, [tr.Translated(again.id, again.content_hash, "es", "adopté un gatito")]) == 1
    assert (await _found(store, "gatito"))[0] == ids[0]
    assert ids[1] in await _found(store, "gatito")          # its context again


async def test_expired_and_other_chats_memories_are_not_searched(store: MemoryStore) -> None:
    ids = await _saved(store)
    other = await store.save("7", NewMemory(content="A puppy too"))
    await _translate_all(store)
    await store.translations.write("7", [tr.Translated(
        other.memory.id, other.memory.content_hash, "es", "un cachorro también")])
    assert other.memory.id not in await _found(store, "cachorro")
    await store.update(CHAT, ids[0], expires_at=datetime.now(UTC) - timedelta(days=1))
    await store.purge_expired()
    assert ids[0] not in await _found(store, "cachorro")
    assert await _indexed(store, "cachorro") == 0


async def test_export_leaves_translations_out_and_import_translates_again(
        store: MemoryStore) -> None:
    await _saved(store)
    await _translate_all(store)
    lines = await store.export_jsonl(CHAT)
    assert not any("cachorro" in line for line in lines)
    await store.import_report("9", lines)
    assert len(await store.translations.missing("9", 100)) == 3

"""After rumi.db is lost, old conversation is still reachable: the tapes are the record, the
conversation index is rebuilt from them at start, `/search` finds old messages, and
`recall_original` answers them byte for byte. Driven through the real bot, the fake Telegram
and the fake Groq."""

from __future__ import annotations

import logging
import sqlite3

import pytest

from rumi.memory.checks import check_memory_db
from rumi.memory.files.markdown_format import parse
from rumi.paths import ChatPaths
from tests.e2e.conftest import ALICE, bot_settings, fake_telegram, start_bot  # noqa: F401
from tests.memory.files.test_db_healing import _damage
from tests.memory.files.test_markdown_sync import eventually

pytestmark = pytest.mark.e2e

OTHER = 4242
SAID = 'Mi gata se llama Luna, nació el "3 de marzo" y odia la aspiradora 🐈'


def tool_results(fake_groq) -> list[str]:
    chat = [r for r in fake_groq.requests if "response_format" not in r][-1]
    return [m["content"] for m in chat["messages"] if m.get("role") == "tool"]


@pytest.mark.parametrize("how", ["deleted", "garbage header"])
async def test_old_conversation_is_found_and_recalled_after_the_database_is_lost(
        start_bot, bot_settings, fake_telegram, fake_groq, how):  # noqa: F811
    settings = bot_settings()
    bot = await start_bot(settings)
    fake_groq.enqueue_text("¡Qué nombre tan bonito!")
    fake_telegram.push_text(ALICE, ALICE, SAID)
    await fake_telegram.wait_for_sent(1)
    fake_telegram.push_text(ALICE, ALICE, "/remember Tiene una gata llamada Luna")
    await fake_telegram.wait_for_sent(2)
    fake_groq.enqueue_text("Anotado.")
    fake_telegram.push_text(ALICE, OTHER, "El martes empiezo clases de cerámica")
    await fake_telegram.wait_for_sent(3)
    md = ChatPaths(settings.data_dir, str(ALICE)).memory_md
    await eventually(lambda: md.exists() and len(parse(md.read_text(encoding="utf-8"))) == 1)
    fake_telegram.push_text(ALICE, ALICE, "/search aspiradora")
    found_before = (await fake_telegram.wait_for_sent(4))[-1].text
    assert "[#1]" in found_before and "aspiradora" in found_before
    await bot.stop()
    _damage(settings.data_dir / "rumi.db", how)

    await start_bot(settings)
    said = await fake_telegram.wait_for_sent(6)
    by_chat = {s.chat_id: s.text for s in said[4:]}
    # /search and /remember replies are not on the tape: 2 tape messages in each chat
    assert "reconstruí" in by_chat[ALICE] and "1 recuerdos" in by_chat[ALICE]
    assert "conversación (2 mensajes)" in by_chat[ALICE]
    assert "conversación (2 mensajes)" in by_chat[OTHER]

    fake_telegram.push_text(ALICE, ALICE, "/search aspiradora")
    found = (await fake_telegram.wait_for_sent(7))[-1].text
    assert found == found_before
    fake_telegram.push_text(ALICE, OTHER, "/search ceramica")    # accents ignored
    assert "[#1] El martes empiezo clases de cerámica" in (
        await fake_telegram.wait_for_sent(8))[-1].text

    fake_groq.enqueue_tool_call("recall_original", {"message_id": 1})
    fake_groq.enqueue_text("Se llama Luna.")
    fake_telegram.push_text(ALICE, ALICE, "¿Cómo te dije que se llama mi gata?")
    await fake_telegram.wait_for_sent(9)
    assert tool_results(fake_groq)[-1].endswith("\n" + SAID)      # byte for byte

    lagging = check_memory_db(settings.data_dir)   # said since the last search: a note only
    assert lagging.ok and not lagging.warning and "2 of 4 messages not indexed yet" in \
        lagging.detail, lagging.detail
    fake_telegram.push_text(ALICE, ALICE, "/search gata")
    assert "[#3] ¿Cómo te dije" in (await fake_telegram.wait_for_sent(10))[-1].text
    doctor = check_memory_db(settings.data_dir)
    assert doctor.ok and not doctor.warning and "tapes indexed" in doctor.detail, doctor.detail


async def test_start_up_re_indexes_a_replaced_tape_and_logs_a_memory_md_mismatch(
        start_bot, bot_settings, fake_telegram, fake_groq, caplog):  # noqa: F811
    settings = bot_settings()
    bot = await start_bot(settings)
    fake_groq.enqueue_text("¡Qué nombre tan bonito!")
    fake_telegram.push_text(ALICE, ALICE, SAID)
    await fake_telegram.wait_for_sent(1)
    fake_telegram.push_text(ALICE, ALICE, "/remember Tiene una gata llamada Luna")
    await fake_telegram.wait_for_sent(2)
    fake_telegram.push_text(ALICE, ALICE, "/search aspiradora")       # indexes the tape
    assert "aspiradora" in (await fake_telegram.wait_for_sent(3))[-1].text
    md = ChatPaths(settings.data_dir, str(ALICE)).memory_md
    await eventually(lambda: md.exists() and len(parse(md.read_text(encoding="utf-8"))) == 1)
    await bot.stop()

    # an older tape copied back by hand, and a memory only the database has
    tape = ChatPaths(settings.data_dir, str(ALICE)).tape
    tape.write_text('{"id":1,"timestamp":"2026-01-02T10:00:00Z","role":"user",'
                    '"content":"Mi perro se llama Rayo"}\n', encoding="utf-8")
    with sqlite3.connect(settings.data_dir / "rumi.db") as conn:
        conn.execute("INSERT INTO memories(chat_id, type, content, created_at, updated_at, "
                     "content_hash) VALUES (?, 'fact', 'Solo en la base', '2026-01-01', "
                     "'2026-01-01', 'x')", (str(ALICE),))
    doctor = check_memory_db(settings.data_dir)
    assert doctor.warning and "replaced since it was indexed" in doctor.detail
    assert "MEMORY.md shows 1, database has 2" in doctor.detail

    with caplog.at_level(logging.WARNING):
        await start_bot(settings)
    logged = caplog.text
    assert "changed since it was indexed" in logged
    assert "MEMORY.md shows 1, database has 2" in logged and "/memory" in logged
    doctor = check_memory_db(settings.data_dir)
    assert "replaced" not in doctor.detail and "not indexed" not in doctor.detail
    fake_telegram.push_text(ALICE, ALICE, "/search aspiradora")
    assert "No encontré nada" in (await fake_telegram.wait_for_sent(4))[-1].text
    fake_telegram.push_text(ALICE, ALICE, "/search rayo")
    assert "[#1] Mi perro se llama Rayo" in (await fake_telegram.wait_for_sent(5))[-1].text


async def test_imported_conversation_through_telegram_survives_a_lost_database(
        start_bot, bot_settings, fake_telegram, fake_groq):  # noqa: F811
    """/export in one chat, /import (a document with that caption) into a chat that already
    talked: /search shows the imported message as imp…:id, recall_original answers it byte for
    byte, and both still hold after rumi.db is deleted."""
    settings = bot_settings()
    bot = await start_bot(settings)
    fake_groq.enqueue_text("¡Qué nombre tan bonito!")
    fake_telegram.push_text(ALICE, ALICE, SAID)
    await fake_telegram.wait_for_sent(1)
    fake_telegram.push_text(ALICE, ALICE, "/export")
    sent = await fake_telegram.wait_for_sent(3)
    document = next(s for s in sent if s.method == "sendDocument")
    fake_groq.enqueue_text("Hola")
    fake_telegram.push_text(ALICE, OTHER, "Hola, soy el chat nuevo")
    await fake_telegram.wait_for_sent(4)
    fake_telegram.push_document(ALICE, OTHER, document.document_name, document.document,
                                caption="/import")
    assert "Importado" in (await fake_telegram.wait_for_sent(5))[-1].text
    [(tag, _)] = ChatPaths(settings.data_dir, str(OTHER)).imported_tapes()

    fake_telegram.push_text(ALICE, OTHER, "/search aspiradora")
    found = (await fake_telegram.wait_for_sent(6))[-1].text
    assert f"[#{tag}:1] Mi gata se llama Luna" in found, found
    fake_groq.enqueue_tool_call("recall_original", {"message_id": f"#{tag}:1"})
    fake_groq.enqueue_text("Luna.")
    fake_telegram.push_text(ALICE, OTHER, "¿Cómo se llama la gata del otro chat?")
    await fake_telegram.wait_for_sent(7)
    assert tool_results(fake_groq)[-1].endswith("\n" + SAID)
    await bot.stop()

    _damage(settings.data_dir / "rumi.db", "deleted")
    await start_bot(settings)
    said = await fake_telegram.wait_for_sent(9)      # one notice to each chat
    count = len(said)
    notices = {s.chat_id: s.text for s in said[7:]}
    assert "conversación (2 mensajes)" in notices[ALICE]
    assert notices[OTHER].startswith("🩹") and "conversación (6 mensajes)" in notices[OTHER]
    assert "0 recuerdos" not in notices[OTHER]
    fake_telegram.push_text(ALICE, OTHER, "/search aspiradora")
    assert (await fake_telegram.wait_for_sent(count + 1))[-1].text == found
    fake_groq.enqueue_tool_call("recall_original", {"message_id": f"{tag}:1"})
    fake_groq.enqueue_text("Luna.")
    fake_telegram.push_text(ALICE, OTHER, "¿Y cómo se llamaba?")
    await fake_telegram.wait_for_sent(count + 2)
    assert tool_results(fake_groq)[-1].endswith("\n" + SAID)

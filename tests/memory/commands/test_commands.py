"""Every memory command through the real Assistant: happy path and bad input; agent tools."""

from __future__ import annotations

import json

from rumi.base.replies import Attachment
from rumi.base.tools import ToolContext
from rumi.memory.commands import parse_remember
from rumi.memory.store.models import MemorySource, MemoryStatus, MemoryType, NewMemory
from rumi.paths import ChatPaths
from tests.memory.rig import extraction_json
from tests.prompt_shape import automatic


def test_parse_remember():
    assert parse_remember("trabajo: Google") == ("trabajo", "Google")
    assert parse_remember("Nombre del perro: Toby") == ("nombre_del_perro", "Toby")
    assert parse_remember("Mira esto: https://x.y") == ("mira_esto", "https://x.y")
    assert parse_remember("Me gusta el café con leche")[0] is None
    long_key = "esto es una frase larga con dos puntos: y más"
    assert parse_remember(long_key) == (None, long_key)


async def test_remember_free_text_and_key_value(rig):
    reply = await rig.say("200", "/remember Me gusta el café con leche")
    assert reply.text.startswith("✅ Lo recordaré") and "café con leche" in reply.text
    reply = await rig.say("200", "/remember ciudad: Arequipa")
    assert "ciudad: Arequipa" in reply.text
    mems = {m.content: m for m in await rig.store.list("200")}
    assert mems["Arequipa"].key == "ciudad"
    assert all(m.source == MemorySource.EXPLICIT and m.importance >= 0.9 for m in mems.values())
    # a new value for the same key replaces the old one (history kept)
    await rig.say("200", "/remember ciudad: Trujillo")
    assert [m.content for m in await rig.store.list("200", key="ciudad")] == ["Trujillo"]
    assert (await rig.store.get("200", mems["Arequipa"].id)).status == MemoryStatus.SUPERSEDED
    md = ChatPaths(rig.settings.data_dir, "200").memory_md.read_text(encoding="utf-8")
    assert "**ciudad**: Trujillo" in md and "Arequipa" not in md


async def test_remember_bad_input(rig):
    reply = await rig.say("200", "/remember   ")
    assert "Dime qué recordar" in reply.text
    reply = await rig.say("200", "/remember " + "x" * 30_000)
    assert reply.is_error and "No pude guardarlo" in reply.text
    assert await rig.store.list("200") == []


async def test_forget_single_match_removes_from_store_and_memory_md(rig):
    await rig.say("201", "/remember mascota: Tiene un gato llamado Michi")
    await rig.say("201", "/remember Le gusta el ajedrez")
    [michi] = await rig.store.list("201", key="mascota")
    reply = await rig.say("201", "/forget mascota")
    # the reply names what went by id, never repeating the forgotten text
    assert f"Olvidado: memoria #{michi.id}." in reply.text and "Michi" not in reply.text
    assert [m.content for m in await rig.store.list("201")] == ["Le gusta el ajedrez"]
    md = ChatPaths(rig.settings.data_dir, "201").memory_md.read_text(encoding="utf-8")
    assert "Michi" not in md and "ajedrez" in md


async def test_forget_several_matches_asks_then_follow_up_choice(rig):
    for text in ("Le gusta el té verde", "Le gusta el té negro", "Le gusta el fútbol"):
        await rig.say("202", f"/remember {text}")
    reply = await rig.say("202", "/forget té")
    assert "Encontré 2 recuerdos" in reply.text and "/forget <número>" in reply.text
    assert len(await rig.store.list("202")) == 3           # nothing removed yet
    assert "entre 1 y 2" in (await rig.say("202", "/forget 7")).text
    first_line = [ln for ln in reply.text.splitlines() if ln.startswith("1. ")][0]
    reply = await rig.say("202", "/forget 1")
    chosen = first_line[3:].split(" ", 1)[1]
    assert "Olvidado: memoria #" in reply.text and chosen not in reply.text
    assert chosen not in [m.content for m in await rig.store.list("202")]
    assert len(await rig.store.list("202")) == 2
    # "todos" forgets every listed match
    await rig.say("202", "/remember Le gusta el té rojo")
    await rig.say("202", "/forget té")
    await rig.say("202", "/forget todos")
    assert [m.content for m in await rig.store.list("202")] == ["Le gusta el fútbol"]


async def test_forget_choice_buttons_name_ids_and_stale_answers_never_search(rig):
    """The buttons carry `/forget #id`; "/forget 2" or "todos" with no list pending is not
    a search for "2" (that could forget an unrelated memory)."""
    await rig.say("213", "/remember Nació el 2 de mayo")
    await rig.say("213", "/remember Tiene 2 hermanos")
    await rig.say("213", "/remember Le gusta el té verde")
    await rig.say("213", "/remember Le gusta el té negro")
    reply = await rig.say("213", "/forget té")
    ids = {f"/forget #{m.id}" for m in await rig.store.list("213") if "té" in m.content}
    assert {command for row in reply.buttons[:-1] for _, command in row} == ids
    assert [command for _, command in reply.buttons[-1]] == ["/forget todos", "/forget no"]
    assert "no olvido nada" in (await rig.say("213", "/forget no")).text
    for stale in ("/forget 2", "/forget todos"):
        assert "caducó" in (await rig.say("213", stale)).text
    assert len(await rig.store.list("213")) == 4


async def test_forget_bad_input_and_no_match(rig):
    assert "Dime qué olvidar" in (await rig.say("203", "/forget")).text
    assert "No encontré nada" in (await rig.say("203", "/forget unicornios")).text
    assert "No encontré nada" in (await rig.say("203", "/forget #12345")).text


async def test_memory_shows_counts_recent_and_file_size(rig):
    assert "Recuerdos activos: 0" in (await rig.say("204", "/memory")).text
    await rig.say("204", "/remember trabajo: Trabaja en un banco")
    await rig.store.save("204", NewMemory("Prefiere Python", type=MemoryType.PREFERENCE))
    text = (await rig.say("204", "/memory")).text
    assert "Recuerdos activos: 2" in text and "hechos: 1" in text and "preferencias: 1" in text
    assert "trabajo: Trabaja en un banco" in text and "MEMORY.md:" in text and "bytes" in text


async def test_search_finds_memory_history_and_daily_logs(rig, fake_groq):
    fake_groq.enqueue_text("¡Buena elección el violín!")
    await rig.say("205", "Estoy aprendiendo violín")
    await rig.say("205", "/remember Toca el violín desde 2024")
    await rig.memory.journal.append_events("205", ["Primera clase de violín"])
    text = (await rig.say("205", "/search violín")).text
    assert "🧠" in text and "Toca el violín" in text
    assert "💬 " in text and "Estoy aprendiendo violín" in text
    assert "📓 2026-06-01" in text and "Primera clase" in text
    assert "Dime qué buscar" in (await rig.say("205", "/search")).text
    assert "No encontré nada" in (await rig.say("205", "/search zanahoria")).text


async def test_clear_without_messages_and_reset_without_session(rig):
    reply = await rig.say("206", "/clear")
    assert "Conversación vaciada (0 elementos)" in reply.text
    reply = await rig.say("207", "/reset")
    assert "Sesión reiniciada" in reply.text


async def test_import_without_document_explains(rig):
    reply = await rig.say("208", "/import")
    assert "con el pie de mensaje /import" in reply.text
    reply = await rig.say("208", "/import", attachment=Attachment("x.tar.gz", b"not a tar"))
    assert reply.is_error and "No importé" in reply.text and "No se cambió nada" in reply.text


async def test_agent_tools(rig):
    ctx = ToolContext(chat_id="209")
    result = await rig.tools.execute("remember", json.dumps(
        {"content": "Su cumpleaños es el 3 de mayo", "key": "cumpleaños"}), ctx)
    assert not result.is_error and "cumpleaños" in result.content
    [saved] = await rig.store.list("209", key="cumpleaños")
    # the model may have been talked into it: not marked as the user's own words
    assert (saved.source, saved.importance, saved.confidence) == (MemorySource.AUTO, 0.6, 0.8)
    result = await rig.tools.execute("search_memory", json.dumps({"query": "cumpleaños"}), ctx)
    assert "3 de mayo" in result.content
    await rig.tools.execute("remember", json.dumps({"content": "Su cumpleaños favorito fue el 30"}),
                            ctx)
    result = await rig.tools.execute("forget", json.dumps({"query": "su cumpleaños"}), ctx)
    assert result.is_error and "Coinciden varios recuerdos" in result.content  # es
    mid = (await rig.store.list("209", key="cumpleaños"))[0].id
    result = await rig.tools.execute("forget", json.dumps({"memory_id": mid}), ctx)
    assert not result.is_error and "Olvidados" in result.content
    result = await rig.tools.execute("remember", json.dumps({"content": "x", "type": "bogus"}), ctx)
    assert result.is_error
    # another chat sees nothing of this one
    other = await rig.tools.execute("search_memory", json.dumps({"query": "cumpleaños"}),
                                    ToolContext(chat_id="210"))
    assert other.content == "Sin resultados."


async def test_recall_block_includes_today_and_yesterday_logs(rig, fake_groq):
    await rig.memory.journal.append_events("211", ["Visitó a su abuela"])
    fake_groq.enqueue_text("Claro.")
    fake_groq.enqueue_text(extraction_json())
    await rig.say("211", "¿Qué hice hoy?")
    trailing = automatic(fake_groq.requests[0])
    assert "Registro de hoy y ayer" in trailing and "Visitó a su abuela" in trailing


async def test_import_reports_memory_lines_it_could_not_take(rig):
    """A bad line in memories.jsonl does not stop the import, and the person is told."""
    from rumi.memory.archive.chat_archive import build_archive

    good = json.dumps({"content": "Toca la quena", "type": "fact"})
    bad = json.dumps({"content": "", "type": "fact"})
    data = build_archive("1", {}, [good, bad])
    reply = await rig.say("212", "/import", attachment=Attachment("a.tar.gz", data))
    assert not reply.is_error and "Importado: 1 recuerdos nuevos" in reply.text
    assert "1 recuerdos de memories.jsonl no eran válidos" in reply.text
    assert "línea 2:" in reply.text
    assert [m.content for m in await rig.store.list("212")] == ["Toca la quena"]

"""/search and `search_memory` with relative time, through the real Assistant (chat zone:
the configured Europe/Madrid; the rig's clock says Monday 1 June 2026, 12:00 in Madrid)."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from rumi.base.tools import ToolContext
from rumi.memory.store.models import MemoryType, NewMemory
from rumi.paths import ChatPaths
from tests.prompt_shape import automatic


async def seed(rig, chat: str) -> None:
    """Memories, tape messages and daily logs on Sunday 31 May (ayer) and earlier."""
    for text, when in (("Cena de paella con Ana en Valencia", datetime(2026, 5, 31, 19)),
                       ("Paella en la playa con Jorge", datetime(2026, 5, 20, 12))):
        await rig.store.save(chat, NewMemory(content=text, type=MemoryType.EPISODIC,
                                             created_at=when.replace(tzinfo=UTC)))
    tape = ChatPaths(rig.settings.data_dir, chat).tape
    tape.parent.mkdir(parents=True, exist_ok=True)
    lines = [{"id": 1, "timestamp": "2026-05-18T10:00:00Z", "role": "user",
              "content": "Mañana hago paella para todos"},
             {"id": 2, "timestamp": "2026-05-31T21:30:00Z", "role": "user",
              "content": "Qué cansada estoy del viaje"}]
    tape.write_text("".join(json.dumps(r) + "\n" for r in lines), encoding="utf-8")
    journal = rig.memory.journal
    await journal.append_events(chat, ["Volvió de Valencia en tren"],
                                day=datetime(2026, 5, 31).date())
    await journal.append_events(chat, ["Día de playa"], day=datetime(2026, 5, 20).date())


async def test_words_and_a_time_put_that_span_first(rig):
    await seed(rig, "300")
    text = (await rig.say("300", "/search paella ayer")).text
    lines = text.splitlines()[2:]  # after the header and the period line
    assert text.splitlines()[1].startswith("🗓️ «ayer» = 31/05/2026")
    assert "Ana" in lines[0]  # yesterday's memory first, although "ayer" is in neither
    assert any("Jorge" in line for line in lines[1:])  # favoured, not filtered
    assert any("Mañana hago paella" in line for line in lines)  # "ayer" was not searched for


async def test_only_a_time_lists_what_that_span_holds(rig):
    await seed(rig, "301")
    text = (await rig.say("301", "/search ayer")).text
    # the tape message at 21:30 UTC on 31 May is 23:30 in Madrid: still "ayer" there
    assert "Ana" in text and "cansada" in text and "Volvió de Valencia" in text
    assert "Jorge" not in text and "Día de playa" not in text and "Mañana hago" not in text
    # weeks start on Monday: 25–31 May, then 18–24 May
    text = (await rig.say("301", "/search la semana pasada")).text
    assert "Ana" in text and "Jorge" not in text
    text = (await rig.say("301", "/search hace dos semanas")).text
    assert "Jorge" in text and "Mañana hago paella" in text and "Día de playa" in text
    assert "Ana" not in text and "cansada" not in text
    text = (await rig.say("301", "/search el mes pasado")).text  # May: everything
    assert all(w in text for w in ("Ana", "Jorge", "cansada", "Mañana hago", "Día de playa"))
    text = (await rig.say("301", "/search el año pasado")).text
    assert "No encontré nada" in text  # 2025 holds nothing


async def test_search_memory_tool_understands_relative_time(rig):
    await seed(rig, "302")
    result = await rig.tools.execute("search_memory", json.dumps({"query": "paella ayer"}),
                                     ToolContext(chat_id="302"))
    assert not result.is_error and result.content.splitlines()[0].count("Ana") == 1
    # a look-alike is not a time: "hace falta" is searched as words
    result = await rig.tools.execute("search_memory", json.dumps({"query": "hace falta"}),
                                     ToolContext(chat_id="302"))
    assert result.content == "Sin resultados."


async def test_prompt_gets_the_daily_log_of_the_day_asked_about(rig, fake_groq):
    """Monday 1 June: "el miércoles" is 27 May, whose log joins the recall block; other days'
    logs do not, and a message without a time adds nothing."""
    journal = rig.memory.journal
    await journal.append_events("303", ["Fue al dentista por la muela"],
                                day=datetime(2026, 5, 27).date())
    await journal.append_events("303", ["Cena con Ana"], day=datetime(2026, 5, 20).date())
    fake_groq.enqueue_text("Fuiste al dentista.")
    fake_groq.enqueue_text("Vale.")
    await rig.say("303", "¿Qué hice el miércoles?")
    trailing = automatic(fake_groq.requests[0])
    assert "Registro de los días por los que pregunta" in trailing
    assert "dentista" in trailing and "Cena con Ana" not in trailing
    await rig.say("303", "Cuéntame un chiste de dentistas")
    chat = [r for r in fake_groq.requests if "response_format" not in r][-1]
    assert "chiste de dentistas" in json.dumps(chat["messages"], ensure_ascii=False)
    assert "Registro de los días por los que pregunta" not in automatic(chat)


def test_the_period_shown_reads_as_the_chat_s_language() -> None:
    """/search «last week» = … : the dates follow the chat's language (issue 27)."""
    from datetime import timedelta
    from zoneinfo import ZoneInfo

    from rumi import messages as msg
    from rumi.memory.recall.relative_time import Expression, Span
    from rumi.memory.search_command import period_text

    zone = ZoneInfo("Europe/Madrid")
    start = datetime(2026, 11, 15, 23, tzinfo=UTC)   # local midnight of the 16th
    week = Span(Expression("last week", 0, 9, "week", ""), start, start + timedelta(days=7), "week")
    evening = Span(Expression("tonight", 0, 7, "part", ""), start - timedelta(hours=4),
                   start - timedelta(hours=1), "part")
    with msg.use_language("en"):
        assert period_text(week, zone) == "16 Nov 2026–22 Nov 2026"
        assert period_text(evening, zone) == "15 Nov 2026, 20:00–23:00"
    with msg.use_language("es"):
        assert period_text(week, zone) == "16/11/2026–22/11/2026"
        assert period_text(evening, zone) == "15/11/2026 20:00–23:00"

"""Relative time in recall: the resolver (fixed "now", Madrid vs UTC) and recall favouring the
span through the real store."""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest

from rumi.memory.recall import relative_time
from rumi.memory.recall.query import plan
from rumi.memory.recall.retrieval import MemoryRecall
from rumi.memory.store.memories import MemoryStore
from rumi.memory.store.models import MemoryType, NewMemory

MADRID = ZoneInfo("Europe/Madrid")
UTC_ZONE = ZoneInfo("UTC")
# Wednesday 25 November 2026, 10:30 in Madrid (09:30 UTC)
WEDNESDAY = datetime(2026, 11, 25, 9, 30, tzinfo=UTC)


def local_spans(text: str, now: datetime = WEDNESDAY,
                tz: ZoneInfo = MADRID) -> list[tuple[str, str, str]]:
    """(period, local start, local end) of each span, minutes precision."""
    return [(s.period, s.start.astimezone(tz).strftime("%Y-%m-%d %H:%M"),
             s.end.astimezone(tz).strftime("%Y-%m-%d %H:%M"))
            for s in relative_time.resolve(text, now, tz)]


@pytest.mark.parametrize(("text", "expected"), [
    ("¿qué comí ayer?", ("day", "2026-11-24 00:00", "2026-11-25 00:00")),
    ("¿y anteayer?", ("day", "2026-11-23 00:00", "2026-11-24 00:00")),
    ("¿de qué hablamos la semana pasada?", ("week", "2026-11-16 00:00", "2026-11-23 00:00")),
    ("¿qué pasó el mes pasado?", ("month", "2026-10-01 00:00", "2026-11-01 00:00")),
    ("¿qué te conté hace tres días?", ("day", "2026-11-22 00:00", "2026-11-23 00:00")),
    ("¿qué te dije el lunes?", ("day", "2026-11-23 00:00", "2026-11-24 00:00")),
    ("¿qué hice esta mañana?", ("morning", "2026-11-25 05:00", "2026-11-25 13:00")),
    ("¿qué cené anoche?", ("night", "2026-11-24 20:00", "2026-11-25 05:00")),
    ("¿qué pasó ayer por la tarde?", ("afternoon", "2026-11-24 12:00", "2026-11-24 21:00")),
    ("¿qué hice el fin de semana?", ("weekend", "2026-11-21 00:00", "2026-11-23 00:00")),
    ("¿qué me dijiste hace 2 semanas?", ("week", "2026-11-09 00:00", "2026-11-16 00:00")),
    ("what did I say last week?", ("week", "2026-11-16 00:00", "2026-11-23 00:00")),
    ("what happened two days ago?", ("day", "2026-11-23 00:00", "2026-11-24 00:00")),
    ("what did I eat yesterday?", ("day", "2026-11-24 00:00", "2026-11-25 00:00")),
    ("what did I do this morning?", ("morning", "2026-11-25 05:00", "2026-11-25 13:00")),
])
def test_expressions_become_local_spans(text: str, expected: tuple[str, str, str]) -> None:
    assert local_spans(text) == [expected]


def test_weeks_start_on_monday_and_el_lunes_is_the_last_past_monday() -> None:
    monday = datetime(2026, 11, 23, 9, 0, tzinfo=UTC)
    # asked on a Monday, "el lunes" is a week ago, never today
    assert local_spans("¿qué hice el lunes?", monday) == [
        ("day", "2026-11-16 00:00", "2026-11-17 00:00")]
    assert local_spans("esta semana", monday) == [("week", "2026-11-23 00:00", "2026-11-30 00:00")]
    sunday = datetime(2026, 11, 29, 21, 0, tzinfo=UTC)
    assert local_spans("la semana pasada", sunday) == [
        ("week", "2026-11-16 00:00", "2026-11-23 00:00")]
    # the weekend: the last Saturday before today, so on a Sunday it is this one
    assert local_spans("el finde", sunday) == [("weekend", "2026-11-28 00:00", "2026-11-30 00:00")]
    saturday = datetime(2026, 11, 28, 10, 0, tzinfo=UTC)
    assert local_spans("last weekend", saturday) == [
        ("weekend", "2026-11-21 00:00", "2026-11-23 00:00")]


def test_madrid_and_utc_disagree_near_midnight() -> None:
    # 00:30 on Wednesday 25 in Madrid is still 23:30 on Tuesday 24 in UTC
    late = datetime(2026, 11, 24, 23, 30, tzinfo=UTC)
    assert local_spans("¿qué hice ayer?", late, MADRID) == [
        ("day", "2026-11-24 00:00", "2026-11-25 00:00")]
    assert local_spans("¿qué hice ayer?", late, UTC_ZONE) == [
        ("day", "2026-11-23 00:00", "2026-11-24 00:00")]
    [span] = relative_time.resolve("ayer", late, MADRID)
    assert span.start == datetime(2026, 11, 23, 23, 0, tzinfo=UTC)  # Madrid midnight, in UTC
    assert span.contains(datetime(2026, 11, 24, 22, 59, tzinfo=UTC))
    assert not span.contains(datetime(2026, 11, 24, 23, 0, tzinfo=UTC))


def test_summer_time_changes_the_utc_bounds() -> None:
    july = datetime(2026, 7, 15, 10, 0, tzinfo=UTC)
    [span] = relative_time.resolve("ayer", july, MADRID)
    assert span.start == datetime(2026, 7, 13, 22, 0, tzinfo=UTC)  # CEST: UTC+2


@pytest.mark.parametrize("text", [
    "hace falta comprar leche",
    "hace calor en Sevilla",
    "el lunes que viene tengo médico",
    "el próximo lunes voy al dentista",
    "la semana que viene empiezo",
    "mañana tengo cita",
    "pasado mañana es fiesta",
    "hoy en día nadie escribe cartas",
    "mi perro se llama Toby",
    "¿cuál es mi película favorita?",
    "may I ask something?",
    "see you next monday",
    "cada fin de semana voy al pueblo",
    "los lunes tengo inglés",
    "21 de mayo de 2023",
])
def test_no_false_spans(text: str) -> None:
    assert relative_time.find(text) == []
    assert relative_time.resolve(text, WEDNESDAY, MADRID) == []


def test_time_words_leave_the_keyword_terms() -> None:
    spans = relative_time.resolve("¿qué cené ayer con Marta?", WEDNESDAY, MADRID)
    query = plan("¿qué cené ayer con Marta?", spans)
    assert query.terms == ("cené", "marta") and "ayer" not in query.terms
    assert len(query.relative) == 1 and query.dates == query.relative
    assert plan("¿qué cené ayer con Marta?").terms == ("cené", "ayer", "marta")


async def save(store: MemoryStore, text: str, local: str) -> int:
    when = datetime.fromisoformat(local).replace(tzinfo=MADRID)
    result = await store.save("1", NewMemory(content=text, type=MemoryType.EPISODIC,
                                             created_at=when, importance=0.5))
    return result.memory.id


async def madrid(chat_id: str) -> ZoneInfo:
    return MADRID


async def test_recall_favours_the_span_through_the_real_store(kw_store: MemoryStore) -> None:
    """"la semana pasada" asked on Monday 1 June 2026 (Madrid): the cinema trip of that week
    wins over a newer and an older one; without time understanding the newest wins."""
    asked = datetime(2026, 6, 1, 12, 0, tzinfo=MADRID)
    await save(kw_store, "Fui al cine con Ana a ver una comedia", "2026-05-12T20:00")
    lucas = await save(kw_store, "Fui al cine con Lucas a ver un documental", "2026-05-27T20:00")
    await save(kw_store, "Fui al cine con Pilar a ver un musical", "2026-06-01T09:00")
    question = "¿Con quién fui al cine la semana pasada?"
    with_time = MemoryRecall(kw_store, kw_store.settings, timezone=madrid)
    without = MemoryRecall(kw_store, kw_store.settings, timezone=madrid, relative_dates=False)
    found = await with_time.recall("1", question, k=3, now=asked, touch=False)
    assert found[0].memory.id == lucas
    found = await without.recall("1", question, k=3, now=asked, touch=False)
    assert found[0].memory.id != lucas


async def test_a_question_only_about_time_finds_that_span(kw_store: MemoryStore) -> None:
    """"¿Qué hice ayer?" matches no stored word: the memories of yesterday (Madrid) are the
    candidates, and one said at 00:30 Madrid (still the day before in UTC) counts as ayer."""
    asked = datetime(2026, 6, 2, 10, 0, tzinfo=MADRID)
    late = await save(kw_store, "Terminé la maqueta del proyecto", "2026-06-01T00:30")
    walk = await save(kw_store, "Paseo largo por el Retiro", "2026-06-01T18:00")
    await save(kw_store, "Compré pan y fruta", "2026-05-31T23:30")
    await save(kw_store, "Llamé a mi tía Rosa", "2026-06-02T08:00")
    recall = MemoryRecall(kw_store, kw_store.settings, timezone=madrid)
    found = await recall.recall("1", "¿Qué hice ayer?", k=5, now=asked, touch=False)
    assert {s.memory.id for s in found} == {late, walk}

    async def utc(chat_id: str) -> ZoneInfo:
        return UTC_ZONE

    in_utc = MemoryRecall(kw_store, kw_store.settings, timezone=utc)
    found = await in_utc.recall("1", "¿Qué hice ayer?", k=5, now=asked, touch=False)
    assert late not in {s.memory.id for s in found}  # 22:30 UTC on 31 May


async def test_future_and_look_alike_phrases_change_nothing(kw_store: MemoryStore) -> None:
    asked = datetime(2026, 6, 3, 12, 0, tzinfo=MADRID)
    await save(kw_store, "El lunes fui al médico por la espalda", "2026-06-01T10:00")
    newest = await save(kw_store, "Médico: revisión anual pedida", "2026-06-02T10:00")
    recall = MemoryRecall(kw_store, kw_store.settings, timezone=madrid)
    plain = MemoryRecall(kw_store, kw_store.settings, relative_dates=False)
    for question in ("¿Hace falta ir al médico el lunes que viene?",
                     "¿Qué médico me toca el próximo lunes?"):
        assert await recall.spans("1", question, asked) == []
        ours = [s.memory.id for s in await recall.recall("1", question, now=asked, touch=False)]
        base = [s.memory.id for s in await plain.recall("1", question, now=asked, touch=False)]
        assert ours == base and newest in ours

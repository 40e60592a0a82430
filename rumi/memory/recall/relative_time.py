"""Time the way people say it: "ayer", "la semana pasada", "hace tres días", "last week".

Recall and /search turn these expressions into spans of time in the chat's timezone, counted
from the moment of the question. Two layers, each doing what it is good at:

- **Finding** the expressions is ours: one small pattern per expression family (below). The
  `dateparser` library's own text search cannot be used for it: in a sentence it misses "la
  semana pasada", "el mes pasado" and "el viernes", and it reads ordinary words as dates ("mi"
  → miércoles, "we", "sun", "may", "a second"). Future forms ("el lunes que viene", "el
  próximo lunes", "next week") and look-alikes ("hace falta", "mañana" = tomorrow) are never
  matched, because recall asks about the past.
- **Resolving** a found expression is `dateparser`'s (`DateDataParser` with the question's
  local time as `RELATIVE_BASE`, past dates preferred): it gives the date and its granularity
  (day, week, month, year). Each expression is first put in one canonical form it resolves
  ("hace tres días" → "3 days ago", "la semana pasada" → "last week", "el lunes" → "lunes",
  "antier" → "anteayer"): it returned nothing for "hace tres días" or "el lunes".
- Spans are ours: the granularity becomes a range — a day, a week starting on Monday, a
  calendar month or year — and parts of the day ("esta mañana", "anoche", "yesterday
  afternoon") and weekends, which dateparser does not resolve in Spanish, are fixed windows.

Only `resolve` imports dateparser (≈0.3 s the first time), and only when `mentions` matched.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from typing import Any
from zoneinfo import ZoneInfo

# Parts of the day as local [start hour, end hour) — the end may pass midnight (night).
PARTS: dict[str, tuple[int, int]] = {
    "morning": (5, 13), "afternoon": (12, 21), "evening": (18, 24), "night": (20, 29),
}
_PART_WORDS = {"mañana": "morning", "manana": "morning", "tarde": "afternoon",
               "noche": "night", "morning": "morning", "afternoon": "afternoon",
               "evening": "evening", "night": "night"}
_NUMBERS = {
    "un": 1, "una": 1, "uno": 1, "dos": 2, "tres": 3, "cuatro": 4, "cinco": 5, "seis": 6,
    "siete": 7, "ocho": 8, "nueve": 9, "diez": 10, "once": 11, "doce": 12, "quince": 15,
    "veinte": 20, "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5,
    "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12,
    "fifteen": 15, "twenty": 20,
}
_WEEKDAYS = {"lunes": "lunes", "martes": "martes", "miercoles": "miércoles",
             "miércoles": "miércoles", "jueves": "jueves", "viernes": "viernes",
             "sabado": "sábado", "sábado": "sábado", "domingo": "domingo",
             "monday": "monday", "tuesday": "tuesday", "wednesday": "wednesday",
             "thursday": "thursday", "friday": "friday", "saturday": "saturday",
             "sunday": "sunday"}

_NUM = r"(?P<n>\d{1,2}|" + "|".join(sorted(_NUMBERS, key=len, reverse=True)) + ")"
_DAY_ES = r"(?P<wd>lunes|martes|mi[ée]rcoles|jueves|viernes|s[áa]bado|domingo)"
_DAY_EN = r"(?P<wd>monday|tuesday|wednesday|thursday|friday|saturday|sunday)"
_PART_ES = r"(?P<part>ma[ñn]ana|tarde|noche)"
_PART_EN = r"(?P<part>morning|afternoon|evening|night)"
# Future qualifiers after an expression ("el lunes que viene", "la semana próxima").
_NOT_FUTURE = (r"(?!\s+(?:que\s+viene|pr[óo]xim[oa]|siguiente|de\s+la\s+semana\s+que\s+viene"
               r"|de\s+la\s+pr[óo]xima))")
_BEFORE_NOT_FUTURE = r"(?<!pr[óo]ximo\s)(?<!next\s)(?<!coming\s)"

# (kind, pattern), case-insensitive; where two matches overlap, the family listed first wins.
_FAMILIES: list[tuple[str, str]] = [
    ("anteayer", r"\b(?:anteayer|antier|antes\s+de\s+ayer|the\s+day\s+before\s+yesterday)\b"),
    ("yesterday_part", rf"\bayer\s+(?:por\s+la\s+|a\s+la\s+)?{_PART_ES}\b"),
    ("yesterday_part", rf"\byesterday\s+{_PART_EN}\b"),
    ("yesterday", r"\b(?:ayer|yesterday)\b"),
    ("last_night", r"\b(?:anoche|last\s+night)\b"),
    ("today_part", rf"\b(?:esta|hoy\s+por\s+la)\s+{_PART_ES}\b"),
    ("today_part", rf"\b(?:this|earlier\s+this)\s+{_PART_EN}\b"),
    ("today", r"(?<!por\s)\b(?:hoy|today)\b(?!\s+(?:en\s+d[íi]a|por\s+hoy))"),
    ("weekend", r"\bel\s+(?:fin\s+de\s+semana|finde)(?:\s+pasado)?\b" + _NOT_FUTURE),
    ("weekend", r"\b(?:last|over\s+the|this\s+past)\s+weekend\b"),
    ("last", r"\b(?:la\s+)?(?P<unit>semana)\s+pasada\b|\b(?:la\s+)?pasada\s+(?P<unit2>semana)\b"),
    ("last", r"\b(?:el\s+)?(?P<unit>mes|a[ñn]o)\s+pasado\b"
             r"|\b(?:el\s+)?pasado\s+(?P<unit2>mes|a[ñn]o)\b"),
    ("last", r"\blast\s+(?P<unit>week|month|year)\b"),
    ("this", r"\b(?:esta\s+(?P<unit>semana)|este\s+(?P<unit2>mes|a[ñn]o))\b" + _NOT_FUTURE),
    ("this", r"\bthis\s+(?P<unit>week|month|year)\b"),
    ("before_last", r"\b(?:la\s+)?semana\s+antepasada\b|\bthe\s+week\s+before\s+last\b"),
    ("ago", rf"\bhace\s+{_NUM}\s+(?P<unit>d[íi]as?|semanas?|mes(?:es)?|a[ñn]os?)\b"),
    ("ago", rf"\b{_NUM}\s+(?P<unit>days?|weeks?|months?|years?)\s+ago\b"),
    ("weekday", rf"\b(?:d?el\s+(?:pasado\s+)?){_DAY_ES}\b(?:\s+pasado\b)?" + _NOT_FUTURE),
    ("weekday", rf"{_BEFORE_NOT_FUTURE}\b(?:on\s+|last\s+)?{_DAY_EN}\b"),
]
_COMPILED = [(kind, re.compile(p, re.IGNORECASE)) for kind, p in _FAMILIES]
_ANY = re.compile("|".join(f"(?:{re.sub(r'[?]P<[a-z0-9]+>', '', p)})" for _, p in _FAMILIES),
                  re.IGNORECASE)


@dataclass(frozen=True)
class Expression:
    """One relative expression found in a text: where it is and how to resolve it."""

    text: str
    start: int
    end: int
    kind: str
    words: str  # what dateparser is given ("" when resolved by hand)
    part: str | None = None  # a part of the day, when the expression names one


@dataclass(frozen=True)
class Span:
    """[start, end) in UTC for one expression (local midnights or hours, converted)."""

    expression: Expression
    start: datetime
    end: datetime
    period: str  # day, week, month, year, part of the day or weekend

    def contains(self, when: datetime) -> bool:
        return self.start <= when < self.end


def mentions(text: str) -> bool:
    """Cheap check (no dateparser): does `text` hold any relative time expression?"""
    return isinstance(text, str) and _ANY.search(text) is not None


def find(text: str) -> list[Expression]:
    """The relative expressions of `text`, in order; overlapping matches go to the first
    family listed (so "ayer por la tarde" is one expression, not "ayer" and "tarde")."""
    if not mentions(text):
        return []
    taken: list[Expression] = []
    for kind, pattern in _COMPILED:
        for m in pattern.finditer(text):
            if any(m.start() < e.end and e.start < m.end() for e in taken):
                continue
            found = _expression(kind, m)
            if found is not None:
                taken.append(found)
    return sorted(taken, key=lambda e: e.start)


def _expression(kind: str, m: re.Match[str]) -> Expression | None:
    groups = {k: v.lower() for k, v in m.groupdict().items() if v}
    part = _PART_WORDS.get(groups.get("part", ""))
    unit = groups.get("unit") or groups.get("unit2") or ""
    words = ""
    if kind == "anteayer":
        words = "anteayer"
    elif kind == "yesterday":
        words = "ayer"
    elif kind == "today":
        words = "hoy"
    elif kind in ("last", "this"):
        words = {"semana": "week", "mes": "month", "año": "year", "ano": "year"}.get(unit, unit)
        words = f"{'last' if kind == 'last' else 'this'} {words}"
    elif kind == "before_last":
        words = "2 weeks ago"
    elif kind == "ago":
        n = groups["n"]
        count = int(n) if n.isdigit() else _NUMBERS[n]
        if count <= 0:
            return None
        words = f"{count} {_unit_en(unit)} ago"
    elif kind == "weekday":
        words = _WEEKDAYS[groups["wd"]]
    return Expression(m.group(0), m.start(), m.end(), kind, words, part)


def _unit_en(unit: str) -> str:
    """A Spanish or English time unit, singular or plural → the English plural."""
    if unit.startswith(("d", "dí")):
        return "days"
    if unit.startswith(("semana", "week")):
        return "weeks"
    if unit.startswith(("mes", "month")):
        return "months"
    return "years"


def resolve(text: str, now: datetime, tz: ZoneInfo) -> list[Span]:
    """Spans (UTC) for every relative expression in `text`, asked at `now`, in zone `tz`.

    Blocking (dateparser is pure Python and loads its language data on first use): call it
    through `asyncio.to_thread` from async code.
    """
    expressions = find(text)
    if not expressions:
        return []
    local = _aware(now).astimezone(tz)
    spans: list[Span] = []
    for expr in expressions:
        span = _span(expr, local, tz)
        if span is not None:
            spans.append(span)
    return spans


def _span(expr: Expression, local: datetime, tz: ZoneInfo) -> Span | None:
    today = local.date()
    if expr.kind == "yesterday_part":
        return _part_span(expr, today - timedelta(days=1), expr.part or "morning", tz)
    if expr.kind == "last_night":
        return _part_span(expr, today - timedelta(days=1), "night", tz)
    if expr.kind == "today_part":
        return _part_span(expr, today, expr.part or "morning", tz)
    if expr.kind == "weekend":
        # the last Saturday before today (asked on a Saturday: a week ago)
        saturday = today - timedelta(days=(today.weekday() - 5) % 7 or 7)
        return _make(expr, saturday, saturday + timedelta(days=2), "weekend", tz)
    parsed = _parse(expr.words, local.replace(tzinfo=None))
    if parsed is None:
        return None
    day, period = parsed
    if period == "week":
        monday = day - timedelta(days=day.weekday())
        return _make(expr, monday, monday + timedelta(days=7), "week", tz)
    if period == "month":
        first = day.replace(day=1)
        following = (first + timedelta(days=32)).replace(day=1)
        return _make(expr, first, following, "month", tz)
    if period == "year":
        return _make(expr, date(day.year, 1, 1), date(day.year + 1, 1, 1), "year", tz)
    return _make(expr, day, day + timedelta(days=1), "day", tz)


def _parse(words: str, base: datetime) -> tuple[date, str] | None:
    """dateparser's date and granularity for `words` relative to local naive `base`."""
    from dateparser.date import DateDataParser

    parser = DateDataParser(languages=["es", "en"], settings=_settings(base))
    data: Any = parser.get_date_data(words)
    if data is None or data.date_obj is None:
        return None
    period = data.period if data.period in ("day", "week", "month", "year") else "day"
    return data.date_obj.date(), period


def _settings(base: datetime) -> dict[str, Any]:
    return {"RELATIVE_BASE": base, "PREFER_DATES_FROM": "past", "RETURN_TIME_AS_PERIOD": True}


def _part_span(expr: Expression, day: date, part: str, tz: ZoneInfo) -> Span:
    first, last = PARTS[part]
    start = datetime.combine(day, time(first), tzinfo=tz)
    end = datetime.combine(day + timedelta(days=last // 24), time(last % 24), tzinfo=tz)
    return Span(expr, start.astimezone(UTC), end.astimezone(UTC), part)


def _make(expr: Expression, first: date, end: date, period: str, tz: ZoneInfo) -> Span:
    start = datetime.combine(first, time(0), tzinfo=tz).astimezone(UTC)
    stop = datetime.combine(end, time(0), tzinfo=tz).astimezone(UTC)
    return Span(expr, start, stop, period)


def _aware(when: datetime) -> datetime:
    return when.replace(tzinfo=UTC) if when.tzinfo is None else when


def without(text: str, expressions: list[Expression]) -> str:
    """`text` with the expressions cut out (their words are not what the person looks for)."""
    out, last = [], 0
    for expr in expressions:
        out.append(text[last:expr.start])
        last = expr.end
    out.append(text[last:])
    return " ".join("".join(out).split())

"""Reading a recall query: the words worth searching for and the dates it names.

Questions carry words that match everything ("what", "did", "qué", "cuándo"): in BM25 they only
add noise, so they are dropped before the keyword search (when nothing else is left, the
original words are used). Dates written in the query ("on 21 May, 2023", "en marzo de 2024",
"in 2023") become UTC ranges that recall uses to favour memories from that time. Relative
expressions ("ayer", "la semana pasada", "two days ago") become ranges too when the plan is
given the question's time and the chat's timezone (`relative_time`); their words then leave the
keyword terms ("ayer" is when to look, not what to look for).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from rumi.memory.recall import relative_time
from rumi.memory.store import fts

_EN_STOP = """
a about above after again against all also am an and any are as at be been before being below
between both but by can could did do does doing down during each ever few for from further had
has have having he her here hers herself him himself his how i if in into is it its itself just
me might more most must my myself no nor not now of off on once only or other our ours
ourselves out over own same shall she should so some such than that the their theirs them
themselves then there these they this those through to too under until up very was we were what
when where which while who whom why will with would you your yours yourself yourselves s t don
may
"""
_ES_STOP = """
a al algo algún alguna algunas alguno algunos ante antes como con contra cual cuales cuando
cuándo cuál cuáles de del desde donde dónde dos el él ella ellas ellos en entre era erais eran
eras eres es esa esas ese eso esos esta estaba estado estamos estar estas este esto estos estoy
fue fueron fui ha habéis había han has hasta hay la las le les lo los me mi mis mucho muy más
nada ni no nos nosotros o os otra otro para pero poco por porque que qué quien quién quienes
se sea ser si sido sin sobre sois somos son soy su sus también te tengo ti tiene tienen todo
todos tu tus tú un una uno unos usted vosotros y ya yo
"""
STOPWORDS = frozenset((_EN_STOP + _ES_STOP).split())

_MONTHS_EN = ("january", "february", "march", "april", "may", "june", "july", "august",
              "september", "october", "november", "december")
_MONTHS_ES = ("enero", "febrero", "marzo", "abril", "mayo", "junio", "julio", "agosto",
              "septiembre", "octubre", "noviembre", "diciembre")
_MONTHS: dict[str, int] = {}
for _n, _name in enumerate(_MONTHS_EN, start=1):
    _MONTHS[_name] = _n
    _MONTHS[_name[:3]] = _n
for _n, _name in enumerate(_MONTHS_ES, start=1):
    _MONTHS[_name] = _n
_MONTHS["setiembre"] = 9
_MONTHS["sept"] = 9
_MON = "|".join(sorted(_MONTHS, key=len, reverse=True))
_ORD = r"(?:st|nd|rd|th|º|°)?"
_DATE_PATTERNS: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"\b(\d{4})-(\d{1,2})-(\d{1,2})\b"), "iso"),
    (re.compile(rf"\b(\d{{1,2}}){_ORD}\s+(?:de\s+)?({_MON})\.?,?\s+(?:de\s+|del\s+)?(\d{{4}})\b",
                re.IGNORECASE), "dmy"),
    (re.compile(rf"\b({_MON})\.?\s+(\d{{1,2}}){_ORD},?\s*(\d{{4}})\b", re.IGNORECASE), "mdy"),
    (re.compile(rf"\b({_MON})\.?,?\s+(?:de\s+|del\s+)?(\d{{4}})\b", re.IGNORECASE), "my"),
    (re.compile(r"\b(?:in|en|of|de|del|during|durante|year|año)\s+((?:19|20)\d\d)\b",
                re.IGNORECASE), "y"),
]


@dataclass(frozen=True)
class DateRange:
    """[start, end) in UTC."""

    start: datetime
    end: datetime

    def contains(self, when: datetime) -> bool:
        return self.start <= when < self.end


@dataclass(frozen=True)
class QueryPlan:
    text: str
    terms: tuple[str, ...]
    dates: tuple[DateRange, ...]
    relative: tuple[DateRange, ...] = ()  # the part of `dates` said relatively ("ayer")
    without_time: str = ""  # `text` without its relative expressions (what it is about)
    # term → the same word in the other language (`translate`), for terms the chat never said
    alternatives: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    @property
    def match_expr(self) -> str | None:
        """FTS5 MATCH text: any of the terms, each quoted (operators in the query stay text)."""
        return " OR ".join(f'"{t}"' for t in self.terms) if self.terms else None


def search_terms(text: str) -> tuple[str, ...]:
    """Distinct content words of `text`; all its words when it has only stop words."""
    words = fts.terms(text)
    kept = [w for w in words if w not in STOPWORDS and not (len(w) == 1 and not w.isdigit())]
    return tuple(kept or words)


def _day(year: int, month: int, day: int) -> DateRange:
    start = datetime(year, month, day, tzinfo=UTC)
    return DateRange(start, start + timedelta(days=1))


def _month(year: int, month: int) -> DateRange:
    start = datetime(year, month, 1, tzinfo=UTC)
    end = datetime(year + (month == 12), month % 12 + 1, 1, tzinfo=UTC)
    return DateRange(start, end)


def date_ranges(text: str) -> tuple[DateRange, ...]:
    """Absolute dates named in `text` (English or Spanish); most specific pattern wins a span."""
    if not isinstance(text, str):
        return ()
    found: list[DateRange] = []
    taken: list[tuple[int, int]] = []
    for pattern, kind in _DATE_PATTERNS:
        for m in pattern.finditer(text):
            if any(m.start() < end and start < m.end() for start, end in taken):
                continue
            try:
                if kind == "iso":
                    rng = _day(int(m[1]), int(m[2]), int(m[3]))
                elif kind == "dmy":
                    rng = _day(int(m[3]), _MONTHS[m[2].lower()], int(m[1]))
                elif kind == "mdy":
                    rng = _day(int(m[3]), _MONTHS[m[1].lower()], int(m[2]))
                elif kind == "my":
                    rng = _month(int(m[2]), _MONTHS[m[1].lower()])
                else:
                    year = int(m[1])
                    rng = DateRange(datetime(year, 1, 1, tzinfo=UTC),
                                    datetime(year + 1, 1, 1, tzinfo=UTC))
            except (ValueError, KeyError):
                continue
            taken.append((m.start(), m.end()))
            found.append(rng)
    return tuple(found)


def plan(text: str, spans: Sequence[relative_time.Span] = ()) -> QueryPlan:
    """The plan of `text`; `spans` are its relative expressions already resolved
    (`relative_time.resolve`, which needs the question's time and zone)."""
    absolute = date_ranges(text)
    if not spans:
        return QueryPlan(text=text, terms=search_terms(text), dates=absolute)
    relative = tuple(DateRange(s.start, s.end) for s in spans)
    rest = relative_time.without(text, [s.expression for s in spans])
    return QueryPlan(text=text, terms=search_terms(rest), dates=absolute + relative,
                     relative=relative, without_time=rest)

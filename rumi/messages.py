"""The sentences Rumi says on its own, in the language of the chat being answered.

Call sites write `msg.BUSY` as before; the catalogue is chosen by the active language, a context
variable set where a chat's work starts (`use_language`), so a reply, a notice or an error
raised deep inside a turn speaks the person's language without passing it through every call.
Catalogues: `rumi.messages_es` (the reference, complete) and `rumi.messages_en`; a name missing
in the active catalogue falls back to Spanish rather than failing in front of the person.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
from collections.abc import Callable, Iterator, Mapping
from datetime import date, datetime
from types import ModuleType

from rumi import messages_en, messages_es

SUPPORTED_LANGUAGES: tuple[str, ...] = ("es", "en")
DEFAULT_LANGUAGE = "es"

_CATALOGUES: dict[str, ModuleType] = {"es": messages_es, "en": messages_en}
_active: contextvars.ContextVar[str] = contextvars.ContextVar(
    "rumi_language", default=DEFAULT_LANGUAGE
)


def normalize_language(code: str | None) -> str | None:
    """"es-ES", "en_GB", "EN" → "es"/"en"; None for a language Rumi does not speak."""
    if not code:
        return None
    base = code.strip().lower().replace("_", "-").split("-", 1)[0]
    return base if base in _CATALOGUES else None


def current_language() -> str:
    return _active.get()


def set_language(code: str | None) -> contextvars.Token[str]:
    """Make `code` the active language for this task and the tasks it starts."""
    return _active.set(normalize_language(code) or DEFAULT_LANGUAGE)


@contextlib.contextmanager
def use_language(code: str | None) -> Iterator[str]:
    token = set_language(code)
    try:
        yield _active.get()
    finally:
        _active.reset(token)


def in_language(tables: Mapping[str, Mapping[str, str]], key: str, **values: object) -> str:
    """`key` from a part's own per-language texts (its tools' results), in the active language
    (the chat being answered), Spanish when that language has no table."""
    return tables.get(current_language(), tables[DEFAULT_LANGUAGE])[key].format(**values)


def speaker(tables: Mapping[str, Mapping[str, str]]) -> Callable[..., str]:
    """`say(key, **values)` over a part's own per-language texts (see `in_language`)."""
    return functools.partial(in_language, tables)


def catalogue(code: str | None = None) -> ModuleType:
    return _CATALOGUES[normalize_language(code) or current_language()]


def text(name: str, code: str | None = None) -> object:
    """The sentence `name` in `code` (or the active language), Spanish when that one lacks it."""
    chosen = catalogue(code)
    if hasattr(chosen, name):
        return getattr(chosen, name)
    return getattr(messages_es, name)


def format_duration(seconds: float) -> str:
    """A span as a person says it, in the active language: "40 s", "12 min", "3 h 5 min",
    "2 días y 4 h" / "2 days 4 h" (only the day words differ, so they are the catalogues')."""
    seconds = max(0, round(seconds))
    if seconds < 60:
        return f"{seconds} s"
    minutes = seconds // 60
    if minutes < 60:
        return f"{minutes} min"
    hours, rest = divmod(minutes, 60)
    if hours < 24:
        return f"{hours} h {rest} min" if rest else f"{hours} h"
    days, hours = divmod(hours, 24)
    day = str(text("DURATION_DAY" if days == 1 else "DURATION_DAYS")).format(n=days)
    return str(text("DURATION_DAYS_HOURS")).format(days=day, hours=hours) if hours else day


def __getattr__(name: str) -> object:
    if name.startswith("__"):
        raise AttributeError(name)
    try:
        return text(name)
    except AttributeError:
        raise AttributeError(f"rumi.messages has no sentence {name!r}") from None


def format_number(value: float, code: str | None = None, *, decimals: int = 0) -> str:
    """A number as the language writes it: es `2.935` / `12,5`, en `2,935` / `12.5` (one
    helper, so /status, the dashboard and notices never mix `2,935` with `9.765`)."""
    cat = catalogue(code)
    thousands = str(getattr(cat, "THOUSANDS_SEPARATOR", ","))
    point = str(getattr(cat, "DECIMAL_SEPARATOR", "."))
    plain = f"{value:,.{decimals}f}"
    return plain.replace(",", "\0").replace(".", point).replace("\0", thousands)


def count_of(count: int, noun: str, code: str | None = None) -> str:
    """`count` with its noun in the right number: "1 mensaje" / "2 mensajes" / "2,935 tokens".
    `noun` names a pair of catalogue entries, `<noun>_ONE` and `<noun>_MANY`."""
    form = text(f"{noun}_ONE" if count == 1 else f"{noun}_MANY", code)
    return str(form).format(n=format_number(count, code))


def format_datetime(moment: date | datetime, code: str | None = None) -> str:
    """A date (with its time, for a datetime) as the language writes it: es `25/11/2026 18:00`,
    en `25 Nov 2026, 18:00`. Pure formatting, no locale: the caller picks the time zone.
    The patterns are the catalogues' (`DATE_FORMAT`, `DATETIME_FORMAT`, `DATE_MONTHS`)."""
    cat = catalogue(code)
    pattern = "DATETIME_FORMAT" if isinstance(moment, datetime) else "DATE_FORMAT"
    months = getattr(cat, "DATE_MONTHS", messages_es.DATE_MONTHS)
    return str(getattr(cat, pattern)).format(m=moment, mon=months[moment.month - 1])

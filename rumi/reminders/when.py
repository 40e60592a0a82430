"""What `when` may say, and the next moment it names, in the chat's time zone.

Accepted forms (documented in docs/reminders.md), nothing else:
  - an ISO date-time, `2026-05-21T09:30` (the chat's zone) or with an offset / `Z`;
  - a delay from now, `+10m`, `+2h`, `+1d`, `+90s`;
  - a recurrence: `daily 08:00`, `weekdays 08:00`, `weekly mon 08:00`, or
    `cron <minute> <hour> <day> <month> <weekday>` (APScheduler's CronTrigger.from_crontab).
Parsing is pure (no clock read here): callers pass `now`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta, tzinfo
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from apscheduler.triggers.cron import CronTrigger

_DELAY = re.compile(r"^\+(\d{1,6})\s*([smhd])$")
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days"}
_CLOCK = re.compile(r"^(\d{1,2}):(\d{2})$")
_DAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")


class WhenError(ValueError):
    """`when` could not be understood; the message says what is accepted (for the model)."""


@dataclass(frozen=True)
class When:
    first: datetime            # the first moment it is due (aware)
    recurrence: str | None     # the crontab it repeats on, or None for once


def zone(name: str) -> ZoneInfo:
    """An IANA zone, or ValueError naming it."""
    try:
        return ZoneInfo(name.strip())
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise ValueError(f"unknown time zone {name!r}") from exc


def parse_when(text: str, now: datetime, tz: tzinfo) -> When:
    """Read `text` (one of the module's forms) against `now` in `tz`; the first moment must be
    in the future for one-shot forms."""
    raw = text.strip()
    lowered = raw.lower()
    delay = _DELAY.match(lowered)
    if delay:
        first = now + timedelta(**{_UNITS[delay.group(2)]: int(delay.group(1))})
        return When(first.astimezone(tz), None)
    crontab = recurrence_crontab(lowered)
    if crontab is not None:
        return When(next_fire(crontab, tz, now), crontab)
    try:
        moment = datetime.fromisoformat(raw.replace("Z", "+00:00"))
    except ValueError as exc:
        raise WhenError(
            f"Cannot read when={text!r}. Use an ISO date-time (2026-05-21T09:30), a delay "
            "(+10m, +2h, +1d), or a recurrence (daily 08:00, weekdays 08:00, "
            "weekly mon 08:00, cron M H DOM MON DOW)."
        ) from exc
    moment = moment.replace(tzinfo=tz) if moment.tzinfo is None else moment.astimezone(tz)
    if moment <= now:
        raise WhenError(
            f"{moment.isoformat(timespec='minutes')} is in the past; it is now "
            f"{now.astimezone(tz).isoformat(timespec='minutes')} in the chat's time zone."
        )
    return When(moment, None)


def recurrence_crontab(text: str) -> str | None:
    """The crontab for a recurrence form, None if `text` is not one; WhenError if it is one
    but malformed."""
    words = text.split()
    if not words or words[0] not in ("daily", "weekdays", "weekly", "cron"):
        return None
    if words[0] == "cron":
        crontab = " ".join(words[1:])
        try:
            CronTrigger.from_crontab(crontab)
        except ValueError as exc:
            raise WhenError(f"Bad cron expression {crontab!r}: {exc}.") from exc
        return crontab
    day = None
    if words[0] == "weekly":
        if len(words) != 3 or words[1][:3] not in _DAYS:
            raise WhenError("Use weekly <mon|tue|wed|thu|fri|sat|sun> HH:MM.")
        day, words = words[1][:3], [words[0], words[2]]
    clock = _CLOCK.match(words[1]) if len(words) == 2 else None
    if clock is None or int(clock.group(1)) > 23 or int(clock.group(2)) > 59:
        raise WhenError(f"Use {words[0]} HH:MM (24-hour clock).")
    minute, hour = int(clock.group(2)), int(clock.group(1))
    weekday = {"daily": "*", "weekdays": "mon-fri"}.get(words[0], day)
    return f"{minute} {hour} * * {weekday}"


def next_fire(crontab: str, tz: tzinfo, after: datetime) -> datetime:
    """The first moment of `crontab` strictly after `after`, in `tz`."""
    trigger = CronTrigger.from_crontab(crontab, timezone=tz)
    moment = trigger.get_next_fire_time(None, after + timedelta(seconds=1))
    if moment is None:
        raise WhenError(f"cron {crontab!r} never fires")
    return moment


def shortest_gap(crontab: str, tz: tzinfo, now: datetime, samples: int = 8) -> timedelta:
    """The shortest gap between the next few firings (to refuse "every minute" tasks)."""
    moments = [next_fire(crontab, tz, now)]
    for _ in range(samples - 1):
        moments.append(next_fire(crontab, tz, moments[-1]))
    return min(b - a for a, b in zip(moments, moments[1:], strict=False))

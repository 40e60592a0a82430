"""Which uses of a memory count as another day of use (`access_days`, the score's frequency).

Every answer marks the memories it put in the prompt as accessed, so a burst of questions in
one conversation used to compound whatever was recalled — rightly or not — and those memories
then crowded unrelated later questions: five questions about one topic in ten minutes are not
five times the evidence that a memory matters. `access_count` still counts every access (seed
001's column); the frequency term reads `access_days`, which counts a use only when it comes at
least `DAY_GAP` after the last use it counted (`access_day_at`).

Why a gap and not the chat's calendar day: the touch path (recall, the prompt block, both
stores' writers) knows no time zone, and asking for one per touch would put a lookup behind
every answer; a gap needs none and is the same rule in Python, SQLite and PostgreSQL. Why
20 hours and not 24: someone who asks every morning, a little earlier one day than the day
before, used it on each of those days; two uses in one evening (or late at night and the next
early morning) stay one. The comparison is made on stamps exactly as stored — the writers pass
`since(when)` and compare it with the stored stamp — so Python and SQL never disagree by a
rounding of seconds.
"""

from __future__ import annotations

from datetime import datetime, timedelta

DAY_GAP = timedelta(hours=20)


def since(when: datetime) -> datetime:
    """The latest counted use that still lets a use at `when` count: `when - DAY_GAP`."""
    return when - DAY_GAP


def counts(day_at: datetime | None, when: datetime) -> bool:
    """Whether a use at `when` is another day of use after the last counted one, `day_at`."""
    return day_at is None or day_at <= since(when)


def after_use(days: int, day_at: datetime | None, when: datetime
              ) -> tuple[int, datetime | None]:
    """(`access_days`, `access_day_at`) after one use at `when`."""
    return (days + 1, when) if counts(day_at, when) else (days, day_at)

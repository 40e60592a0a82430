"""The documented `when` forms, read against a fixed `now`."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from rumi.reminders.when import WhenError, next_fire, parse_when, shortest_gap, zone

MADRID = zone("Europe/Madrid")
NOW = datetime(2026, 3, 28, 22, 0, tzinfo=UTC)  # Saturday; Madrid moves to summer time next


def test_delay_forms() -> None:
    assert parse_when("+10m", NOW, MADRID).first == NOW + timedelta(minutes=10)
    assert parse_when("+2h", NOW, MADRID).first == NOW + timedelta(hours=2)
    assert parse_when(" +1d ", NOW, MADRID).recurrence is None


def test_naive_iso_is_the_chats_zone_and_aware_iso_is_kept() -> None:
    when = parse_when("2026-04-01T09:30", NOW, MADRID)
    assert when.first.utcoffset() == timedelta(hours=2)  # CEST after the change
    assert when.first.astimezone(UTC) == datetime(2026, 4, 1, 7, 30, tzinfo=UTC)
    aware = parse_when("2026-04-01T09:30Z", NOW, MADRID)
    assert aware.first.astimezone(UTC) == datetime(2026, 4, 1, 9, 30, tzinfo=UTC)


def test_past_moment_is_refused_with_the_time_now() -> None:
    with pytest.raises(WhenError, match=r"in the past; it is now 2026-03-28T23:00\+01:00"):
        parse_when("2026-03-01T09:00", NOW, MADRID)


def test_recurrences_become_crontabs() -> None:
    daily = parse_when("daily 08:00", NOW, MADRID)
    assert daily.recurrence == "0 8 * * *"
    assert daily.first == datetime(2026, 3, 29, 8, 0, tzinfo=MADRID)
    assert parse_when("weekdays 7:05", NOW, MADRID).recurrence == "5 7 * * mon-fri"
    weekly = parse_when("weekly monday 18:30", NOW, MADRID)
    assert weekly.recurrence == "30 18 * * mon"
    assert weekly.first.weekday() == 0
    assert parse_when("cron 0 9 1 * *", NOW, MADRID).first.day == 1


@pytest.mark.parametrize("text", ["mañana", "daily 25:00", "weekly funday 08:00",
                                  "cron 0 9 *", "weekly mon"])
def test_unreadable_forms_say_what_is_accepted(text: str) -> None:
    with pytest.raises(WhenError):
        parse_when(text, NOW, MADRID)


def test_next_fire_is_strictly_after_and_gap_is_measured() -> None:
    first = next_fire("0 8 * * *", MADRID, NOW)
    assert next_fire("0 8 * * *", MADRID, first) == first + timedelta(days=1)
    assert shortest_gap("*/5 * * * *", MADRID, NOW) == timedelta(minutes=5)


def test_unknown_zone_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="unknown time zone"):
        zone("Marte/Olympus")

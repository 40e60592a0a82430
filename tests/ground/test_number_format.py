"""Numbers and plurals as each language writes them (issue 27: `/status detalle` showed
`2,935 / 5,388 tokens` beside `9.765 de 13.840`, and "1 (1 mensajes")."""

from __future__ import annotations

from datetime import UTC, date, datetime
from zoneinfo import ZoneInfo

import pytest

from rumi import messages as msg
from rumi.reminders.service import local_text


@pytest.mark.parametrize(("code", "value", "decimals", "expected"), [
    ("es", 2935, 0, "2.935"), ("en", 2935, 0, "2,935"),
    ("es", 13_840_000, 0, "13.840.000"), ("en", 13_840_000, 0, "13,840,000"),
    ("es", 999, 0, "999"), ("en", 0, 0, "0"), ("es", -1234, 0, "-1.234"),
    ("es", 12.5, 1, "12,5"), ("en", 12.5, 1, "12.5"), ("es", 1234.56, 1, "1.234,6"),
    ("en", 1234.56, 1, "1,234.6"),
])
def test_numbers_follow_the_language(code, value, decimals, expected) -> None:
    assert msg.format_number(value, code, decimals=decimals) == expected


def test_the_active_language_is_used_without_a_code() -> None:
    with msg.use_language("en"):
        assert msg.format_number(9765) == "9,765"
    with msg.use_language("es"):
        assert msg.format_number(9765) == "9.765"


@pytest.mark.parametrize(("code", "count", "expected"), [
    ("es", 1, "1 mensaje"), ("es", 2, "2 mensajes"), ("es", 0, "0 mensajes"),
    ("es", 1500, "1.500 mensajes"), ("en", 1, "1 message"), ("en", 2, "2 messages"),
    ("en", 0, "0 messages"), ("en", 1500, "1,500 messages"),
])
def test_plurals(code, count, expected) -> None:
    assert msg.count_of(count, "MESSAGES", code) == expected


def test_the_redactions_line_is_singular_for_one_message() -> None:
    with msg.use_language("es"):
        line = msg.REDACTIONS_COUNT.format(count=msg.format_number(1),
                                           messages=msg.count_of(1, "MESSAGES"))
    assert line.endswith("1 (1 mensaje)")


@pytest.mark.parametrize(("code", "moment", "expected"), [
    ("es", datetime(2026, 11, 5, 8, 7), "05/11/2026 08:07"),
    ("en", datetime(2026, 11, 5, 8, 7), "5 Nov 2026, 08:07"),
    ("es", date(2025, 3, 14), "14/03/2025"), ("en", date(2025, 3, 14), "14 Mar 2025"),
])
def test_dates_follow_the_language(code, moment, expected) -> None:
    """One helper beside format_number: reminders, recalled memories never mix 05/11 and
    "Nov 5" in one chat."""
    assert msg.format_datetime(moment, code) == expected


@pytest.mark.parametrize(("code", "expected"), [("es", "25/11/2026 19:00"),
                                                 ("en", "25 Nov 2026, 19:00")])
def test_a_reminder_s_time_reads_in_the_chat_language(code, expected) -> None:
    """/reminders, /timezone and a task's prompt show `local_text`: the chat's zone and
    language (was `25/11/2026 19:00` in English too)."""
    moment = datetime(2026, 11, 25, 18, 0, tzinfo=UTC)
    with msg.use_language(code):
        assert local_text(moment, ZoneInfo("Europe/Madrid")) == expected

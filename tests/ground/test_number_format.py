"""Numbers and plurals as each language writes them (issue 27: `/status detalle` showed
`2,935 / 5,388 tokens` beside `9.765 de 13.840`, and "1 (1 mensajes")."""

from __future__ import annotations

import pytest

from rumi import messages as msg


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

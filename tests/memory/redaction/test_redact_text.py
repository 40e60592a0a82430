"""The text rules of redaction: what matches, what a line or record becomes, in both languages."""

from __future__ import annotations

import pytest

from rumi import messages as msg
from rumi.memory.redaction.text import (
    DAILY_PREFIX,
    Needles,
    fingerprint,
    holds_tombstone,
    is_tombstone,
    redact_lines,
    redact_record,
    tombstone,
)

ES = "[borrado a petición del usuario]"
EN = "[erased at the user's request]"


def test_matching_ignores_case_and_the_spaces_between_words() -> None:
    needles = Needles(["Clave  Secreta 42"])
    assert needles.found("mi clave\nsecreta 42, ya está")
    assert not needles.found("mi clave secreta 43")
    assert needles.slugs == ["clave-secreta-42"]


@pytest.mark.parametrize("text", ["ab", "   ", "borrado", "user's request"])
def test_too_short_or_part_of_the_tombstone_is_refused(text: str) -> None:
    with pytest.raises(ValueError):
        Needles([text])


def test_a_message_becomes_a_tombstone_a_summary_loses_only_the_span() -> None:
    needles = Needles(["zq-7781"])
    message = {"id": 4, "timestamp": "t", "role": "user", "content": "mi pin es zq-7781"}
    summary = {"id": 9, "timestamp": "t", "role": "assistant", "kind": "summary",
               "content": "- Dio su pin zq-7781\n- Vive en Lima"}
    seen: set[str] = set()
    assert redact_record(message, needles, ES, seen) and redact_record(summary, needles, ES)
    assert message == {"id": 4, "timestamp": "t", "role": "user", "content": ES}
    assert summary["content"] == f"- Dio su pin {ES}\n- Vive en Lima"
    assert seen == {fingerprint("mi pin es zq-7781")}
    untouched = {"id": 5, "role": "user", "content": "nada"}
    assert not redact_record(untouched, needles, ES)


def test_a_daily_log_line_keeps_its_time() -> None:
    text = "# 2026-06-01\n\n- 10:05 Dio su pin zq-7781\n- 10:06 Vive en Lima\n"
    new, count = redact_lines(text, Needles(["zq-7781"]), ES, DAILY_PREFIX)
    assert count == 1 and new == f"# 2026-06-01\n\n- 10:05 {ES}\n- 10:06 Vive en Lima\n"


def test_tombstones_are_known_in_every_language() -> None:
    with msg.use_language("en"):
        assert tombstone() == EN
    assert tombstone() == ES
    assert is_tombstone(ES) and is_tombstone(f" {EN} ") and not is_tombstone("hola")
    assert holds_tombstone(f"Su pin es {EN}") and not holds_tombstone("Su pin es 1")

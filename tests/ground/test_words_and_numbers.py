"""Issue 33: words and numbers as people write them — a count of one is singular, big numbers
and spans are written the way each language writes them."""

from __future__ import annotations

from rumi import messages as msg


def test_learned_one_thing_is_singular() -> None:
    one = msg.text("CLEARED_LEARNED", "es").format(things=msg.count_of(1, "NEW_THINGS", "es"))
    assert one == "Aprendí 1 cosa nueva."
    many = msg.text("CLEARED_LEARNED", "en").format(things=msg.count_of(3, "NEW_THINGS", "en"))
    assert many == "I learned 3 new things."
    before = msg.text("RESET_LEARNED", "es").format(things=msg.count_of(1, "THINGS", "es"))
    assert before == " Antes aprendí 1 cosa de la conversación."


def test_active_memories_are_counted_in_the_right_number() -> None:
    assert msg.count_of(1, "ACTIVE_MEMORIES", "es") == "1 recuerdo activo"
    assert msg.count_of(2935, "ACTIVE_MEMORIES", "es") == "2.935 recuerdos activos"
    assert msg.count_of(2935, "ACTIVE_MEMORIES", "en") == "2,935 active memories"
    assert msg.count_of(1, "MODELS", "en") == "1 model"


def test_audio_budget_is_a_duration_not_28800_seconds() -> None:
    with msg.use_language("es"):
        line = msg.STATUS_VOICE.format(used=msg.format_duration(0),
                                       limit=msg.format_duration(28_800), model="whisper")
        assert line == "Audio transcrito hoy: 0 s de 8 h (modelo whisper)"
        spent = msg.VOICE_DAILY_BUDGET.format(used=msg.format_duration(28_790),
                                              limit=msg.format_duration(28_800))
        assert "7 h 59 min de audio, el máximo diario es 8 h" in spent
    with msg.use_language("en"):
        waits = msg.STATUS_RATE_WAITS.format(count=msg.format_number(1200),
                                             seconds=msg.format_duration(4000))
        assert waits == "Waits for limits: 1,200 (1 h 6 min in total)"


def test_one_forgotten_memory_in_an_import_is_singular() -> None:
    assert "1 recuerdo del archivo ya lo habías olvidado" in msg.text(
        "IMPORT_SKIPPED_FORGOTTEN_ONE", "es")
    assert "1 memory in the file was one" in msg.text("IMPORT_SKIPPED_FORGOTTEN_ONE", "en")
    assert msg.count_of(1, "EARLIER_SAYING", "es") == "1 versión anterior que lo decía"

"""Speaker-aware recall: a question that names a person weighs that person's turns over the
turns of people it does not name (`recall_speaker_weight`)."""

from __future__ import annotations

import pytest

from rumi.memory.recall.fusion import Fused
from rumi.memory.recall.speakers import named, speaker, weigh_speakers
from rumi.memory.store.memories import MemoryStore
from tests.memory.recall.turns import first_two


def test_the_speaker_is_a_capitalised_label() -> None:
    assert speaker("Joanna: I love dramas.") == "Joanna"
    assert speaker("Mary Ann: hi") == "Mary Ann"
    assert speaker("Shopping\nEggs: a dozen") is None   # a label is one line
    assert speaker("A" * 41 + ": too long for a name") is None
    assert speaker("note: buy milk") is None          # not a name
    assert speaker("The meeting is at 10:30 today") is None
    assert speaker("Plain text without a label") is None


def test_a_speaker_is_named_by_every_word_of_the_label_in_any_case() -> None:
    speakers = {"Joanna", "Nate", "Mary Ann"}
    assert named("What are Joanna's hobbies?", speakers) == {"Joanna"}
    assert named("¿Qué películas le gustan a JOANNA?", speakers) == {"Joanna"}
    assert named("What did Mary say?", speakers) == set()
    assert named("What did Mary Ann and Nate cook?", speakers) == {"Mary Ann", "Nate"}


def test_turns_of_people_the_question_does_not_name_weigh_less() -> None:
    fused = [Fused(1, 1.0, 1.0, 0.5), Fused(2, 0.9, 0.8, 0.4), Fused(3, 0.85, 0.7, 0.3),
             Fused(4, 0.5, 0.2, 0.2)]
    said = {1: "Nate", 2: "Joanna", 3: None, 4: "Joanna"}
    out = weigh_speakers(fused, said, "What films does Joanna enjoy?", 0.8)
    assert [f.memory_id for f in out] == [2, 3, 1, 4]   # an unlabelled memory keeps its own
    assert out[2].relevance == pytest.approx(0.8) and out[2].keyword == 1.0
    # off, a question naming nobody, or everybody: unchanged
    assert weigh_speakers(fused, said, "What films does Joanna enjoy?", 1.0) == fused
    assert weigh_speakers(fused, said, "What films are good?", 0.8) == fused
    assert weigh_speakers(fused, said, "What did Nate tell Joanna?", 0.8) == fused


async def test_recall_puts_the_named_speakers_answer_first(kw_store: MemoryStore) -> None:
    """Two turns with the same words, said by two people who name each other: the one the
    question names comes first with the default weight (0.9), on both stores; at 1.0 (off)
    the order is the keyword score's."""
    texts = ["Nate: Joanna, I watch movies on weekends, sci-fi movies all weekend long.",
             "Joanna: Nate, I watch movies too, mostly dramas.",
             "Ana: The bus was late again today."]
    assert kw_store.settings.recall_speaker_weight == 0.9
    question = "Which movies does Joanna watch on weekends?"
    ids, weighted, off = await first_two(kw_store, texts, question,
                                         "recall_speaker_weight", 1.0)
    assert weighted == [ids[1], ids[0]]
    assert off == [ids[0], ids[1]]

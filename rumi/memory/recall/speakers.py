"""Who said it: a question that names a person is usually about what that person said.

Conversations kept as memories carry their speaker as a `Name: ` label ("Joanna: I really
enjoy dramas…"; imported chats and LoCoMo's turns alike). A question like "What kind of films
does Joanna enjoy?" shares its topic words with both speakers' turns — the friend who asks
"What movies do you like?" as much as Joanna who answers — and a name never counts as keyword
evidence (it is in hundreds of a chat's turns, so its idf is ~0: the keyword coverage).
`recall_speaker_weight` multiplies the relevance of a candidate said by someone the question
does not name, when it names the speaker of some other candidate; a question that names every
speaker (or none) is left alone, as are memories without a label (docs/benchmarks.md,
"Step 9").
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from rumi.memory.recall.fusion import Fused

_WORD = re.compile(r"\w+")
_LABEL_MAX = 40   # characters of a `Name: ` label (the shape the store reads for a turn's context)


def speaker(content: str) -> str | None:
    """The `Name: ` label `content` starts with (up to 40 characters, no colon or line
    break, a capital first), else None. `str.find` rather than a regular expression: it runs
    for every candidate of every recall."""
    end = content.find(": ", 0, _LABEL_MAX + 2)
    if end <= 0 or not content[0].isupper():
        return None
    label = content[:end]
    if ":" in label or "\n" in label:
        return None
    return label.rstrip()


def named(question: str, speakers: set[str]) -> set[str]:
    """The speakers whose every word is a word of `question` (case-insensitive, so "JOANNA"
    and a possessive "Joanna's" count)."""
    words = {w.casefold() for w in _WORD.findall(question)}
    return {s for s in speakers
            if (parts := [w.casefold() for w in _WORD.findall(s)])
            and all(p in words for p in parts)}


def weigh_speakers(fused: Sequence[Fused], speaker_of: Mapping[int, str | None],
                   question: str, weight: float) -> list[Fused]:
    """`fused` with the relevance of candidates said by someone `question` does not name ×
    `weight`, re-sorted (best first, ties by id); unchanged when the weight is 1, when the
    question names none of the candidates' speakers, or all of them."""
    if weight == 1.0 or not fused:
        return list(fused)
    speakers = set(filter(None, (speaker_of.get(f.memory_id) for f in fused)))
    asked = named(question, speakers)
    if not asked or asked == speakers:
        return list(fused)
    out = [Fused(f.memory_id, f.relevance * weight, f.keyword, f.vector)
           if (s := speaker_of.get(f.memory_id)) is not None and s not in asked else f
           for f in fused]
    out.sort(key=_order)
    return out


def _order(f: Fused) -> tuple[float, int]:
    return (-f.relevance, f.memory_id)

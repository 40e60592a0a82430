"""Who said it: a question that names a person is usually about what that person said.

Conversations kept as memories carry their speaker as a `Name: ` label ("Joanna: I really
enjoy dramas…"; imported chats and LoCoMo's turns alike). A question like "What kind of films
does Joanna enjoy?" shares its topic words with both speakers' turns — the friend who asks
"What movies do you like?" as much as Joanna who answers — and names only never count as
keyword evidence (a name is in hundreds of a chat's turns, so its idf is ~0: the keyword
coverage). `recall_speaker_weight` multiplies the relevance of a candidate said by someone the
question does not name, when it names the speaker of some other candidate; a question that
names every speaker (or none) is left alone, as are memories without a label.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from rumi.memory.recall.fusion import Fused

# "Name: " at the start of a memory (a speaker's label: up to 40 characters, no colon); the
# same shape the store reads when it embeds a turn's context
_LABEL = re.compile(r"([^\s:][^:\n]{0,39}): ")
_WORD = re.compile(r"\w+")


def speaker(content: str) -> str | None:
    """The `Name: ` label of `content`, when it starts with a capitalised one."""
    found = _LABEL.match(content.lstrip())
    if found is None or not found.group(1)[:1].isupper():
        return None
    return found.group(1).strip()


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
    speakers = {s for f in fused if (s := speaker_of.get(f.memory_id)) is not None}
    asked = named(question, speakers)
    if not asked or asked == speakers:
        return list(fused)
    out = [f if (s := speaker_of.get(f.memory_id)) is None or s in asked
           else Fused(f.memory_id, f.relevance * weight, f.keyword, f.vector) for f in fused]
    out.sort(key=lambda x: (-x.relevance, x.memory_id))
    return out

"""benchmarks/locomo_gap.py: why a Spanish question found less than its English twin, on a
tiny file (no model; the translation is left off)."""

from __future__ import annotations

import json
import sys

from tests.conftest import REPO

sys.path.insert(0, str(REPO / "benchmarks"))
import locomo_gap as gap  # noqa: E402

TINY = REPO / "tests" / "data" / "locomo-tiny.json"


def line(sample: str, index: int, ranked: list[str], es: bool = False) -> dict:
    out = {"sample_id": sample, "question_index": index, "category": 4, "ranked": ranked}
    if es:
        out.update(memories="en", questions="es")
    return out


def test_each_lost_question_gets_the_first_cause_that_explains_it() -> None:
    data = json.loads(TINY.read_text())
    # k = 1: a question is found when its evidence comes first
    base = [line("tiny-1", 0, ["D1:2"]), line("tiny-1", 0, ["D1:1"], es=True),
            line("tiny-2", 0, ["D1:1"]), line("tiny-2", 0, ["D1:2"], es=True),
            line("tiny-2", 1, ["D1:3"]), line("tiny-2", 1, ["D1:1"], es=True),
            # the Spanish question finds more here: a gain, not a loss
            line("tiny-1", 2, ["D1:1"]), line("tiny-1", 2, ["D2:1"], es=True)]
    untouched = [line("tiny-1", 0, ["D1:2"], es=True)]     # tiny-1 #0: the touches
    vector = [line("tiny-2", 0, ["D1:1"]), line("tiny-2", 0, ["D1:3"], es=True)]
    keyword = [line("tiny-2", 0, ["D1:1"]), line("tiny-2", 0, ["D1:2"], es=True)]
    summary, lost = gap.analyse(data, base, vector=vector, keyword=keyword,
                                untouched=untouched, k=1)
    causes = {item.key: item.cause for item in lost}
    assert causes == {("tiny-1", 0): "frequency", ("tiny-2", 0): "both halves",
                      ("tiny-2", 1): "fusion"}
    assert summary["questions"] == 4 and summary["questions_lost"] == 3
    assert summary["english"] == 75.0 and summary["spanish"] == 25.0
    assert summary["points_lost"] == 75.0 and summary["points_gained"] == 25.0
    assert summary["by_cause"]["frequency"] == {"questions": 1, "points": 25.0}
    assert summary["by_cause"]["vector half"]["questions"] == 0


def test_one_half_alone_names_that_half() -> None:
    data = json.loads(TINY.read_text())
    base = [line("tiny-2", 0, ["D1:1"]), line("tiny-2", 0, ["D1:2"], es=True)]
    vector = [line("tiny-2", 0, ["D1:1"]), line("tiny-2", 0, ["D1:3"], es=True)]
    keyword = [line("tiny-2", 0, ["D1:1"]), line("tiny-2", 0, ["D1:1"], es=True)]
    _, lost = gap.analyse(data, base, vector=vector, keyword=keyword, k=1)
    assert [item.cause for item in lost] == ["vector half"]
    _, lost = gap.analyse(data, base, vector=keyword, keyword=vector, k=1)
    assert [item.cause for item in lost] == ["keyword half"]

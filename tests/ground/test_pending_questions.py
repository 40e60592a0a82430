"""A chat's open question expires: an answer after it is never taken for the old question."""

from rumi.base.pending import PendingQuestions


def test_an_open_question_is_answered_until_it_expires() -> None:
    now = [100.0]
    pending: PendingQuestions[list[int]] = PendingQuestions(300, lambda: now[0])
    pending.ask("1", [4, 7])
    now[0] += 299
    assert pending.get("1") == [4, 7]
    assert pending.get("2") is None   # another chat never sees it
    now[0] += 2
    assert pending.get("1") is None
    pending.ask("1", [9])
    pending.close("1")
    assert pending.get("1") is None

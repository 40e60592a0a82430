"""The getUpdates answer parsed update by update (`rumi.channels.unparsed`): what PTB cannot
read becomes a bare placeholder PTB moves the offset past; the rest is untouched."""

from __future__ import annotations

import json

import pytest
from telegram import Update
from telegram.error import TelegramError

from rumi.channels.unparsed import UNPARSED, UnparsedLog, UpdatesRequest, unparsed_record

GOOD = {"update_id": 7, "message": {"message_id": 1, "date": 0, "text": "hola",
                                    "chat": {"id": 1, "type": "private"}}}


def answer(*updates: str) -> bytes:
    return ('{"ok":true,"result":[' + ",".join(updates) + "]}").encode()


def test_a_bad_update_becomes_a_placeholder_and_its_neighbours_stay() -> None:
    bad = {"update_id": 8, "message": {**GOOD["message"], "entities": {"type": "bold"},
                                       "text": "123456:AAHk3xJ9mLqW2vPz8YtR4nBcD6eFgH1iJ0k"}}
    data = UpdatesRequest().parse_json_payload(answer(json.dumps(GOOD), json.dumps(bad)))
    first, second = (Update.de_json(u, None) for u in data["result"])
    assert first.message.text == "hola"
    assert second.update_id == 8 and second.message is None
    record = unparsed_record(second)
    assert record is not None and record["error"].startswith("AttributeError")
    assert "AAHk3xJ9" not in record["excerpt"] and "***" in record["excerpt"]


def test_json_deeper_than_the_parser_goes_is_cut_out_by_update() -> None:
    deep = '{"update_id":9,"message":{"x":' + "[" * 5000 + "]" * 5000 + "}}"
    data = UpdatesRequest().parse_json_payload(answer(json.dumps(GOOD), deep,
                                                      '{"update_id":10}'))
    assert [u["update_id"] for u in data["result"]] == [7, 9, 10]
    assert data["result"][0] == GOOD
    assert "RecursionError" in data["result"][1][UNPARSED]["error"]
    assert len(data["result"][1][UNPARSED]["excerpt"]) == 1_000


def test_an_answer_that_is_not_json_is_still_an_error() -> None:
    with pytest.raises(TelegramError):
        UpdatesRequest().parse_json_payload(b"<html>bad gateway</html>")


async def test_the_record_keeps_only_the_last_fifty(tmp_path) -> None:  # noqa: ANN001
    log = UnparsedLog(tmp_path / "inbox" / "unparsed.jsonl")
    for update_id in range(60):
        await log.add(update_id, {"error": "E", "excerpt": "x", "size": 1}, 0.0)
    lines = log.path.read_text(encoding="utf-8").splitlines()
    assert [json.loads(line)["update_id"] for line in lines] == list(range(10, 60))

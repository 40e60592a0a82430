"""An update python-telegram-bot cannot parse never stops polling (issue 32, item 1).

`rumi run` against the fake Bot API, which delivers updates byte for byte as Telegram would
carry them from any client: `entities` as an object, an entity `{}`, a poll without
`allows_revoting` (required since Bot API 9.6), and a message nested 5,000 deep. On 0.7.0 the
first one stopped every chat and logged a traceback ~90 times a second. Now the good messages
around them are answered, the offset moves past the bad ones, each is recorded once (bounded,
no token) and logged once."""

from __future__ import annotations

import asyncio
import json

import pytest

from tests.e2e.conftest import ALICE, TOKEN
from tests.e2e.test_bad_updates import OTHER, answers, echo_tag, run_bot, write_config
from tests.memory.files.test_markdown_sync import eventually

pytestmark = pytest.mark.e2e


def message(chat_id: int, **fields: object) -> dict[str, object]:
    return {"message_id": 9000 + len(fields), "date": 1_700_000_000,
            "chat": {"id": chat_id, "type": "private", "first_name": "Ana"},
            "from": {"id": ALICE, "is_bot": False, "first_name": "Ana"}, **fields}


def unparsable() -> list[str]:
    option = {"persistent_id": "o1", "text": "sí", "voter_count": 0}
    poll = {"id": "p1", "question": "¿sí?", "options": [option],
            "total_voter_count": 0, "is_closed": False, "is_anonymous": True,
            "type": "regular", "allows_multiple_answers": False}
    deep = json.dumps({"message": message(ALICE, text="tag-hondo")})
    return [
        json.dumps({"message": message(ALICE, text="tag-objeto",
                                       entities={"type": "bold", "offset": 0, "length": 3})}),
        json.dumps({"message": message(ALICE, text="tag-vacia", entities=[{}])}),
        json.dumps({"message": message(ALICE, poll=poll)}),
        deep[:-2] + ', "x": ' + "[" * 5000 + "]" * 5000 + "}}",
    ]


def parse_lines(path) -> list[str]:  # noqa: ANN001
    if not path.exists():
        return []
    return [line for line in path.read_text(encoding="utf-8", errors="replace").splitlines()
            if "cannot be parsed" in line]


async def test_unparsable_updates_are_set_aside_and_the_rest_answered(
        tmp_path, fake_groq, fake_telegram):  # noqa: ANN001
    config = write_config(tmp_path, fake_groq, fake_telegram)
    fake_groq.responder = echo_tag
    stderr_log = tmp_path / "rumi.log"
    file_log = tmp_path / "data" / "logs" / "rumi.log"
    proc = await run_bot(config)
    try:
        await fake_telegram.wait_for_call("getUpdates", timeout=60)
        fake_telegram.push_text(ALICE, ALICE, "tag-antes")
        bad_ids = []
        for body in unparsable():
            bad_ids.append(fake_telegram.push_raw(body))
            fake_telegram.push_text(ALICE, OTHER, f"tag-otro-{len(bad_ids)}")
        fake_telegram.push_text(ALICE, ALICE, "tag-despues")
        wanted = {"tag-antes", "tag-despues", *(f"tag-otro-{n}" for n in range(1, 5))}
        await eventually(lambda: wanted <= set(answers(fake_telegram)), timeout=90)
        await eventually(lambda: not fake_telegram.updates, timeout=30)   # offset moved on
        await asyncio.sleep(2)   # a hot loop would keep logging meanwhile
        assert all(count == 1 for count in answers(fake_telegram).values())
        assert not {"tag-objeto", "tag-vacia", "tag-hondo"} & set(answers(fake_telegram))
        proc.terminate()
        assert await asyncio.wait_for(proc.wait(), timeout=30) == 0
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    # logged once per update, in the file and on stderr; the whole stderr stays short
    assert len(parse_lines(file_log)) == len(bad_ids)
    assert len(parse_lines(stderr_log)) == len(bad_ids)
    assert len(stderr_log.read_text(encoding="utf-8").splitlines()) < 40
    records = [json.loads(line) for line in (tmp_path / "data" / "inbox" / "unparsed.jsonl")
               .read_text(encoding="utf-8").splitlines()]
    assert [r["update_id"] for r in records] == bad_ids
    assert all(len(r["excerpt"]) <= 1_000 and r["error"] for r in records)
    assert "RecursionError" in records[-1]["error"]
    assert "allows_revoting" in records[2]["error"]
    everything = b"".join(p.read_bytes() for p in (tmp_path / "data" / "inbox").iterdir())
    assert TOKEN.encode() not in everything

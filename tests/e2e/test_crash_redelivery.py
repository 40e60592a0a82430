"""kill -9 while messages are received but not answered: after a restart every one of them is
answered exactly once (or, when too old, the person is asked whether to repeat). And kill -9
at chosen points of an answer going out: the restart sends what Telegram had not confirmed,
the same text, with no new model call."""

from __future__ import annotations

import asyncio
import json
import re
import sys
from collections import Counter

import pytest

from tests.e2e.conftest import ALICE, TOKEN
from tests.fakes.chat_model import latest_user_text
from tests.fakes.groq_server import ScriptedReply
from tests.fakes.telegram_server import Sent
from tests.memory.files.test_markdown_sync import eventually

pytestmark = pytest.mark.e2e

CHATS = (ALICE, 5001, 5002)
WANTED = [f"mensaje {chat}-{n}" for chat in CHATS for n in (1, 2)]


def _config(tmp_path, fake_groq, fake_telegram, max_age: float,  # noqa: ANN001
            stop_grace: float = 0.5, stream: bool = True):
    config = tmp_path / "config.toml"
    config.write_text(
        f'data_dir = "{tmp_path / "data"}"\n'
        f'[telegram]\ntoken = "{TOKEN}"\nbase_url = "{fake_telegram.base_url}"\n'
        f'base_file_url = "{fake_telegram.base_file_url}"\nallowed_users = [{ALICE}]\n'
        f"poll_timeout = 1\nredeliver_max_age_minutes = {max_age}\n"
        f"stop_grace_seconds = {stop_grace}\nstream = {str(stream).lower()}\n"
        f'[llm]\napi_key = "gsk_test"\nbase_url = "{fake_groq.base_url}"\nmax_retries = 0\n'
        "[sandbox]\nenabled = false\n[memory]\nembeddings_enabled = false\n",
        encoding="utf-8")
    return config


async def _start(config):  # noqa: ANN001
    return await asyncio.create_subprocess_exec(
        sys.executable, "-c", "import sys; from rumi.cli import main; sys.exit(main())",
        "run", "--config", str(config),
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE)


def _answers(fake_telegram) -> Counter[str]:  # noqa: ANN001
    found = (re.search(r"respuesta a (mensaje \d+-\d)", s.text or "") for s in fake_telegram.sent)
    return Counter(m.group(1) for m in found if m)


async def _crash_with_messages_in_flight(config, fake_groq, fake_telegram):  # noqa: ANN001
    """Push six messages to a bot whose model answers slowly; kill -9 once Telegram has
    been told (by the next getUpdates offset) that all six were received."""
    slow = {"delay": 6.0}

    def respond(body):  # noqa: ANN001, ANN202
        asked = re.findall(r"mensaje \d+-\d", latest_user_text(body))
        text = f"respuesta a {asked[-1]}" if asked else "ok"
        return ScriptedReply({"role": "assistant", "content": text}, delay=slow["delay"])

    fake_groq.responder = respond
    proc = await _start(config)
    try:
        await fake_telegram.wait_for_call("getUpdates", timeout=60)
        for chat in CHATS:
            for n in (1, 2):
                fake_telegram.push_text(ALICE, chat, f"mensaje {chat}-{n}")
        await eventually(lambda: not fake_telegram.updates, timeout=30)   # acknowledged
        await eventually(lambda: len(fake_groq.requests) >= 1, timeout=30)
    finally:
        proc.kill()                                                      # kill -9
        await proc.wait()
    slow["delay"] = 0.0
    return _answers(fake_telegram)


async def test_messages_in_flight_at_a_crash_are_answered_once_after_restart(
        tmp_path, fake_groq, fake_telegram):  # noqa: ANN001
    config = _config(tmp_path, fake_groq, fake_telegram, max_age=30)
    before = await _crash_with_messages_in_flight(config, fake_groq, fake_telegram)
    assert sum(before.values()) == 0          # the crash came before any answer
    proc = await _start(config)
    try:
        await eventually(lambda: set(_answers(fake_telegram)) == set(WANTED), timeout=60)
        # one more message, answered after the backlog: nothing is answered a second time
        fake_telegram.push_text(ALICE, ALICE, "mensaje 111-9")
        await eventually(lambda: _answers(fake_telegram)["mensaje 111-9"] == 1, timeout=30)
        assert all(count == 1 for count in _answers(fake_telegram).values())
    finally:
        proc.kill()
        await proc.wait()


async def test_a_message_too_old_to_answer_gets_a_question_instead(
        tmp_path, fake_groq, fake_telegram):  # noqa: ANN001
    config = _config(tmp_path, fake_groq, fake_telegram, max_age=0)
    await _crash_with_messages_in_flight(config, fake_groq, fake_telegram)
    requests = len(fake_groq.requests)
    proc = await _start(config)
    try:
        def asked() -> set[str]:
            return {m.group(1) for s in fake_telegram.sent
                    if (m := re.search(r"Se me cortó mientras respondía a «(mensaje \d+-\d)»",
                                       s.text or ""))}

        await eventually(lambda: asked() == set(WANTED), timeout=60)
        assert sum(_answers(fake_telegram).values()) == 0
        assert len(fake_groq.requests) == requests      # nothing was sent to the model
    finally:
        proc.kill()
        await proc.wait()


def _asked(fake_groq) -> Counter[str]:  # noqa: ANN001
    """How many turns asked the model about each message (background work, which asks for
    JSON, is not a turn)."""
    return Counter(m.group(0) for body in fake_groq.requests
                   if not body.get("response_format")
                   and (m := re.search(r"mensaje \d+-\d", latest_user_text(body))))


def _answer_after(fake_groq, delay: dict[str, float]) -> None:  # noqa: ANN001
    def respond(body):  # noqa: ANN001, ANN202
        asked = re.findall(r"mensaje \d+-\d", latest_user_text(body))
        text = f"respuesta a {asked[-1]}" if asked else "ok"
        return ScriptedReply({"role": "assistant", "content": text}, delay=delay["seconds"])

    fake_groq.responder = respond


async def _stop_during_a_turn(config, fake_groq, fake_telegram) -> None:  # noqa: ANN001
    """Start the bot, send one message and SIGTERM it once the model is asked; it exits 0."""
    proc = await _start(config)
    try:
        await fake_telegram.wait_for_call("getUpdates", timeout=60)
        fake_telegram.push_text(ALICE, ALICE, "mensaje 111-1")
        await eventually(lambda: len(fake_groq.requests) >= 1, timeout=30)
        proc.terminate()
        assert await asyncio.wait_for(proc.wait(), timeout=30) == 0
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()


async def test_a_stop_during_a_turn_lets_it_finish_and_never_answers_it_again(
        tmp_path, fake_groq, fake_telegram):  # noqa: ANN001
    """SIGTERM (systemd's stop, Ctrl-C) while the model is still thinking, with a grace the
    turn fits in: the turn finishes, its answer is journaled at once, and the restarted bot
    does not answer it a second time."""
    config = _config(tmp_path, fake_groq, fake_telegram, max_age=30, stop_grace=20)
    _answer_after(fake_groq, {"seconds": 0.5})
    await _stop_during_a_turn(config, fake_groq, fake_telegram)
    assert _answers(fake_telegram)["mensaje 111-1"] == 1     # finished before the stop
    proc = await _start(config)
    try:
        fake_telegram.push_text(ALICE, ALICE, "mensaje 111-2")
        await eventually(lambda: _answers(fake_telegram)["mensaje 111-2"] == 1, timeout=30)
        assert _answers(fake_telegram)["mensaje 111-1"] == 1
        assert _asked(fake_groq)["mensaje 111-1"] == 1     # the model was not asked again
        assert not any("Ya estoy trabajando" in (s.text or "") for s in fake_telegram.sent)
    finally:
        proc.kill()
        await proc.wait()


async def test_a_turn_longer_than_the_stop_grace_is_cut_and_answered_once_after_restart(
        tmp_path, fake_groq, fake_telegram):  # noqa: ANN001
    """SIGTERM while the model thinks longer than the grace: the stop does not wait for it,
    nothing is sent for the cut turn, and the restarted bot answers it exactly once."""
    config = _config(tmp_path, fake_groq, fake_telegram, max_age=30, stop_grace=0.1)
    delay = {"seconds": 20.0}   # far beyond the grace; the fake server still waits it out
    _answer_after(fake_groq, delay)
    await _stop_during_a_turn(config, fake_groq, fake_telegram)
    assert _answers(fake_telegram)["mensaje 111-1"] == 0     # cut: not answered yet
    assert [r["update"]["message"]["text"] for r in _open_in_journal(config)
            if "reply" not in r] == ["mensaje 111-1"]          # kept in the journal
    delay["seconds"] = 0.0
    proc = await _start(config)
    try:
        await eventually(lambda: _answers(fake_telegram)["mensaje 111-1"] == 1, timeout=60)
        fake_telegram.push_text(ALICE, ALICE, "mensaje 111-2")
        await eventually(lambda: _answers(fake_telegram)["mensaje 111-2"] == 1, timeout=30)
        assert _answers(fake_telegram) == Counter({"mensaje 111-1": 1, "mensaje 111-2": 1})
    finally:
        proc.kill()
        await proc.wait()


def _open_in_journal(config) -> list[dict]:  # noqa: ANN001
    """What the bot's inbox journal still holds as unanswered (the bot is down)."""
    path = config.parent / "data" / "inbox" / "telegram.jsonl"
    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()
               if line.strip()]
    received = {}
    for r in records:   # the journal's format: received, answer begun, pieces sent
        key = (r.get("chat"), r.get("mid"))
        if r.get("op") == "recv":
            received[key] = r
        elif r.get("op") == "piece" and key in received:   # a streamed part, before it goes
            reply = received[key].setdefault("reply", {"parts": [], "ids": []})
            reply["parts"].append(r["text"])
        elif r.get("op") == "send" and key in received:
            before = received[key].get("reply", {"parts": [], "ids": []})
            received[key]["reply"] = {**r["reply"], "parts": before["parts"],
                                      "ids": before["ids"]}
        elif r.get("op") == "sent" and key in received:
            received[key]["reply"]["ids"].append(r["id"])
    return list(received.values())


async def _kill_when_accepted(config, fake_groq, fake_telegram, answer: str,  # noqa: ANN001
                              piece: str) -> list[int]:
    """One message whose model answer is `answer`; kill -9 the bot the moment Telegram has
    accepted the sent piece containing `piece`, before the bot hears its message id."""
    fake_groq.responder = lambda body: ScriptedReply({"role": "assistant", "content": answer})
    proc = await _start(config)
    killed: list[int] = []

    def kill(sent: Sent) -> None:
        if piece in (sent.text or "") and not killed:
            killed.append(sent.message_id)
            proc.kill()                                   # kill -9, mid-request

    fake_telegram.on_accepted = kill
    try:
        await fake_telegram.wait_for_call("getUpdates", timeout=60)
        fake_telegram.push_text(ALICE, ALICE, "mensaje 111-1")
        await proc.wait()
    finally:
        fake_telegram.on_accepted = None
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    return killed


async def test_an_answer_accepted_as_the_bot_died_is_sent_again_once_with_the_same_text(
        tmp_path, fake_groq, fake_telegram):  # noqa: ANN001
    """The one moment exactly-once cannot cover: Telegram accepted the answer, the bot died
    before it heard the message id. The Bot API cannot tell a bot what it already sent, so
    the restart sends the journaled answer again — once, the very same text, no model call."""
    config = _config(tmp_path, fake_groq, fake_telegram, max_age=30)
    answer = "respuesta a mensaje 111-1: **hecho**, con *formato*"
    assert await _kill_when_accepted(config, fake_groq, fake_telegram, answer, "hecho")
    [journaled] = _open_in_journal(config)
    assert journaled["reply"]["text"] == answer and journaled["reply"]["ids"] == []
    asked = len(fake_groq.requests)
    first = [s for s in fake_telegram.sent if "hecho" in (s.text or "")]
    fake_groq.responder = lambda body: ScriptedReply(
        {"role": "assistant", "content": "respuesta a mensaje 111-2"})
    proc = await _start(config)
    try:
        await eventually(lambda: _answers(fake_telegram)["mensaje 111-1"] == 2, timeout=60)
        fake_telegram.push_text(ALICE, ALICE, "mensaje 111-2")          # and then nothing more
        await eventually(lambda: _answers(fake_telegram)["mensaje 111-2"] == 1, timeout=30)
        await eventually(lambda: _open_in_journal(config) == [], timeout=30)   # then kill
    finally:
        proc.kill()
        await proc.wait()
    again = [s for s in fake_telegram.sent if "hecho" in (s.text or "")]
    assert len(again) == 2 and again[1].text == first[0].text            # the same text
    assert again[1].parse_mode == first[0].parse_mode
    assert again[1].reply_to_message_id == first[0].reply_to_message_id
    assert len(fake_groq.requests) == asked + 1       # only "mensaje 111-2" asked the model
    assert _answers(fake_telegram)["mensaje 111-1"] == 2


async def test_a_long_answer_cut_between_its_pieces_sends_only_the_missing_ones(
        tmp_path, fake_groq, fake_telegram):  # noqa: ANN001
    """A 3-piece answer sent whole (no draft); the bot dies as Telegram accepts the second
    piece. Piece 1's id was journaled: it is not sent again; piece 2 (accepted, id unheard)
    and piece 3 are."""
    config = _config(tmp_path, fake_groq, fake_telegram, max_age=30, stream=False)
    pieces = [f"parte {n} de la respuesta a mensaje 111-1. " + "palabra " * 480
              for n in (1, 2, 3)]
    answer = "\n\n".join(pieces)
    assert await _kill_when_accepted(config, fake_groq, fake_telegram, answer, "parte 2 ")
    [journaled] = _open_in_journal(config)
    assert len(journaled["reply"]["ids"]) == 1                            # piece 1's id kept
    asked = len(fake_groq.requests)
    proc = await _start(config)
    try:
        await eventually(lambda: any("parte 3 " in (s.text or "") for s in fake_telegram.sent),
                         timeout=60)
        await eventually(lambda: _open_in_journal(config) == [], timeout=30)
    finally:
        proc.kill()
        await proc.wait()
    seen = Counter(n for s in fake_telegram.sent for n in (1, 2, 3)
                   if f"parte {n} " in (s.text or ""))
    assert seen == {1: 1, 2: 2, 3: 1}, seen
    assert len(fake_groq.requests) == asked


def _parts(count: int) -> list[str]:
    return [f"parte {n} de la respuesta a mensaje 111-1. " + "palabra " * 480
            for n in range(1, count + 1)]


def _seen(fake_telegram, count: int) -> Counter[int]:  # noqa: ANN001
    return Counter(n for s in fake_telegram.sent for n in range(1, count + 1)
                   if f"parte {n} " in (s.text or ""))


async def _restart_until_settled(config) -> None:  # noqa: ANN001
    proc = await _start(config)
    try:
        await eventually(lambda: _open_in_journal(config) == [], timeout=60)
    finally:
        proc.kill()
        await proc.wait()


@pytest.mark.parametrize("killed_at", [1, 2])
async def test_a_streamed_part_is_journaled_before_it_goes_out(
        tmp_path, fake_groq, fake_telegram, killed_at: int):  # noqa: ANN001
    """A 4-part answer streamed slowly: the draft sends its first parts as real messages while
    the model still writes. The bot dies as Telegram accepts streamed part 1 or 2: the journal
    already holds that part (its intent), so the restart sends it again — once — and never
    a part whose id was journaled; the rest was never written, so the person is asked
    whether to repeat, and the model is not asked again."""
    config = _config(tmp_path, fake_groq, fake_telegram, max_age=30)
    fake_groq.stream_chunk_chars, fake_groq.stream_delay = 200, 0.2   # ~16 s of writing
    pieces = _parts(4)
    assert await _kill_when_accepted(config, fake_groq, fake_telegram, "\n\n".join(pieces),
                                     f"parte {killed_at} ")
    [journaled] = _open_in_journal(config)
    reply = journaled["reply"]
    assert "text" not in reply                          # killed while the model still wrote
    assert len(reply["parts"]) == killed_at and len(reply["ids"]) == killed_at - 1
    assert reply["parts"][-1] == pieces[killed_at - 1].strip()
    asked = len(fake_groq.requests)
    await _restart_until_settled(config)
    expected = {n: 1 for n in range(1, killed_at + 1)} | {killed_at: 2}
    assert _seen(fake_telegram, 4) == expected
    assert sum("Se me cortó" in (s.text or "") for s in fake_telegram.sent) == 1
    assert len(fake_groq.requests) == asked


async def test_a_streamed_answer_cut_in_its_last_piece_sends_only_that_piece_again(
        tmp_path, fake_groq, fake_telegram):  # noqa: ANN001
    """The model finished; streamed parts went out (ids journaled), then the rest was
    journaled and the bot died as Telegram accepted its last piece: only that piece goes
    out again, with no model call and no question."""
    config = _config(tmp_path, fake_groq, fake_telegram, max_age=30)
    fake_groq.stream_chunk_chars, fake_groq.stream_delay = 200, 0.2
    pieces = _parts(4)
    assert await _kill_when_accepted(config, fake_groq, fake_telegram, "\n\n".join(pieces),
                                     "parte 4 ")
    [journaled] = _open_in_journal(config)
    reply = journaled["reply"]
    assert reply["parts"] and len(reply["ids"]) == len(reply["parts"])  # streamed, confirmed
    assert "parte 4 " in reply["text"]                  # the rest, journaled before it went
    asked = len(fake_groq.requests)
    await _restart_until_settled(config)
    assert _seen(fake_telegram, 4) == {1: 1, 2: 1, 3: 1, 4: 2}
    assert not any("Se me cortó" in (s.text or "") for s in fake_telegram.sent)
    assert len(fake_groq.requests) == asked

"""The inbox journal on a real file: what it holds, and what survives a reload."""

from __future__ import annotations

import json

from rumi.channels.inbox import Inbox


def _update(text: str, name: str = "Ana") -> dict:
    return {"update_id": 1, "message": {"message_id": 10, "date": 0, "text": text,
                                        "chat": {"id": 5, "type": "private"},
                                        "from": {"id": 5, "is_bot": False, "first_name": name}}}


async def test_a_lone_surrogate_is_journaled_replaced_and_survives_a_reload(tmp_path):
    path = tmp_path / "inbox.jsonl"
    inbox = Inbox(path)
    await inbox.load()
    await inbox.received(1, 5, 10, _update("\ud83d hola", name="\udc00Ana"))
    again = await Inbox(path).load()
    assert [p.message_id for p in again] == [10]
    message = again[0].update["message"]
    assert message["text"] == "\ufffd hola" and message["from"]["first_name"] == "\ufffdAna"


async def test_answered_text_and_sender_leave_the_journal_at_once(tmp_path):
    path = tmp_path / "inbox.jsonl"
    inbox = Inbox(path)
    await inbox.load()
    await inbox.received(1, 5, 10, _update("mi pin es 4471", name="Berenguela"))
    await inbox.received(2, 6, 20, _update("todavía sin respuesta"))
    await inbox.done(5, 10)
    text = path.read_text(encoding="utf-8")
    assert "4471" not in text and "Berenguela" not in text
    assert "todavía sin respuesta" in text                         # unanswered stays
    again = Inbox(path)
    assert [p.message_id for p in await again.load()] == [20]
    assert again.seen(1) and again.seen(2)                           # re-sent ones dropped


async def test_a_crash_before_the_answer_is_journaled_loses_nothing(tmp_path):
    """Every write is an fsynced append or an atomic rewrite: a process that dies at any
    point leaves the unanswered message on disk (a cut last line is skipped, not fatal)."""
    path = tmp_path / "inbox.jsonl"
    inbox = Inbox(path)
    await inbox.load()
    await inbox.received(1, 5, 10, _update("primero"))
    await inbox.done(5, 10)
    await inbox.received(2, 5, 11, _update("segundo"))
    with path.open("a", encoding="utf-8") as handle:   # a third append cut by the crash
        handle.write('{"op": "recv", "update_id": 3, "chat": 5, "mi')
    pending = await Inbox(path).load()
    assert [p.update["message"]["text"] for p in pending] == ["segundo"]


async def test_a_notice_is_remembered_across_restarts_without_its_words(tmp_path):
    path = tmp_path / "inbox.jsonl"
    inbox = Inbox(path)
    await inbox.load()
    await inbox.received(1, 5, 10, _update("espera"))
    assert not inbox.noted(5, 10, "⏳ Ya estoy trabajando")
    await inbox.note(5, 10, "⏳ Ya estoy trabajando")
    assert "Ya estoy" not in path.read_text(encoding="utf-8")
    again = Inbox(path)
    await again.load()
    assert again.noted(5, 10, "⏳ Ya estoy trabajando")
    assert not again.noted(5, 10, "otro aviso")


async def test_an_old_journal_with_done_lines_is_read_and_rewritten_without_them(tmp_path):
    path = tmp_path / "inbox.jsonl"
    lines = [{"op": "recv", "update_id": 1, "chat": 5, "mid": 10, "at": 0, "update": _update("a")},
             {"op": "done", "chat": 5, "mid": 10},
             {"op": "recv", "update_id": 2, "chat": 5, "mid": 11, "at": 0, "update": _update("b")}]
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    assert [p.message_id for p in await Inbox(path).load()] == [11]
    assert '"text": "a"' not in path.read_text(encoding="utf-8")


async def test_an_answer_begun_survives_a_restart_with_the_ids_telegram_returned(tmp_path):
    """The answer's text is journaled before it is sent, each piece's id after; a reload (even
    after a compaction) hands back the text and which pieces went out."""
    path = tmp_path / "inbox.jsonl"
    inbox = Inbox(path)
    await inbox.load()
    await inbox.received(1, 5, 10, _update("paga 3"))
    reply = {"text": "Pagado.\n\nListo", "markdown": True, "reply_to": 10,
             "buttons": [[("Sí", "/memorymd yes")]]}
    await inbox.sending(5, 10, reply)
    await inbox.delivered(5, 10, 0, 2001)
    await inbox.delivered(5, 10, 0, 2002)     # the same piece twice: kept once
    await inbox.delivered(5, 10, 2, 2003)     # out of order: not recorded
    for _ in range(2):                         # the second load reads the compacted file
        [pending] = await Inbox(path).load()
        assert pending.reply is not None
        assert (pending.reply.text, pending.reply.markdown, pending.reply.reply_to) == (
            "Pagado.\n\nListo", True, 10)
        assert pending.reply.buttons == [[("Sí", "/memorymd yes")]]
        assert pending.reply.sent_ids == (2001,)
    again = Inbox(path)
    await again.load()
    await again.done(5, 10)                    # answered: the text leaves the disk
    assert "Pagado" not in path.read_text(encoding="utf-8")
    assert await Inbox(path).load() == []


async def test_streamed_parts_are_journaled_before_they_go_out_and_the_rest_follows(tmp_path):
    """A streamed answer: each part is journaled before it is sent, its id after; a reload
    (also after a compaction) hands back the parts with the ids, even before the rest is
    known; the rest keeps the confirmed parts and numbers its pieces after them."""
    path = tmp_path / "inbox.jsonl"
    inbox = Inbox(path)
    await inbox.load()
    await inbox.received(1, 5, 10, _update("cuéntame"))
    assert await inbox.sending_piece(5, 10, "primera parte") == 0
    await inbox.delivered(5, 10, 0, 3001)
    assert await inbox.sending_piece(5, 10, "segunda parte") == 1   # crash: no id
    for _ in range(2):
        [pending] = await Inbox(path).load()
        assert pending.reply is not None and pending.reply.text is None
        assert pending.reply.parts == ("primera parte", "segunda parte")
        assert pending.reply.sent_ids == (3001,)
    # live, the unconfirmed part was not sent (its text is in the rest): it is dropped
    assert await inbox.sending(5, 10, {"text": "segunda parte y fin", "markdown": True,
                                       "reply_to": None, "buttons": None}) == 1
    await inbox.delivered(5, 10, 1, 3002)
    for _ in range(2):
        [pending] = await Inbox(path).load()
        assert pending.reply is not None
        assert pending.reply.parts == ("primera parte",)
        assert pending.reply.text == "segunda parte y fin"
        assert pending.reply.sent_ids == (3001, 3002)


async def test_a_damaged_answer_record_leaves_the_message_to_be_answered_anew(tmp_path):
    path = tmp_path / "inbox.jsonl"
    inbox = Inbox(path)
    await inbox.load()
    await inbox.received(1, 5, 10, _update("hola"))
    with path.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps({"op": "send", "chat": 5, "mid": 10,
                                 "reply": {"text": "ok", "reply_to": "x"}}) + "\n")
        handle.write('{"op": "sent", "chat": 5, "mid": 10, "n": 0, "id": 7')   # cut
    [pending] = await Inbox(path).load()
    assert pending.update["message"]["text"] == "hola" and pending.reply is None

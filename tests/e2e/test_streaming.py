"""Answers that appear as they are written: the real bot, the fake Bot API's drafts, and a
fake Groq that streams slowly."""

from __future__ import annotations

import asyncio
import json

import pytest

from rumi import messages as msg
from tests.e2e.conftest import ALICE, chat_dir
from tests.fakes.groq_server import ScriptedReply
from tests.fakes.groq_stream import StreamFault

pytestmark = pytest.mark.e2e

GROUP = -100300
ANSWER = " ".join(f"Frase número {n} de una respuesta que se escribe poco a poco."
                  for n in range(1, 9))


async def until(condition, timeout: float = 10.0) -> None:
    async def wait() -> None:
        while not condition():
            await asyncio.sleep(0.02)
    await asyncio.wait_for(wait(), timeout)


@pytest.fixture
def slow_model(fake_groq):
    """A model without reasoning that writes 16 characters every 0.1 s."""
    fake_groq.stream_delay = 0.1
    return 'model = "fake"\nfallback_models = []\n'


async def test_a_private_answer_grows_in_a_draft_and_arrives_once(
        start_bot, bot_settings, fake_telegram, fake_groq, slow_model) -> None:
    await start_bot(bot_settings(llm_extra=slow_model))
    fake_groq.enqueue_text(ANSWER)
    fake_telegram.push_text(ALICE, ALICE, "cuéntame algo")
    [sent] = await fake_telegram.wait_for_sent(1)
    assert sent.text == ANSWER
    drafts = fake_telegram.drafts.history
    assert len(drafts) >= 3
    assert {d.chat_id for d in drafts} == {ALICE} and drafts[0].draft_id != 0
    assert len({d.draft_id for d in drafts}) == 1
    texts = [d.text for d in drafts]
    assert all(ANSWER.startswith(t) for t in texts)
    assert [len(t) for t in texts] == sorted(len(t) for t in texts) and texts[0] != texts[-1]
    assert fake_telegram.texts(ALICE).count(ANSWER) == 1
    assert fake_telegram.drafts.visible(ALICE) is None   # the real message replaced it


async def test_streaming_off_sends_the_whole_answer_without_drafts(
        start_bot, bot_settings, fake_telegram, fake_groq, slow_model) -> None:
    settings = bot_settings(llm_extra=slow_model)
    settings.telegram.stream = False
    await start_bot(settings)
    fake_groq.enqueue_text(ANSWER)
    fake_telegram.push_text(ALICE, ALICE, "cuéntame algo")
    [sent] = await fake_telegram.wait_for_sent(1)
    assert sent.text == ANSWER
    assert fake_telegram.drafts.history == []
    assert "stream" not in fake_groq.requests[0]


async def test_a_group_gets_no_drafts_and_one_answer(start_bot, bot_settings, fake_telegram,
                                                     fake_groq, slow_model) -> None:
    await start_bot(bot_settings(llm_extra=slow_model))
    fake_groq.enqueue_text(ANSWER)
    fake_telegram.push_text(ALICE, GROUP, f"@{fake_telegram.bot_username} cuéntame algo",
                            chat_type="supergroup")
    [sent] = await fake_telegram.wait_for_sent(1)
    await asyncio.sleep(0.3)
    assert sent.chat_id == GROUP and sent.text == ANSWER
    assert fake_telegram.drafts.history == []
    assert fake_telegram.texts(GROUP) == [ANSWER]


async def test_a_long_answer_sends_its_first_part_and_goes_on_in_a_new_draft(
        start_bot, bot_settings, fake_telegram, fake_groq, slow_model) -> None:
    fake_groq.stream_chunk_chars, fake_groq.stream_delay = 400, 0.25   # ~5 s in all
    paragraphs = [f"Párrafo {n}: " + " ".join(["texto de relleno bastante largo"] * 12)
                  for n in range(20)]
    long_answer = "\n\n".join(paragraphs)
    assert 6_000 < len(long_answer) < 8_000
    await start_bot(bot_settings(llm_extra=slow_model + "max_output_tokens = 4096\n"))
    fake_groq.enqueue_text(long_answer)
    fake_telegram.push_text(ALICE, ALICE, "escribe mucho")
    await until(lambda: "\n\n".join(fake_telegram.texts(ALICE)) == long_answer)
    await asyncio.sleep(0.3)
    texts = fake_telegram.texts(ALICE)
    assert "\n\n".join(texts) == long_answer   # every word once, in order, nothing after
    assert len(texts) >= 2 and all(len(t) <= 4096 for t in texts)
    draft_ids = [d.draft_id for d in fake_telegram.drafts.history]
    assert len(set(draft_ids)) >= 2 and draft_ids == sorted(draft_ids)


async def test_stop_mid_stream_keeps_what_was_written_and_the_chat_goes_on(
        start_bot, bot_settings, fake_telegram, fake_groq, slow_model) -> None:
    bot = await start_bot(bot_settings(llm_extra=slow_model))
    endless = "palabra " * 400
    fake_groq.enqueue_text(endless)
    fake_telegram.push_text(ALICE, ALICE, "escribe sin parar")
    await until(lambda: len(fake_telegram.drafts.history) >= 2)
    fake_telegram.push_text(ALICE, ALICE, "/stop")
    await until(lambda: any(msg.STOPPED_MARK in t for t in fake_telegram.texts(ALICE)))
    kept = next(t for t in fake_telegram.texts(ALICE) if msg.STOPPED_MARK in t)
    written = kept.removesuffix(msg.STOPPED_MARK).strip()
    assert written and endless.startswith(written) and len(written) < len(endless.strip())
    tape = (chat_dir(bot.app.settings, ALICE) / ".smma" / "session_log.jsonl").read_text()
    assert json.dumps(kept, ensure_ascii=False)[1:-1] in tape   # recorded as the stopped reply
    record = fake_groq.streams[0]
    await until(lambda: record.client_closed)
    assert not record.done
    chunks_at_stop = record.chunks
    await asyncio.sleep(0.3)
    assert record.chunks == chunks_at_stop   # nothing more was generated for it
    fake_groq.enqueue_text("Aquí sigo.")
    before = len(fake_telegram.texts(ALICE))
    fake_telegram.push_text(ALICE, ALICE, "¿sigues ahí?")
    await until(lambda: "Aquí sigo." in fake_telegram.texts(ALICE)[before:])
    assert sum(msg.STOPPED_MARK in t for t in fake_telegram.texts(ALICE)) == 1


async def test_the_drafts_stop_button_does_what_stop_does(
        start_bot, bot_settings, fake_telegram, fake_groq, slow_model) -> None:
    await start_bot(bot_settings(llm_extra=slow_model))
    fake_groq.enqueue_text("palabra " * 400)
    fake_telegram.push_text(ALICE, ALICE, "escribe sin parar")
    await until(lambda: len(fake_telegram.drafts.history) >= 2)
    draft = fake_telegram.drafts.history[-1]
    assert str(draft.params.get("can_stop")).lower() == "true"   # form-encoded JSON
    assert str(draft.params.get("keep_on_stop")).lower() == "true"
    fake_telegram.press_stop(ALICE, draft.draft_id)
    await until(lambda: any(msg.STOPPED_MARK in t for t in fake_telegram.texts(ALICE)))
    await until(lambda: fake_groq.streams[0].client_closed)
    assert not fake_groq.streams[0].done


async def test_a_tool_turn_shows_its_step_in_the_draft_and_sends_the_result_once(
        start_bot, bot_settings, fake_telegram, fake_groq, slow_model) -> None:
    bot = await start_bot(bot_settings(llm_extra=slow_model))
    bot.channel.drafts.interval = 0.2   # a quick tool step is still seen in the draft
    fake_groq.queue.append(ScriptedReply(
        {"role": "assistant", "content": "Miro tus notas.",
         "tool_calls": [{"id": "c1", "type": "function", "function": {
             "name": "load_from_disk", "arguments": '{"file_name": "agent_notes.md"}'}}]},
        delay=0.0))
    fake_groq.enqueue_text("Tus notas están vacías por ahora.")
    fake_telegram.push_text(ALICE, ALICE, "¿qué dicen mis notas?")
    [sent] = await fake_telegram.wait_for_sent(1)
    await asyncio.sleep(0.5)
    assert fake_telegram.texts(ALICE) == ["Tus notas están vacías por ahora."]
    drafts = fake_telegram.drafts.texts(ALICE)
    assert any("Miro tus notas." in d and "load_from_disk" in d for d in drafts)
    assert drafts[-1] in "Tus notas están vacías por ahora."


async def test_a_draft_refused_for_its_formatting_goes_on_as_plain_text(
        start_bot, bot_settings, fake_telegram, fake_groq, slow_model) -> None:
    await start_bot(bot_settings(llm_extra=slow_model))
    fake_telegram.fail_parse(1)   # the first formatted call is the first draft
    answer = "usa **negrita** y `code` " * 6
    fake_groq.enqueue_text(answer)
    fake_telegram.push_text(ALICE, ALICE, "formato")
    [sent] = await fake_telegram.wait_for_sent(1)
    drafts = fake_telegram.drafts.history
    assert drafts and drafts[0].parse_mode is None and "**negrita**" in drafts[0].text
    assert sent.parse_mode == "HTML"   # the answer itself is formatted
    assert fake_telegram.texts(ALICE) == [sent.text]


async def test_a_stream_broken_after_text_is_answered_honestly_and_once(
        start_bot, bot_settings, fake_telegram, fake_groq, slow_model) -> None:
    await start_bot(bot_settings(llm_extra=slow_model))
    fake_groq.queue.append(ScriptedReply({"role": "assistant", "content": ANSWER},
                                         stream_fault=StreamFault(12)))
    fake_telegram.push_text(ALICE, ALICE, "cuéntame algo")
    [sent] = await fake_telegram.wait_for_sent(1)
    await asyncio.sleep(0.3)
    assert sent.text == f"{ANSWER[:12 * 16].rstrip()}\n\n{msg.STREAM_CUT}"
    assert len(fake_telegram.texts(ALICE)) == 1 and len(fake_groq.requests) == 1
    fake_groq.enqueue_text("Ahora sí.")
    fake_telegram.push_text(ALICE, ALICE, "¿otra vez?")
    await until(lambda: "Ahora sí." in fake_telegram.texts(ALICE))

"""Drive the real application through fake Telegram and fake Groq, as a person would."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest

from rumi import messages as msg
from tests.e2e.conftest import ALICE, MALLORY, chat_dir
from tests.fakes.groq_server import ScriptedReply
from tests.prompt_shape import automatic, person

pytestmark = pytest.mark.e2e
RUMI = [sys.executable, "-c", "import sys; from rumi.cli import main; sys.exit(main())"]


async def test_plain_chat_and_command_menu(start_bot, fake_telegram, fake_groq) -> None:
    await start_bot()
    commands = {c["command"] for c in fake_telegram.commands}
    assert {"start", "help", "status", "stop", "remember", "forget", "clear", "reset",
            "export", "pin", "unpin", "memory", "search", "import"} <= commands
    fake_groq.enqueue_text("¡Hola, **Ana**!")
    fake_telegram.push_text(ALICE, ALICE, "hola")
    [sent] = await fake_telegram.wait_for_sent(1)
    assert sent.text == "¡Hola, <b>Ana</b>!" and sent.parse_mode == "HTML"
    assert (ALICE, "typing") in fake_telegram.actions
    request = fake_groq.requests[0]
    assert request["messages"][0]["role"] == "system"
    assert request["messages"][-1] == person(request)   # the person's words come last
    assert request["messages"][-1]["content"] == "[#1] hola"
    assert "ESTADO DE MEMORIA:" in automatic(request)   # right before them


async def test_tool_call_round_trip(start_bot, fake_telegram, fake_groq) -> None:
    bot = await start_bot()
    fake_groq.enqueue_tool_call("edit_section", {"section_name": "current_task",
                                                 "new_content": "Planear viaje a Lima"})
    fake_groq.enqueue_text("Anotado en la tarea actual.")
    fake_telegram.push_text(ALICE, ALICE, "apunta que planeo un viaje a Lima")
    [sent] = await fake_telegram.wait_for_sent(1)
    assert sent.text == "Anotado en la tarea actual."
    tool_msg = fake_groq.requests[1]["messages"][-1]   # the step ends with the result
    assert tool_msg["role"] == "tool"
    assert "apunta que planeo un viaje a Lima" in person(fake_groq.requests[1])["content"]
    task_file = chat_dir(bot.app.settings, ALICE) / ".smma" / "current_task.md"
    assert "Lima" in task_file.read_text(encoding="utf-8")
    tape = (chat_dir(bot.app.settings, ALICE) / ".smma" / "session_log.jsonl").read_text()
    assert "edit_section" in tape and "Anotado" in tape


async def test_busy_chat_gets_hourglass_then_both_answers(start_bot, fake_telegram,
                                                          fake_groq) -> None:
    await start_bot()
    fake_groq.enqueue_text("primera respuesta", delay=1.0)
    fake_groq.enqueue_text("segunda respuesta")
    fake_telegram.push_text(ALICE, ALICE, "uno")
    while not fake_groq.requests:
        await asyncio.sleep(0.02)
    fake_telegram.push_text(ALICE, ALICE, "dos")
    sent = await fake_telegram.wait_for_sent(3)
    assert [s.text for s in sent] == [msg.BUSY, "primera respuesta", "segunda respuesta"]


async def test_stranger_gets_one_refusal_and_nothing_is_stored(start_bot, fake_telegram,
                                                                fake_groq) -> None:
    bot = await start_bot()
    fake_telegram.push_text(MALLORY, MALLORY, "hola")
    fake_telegram.push_text(MALLORY, MALLORY, "¿hola?")
    fake_groq.enqueue_text("para Ana")
    fake_telegram.push_text(ALICE, ALICE, "hola")
    sent = await fake_telegram.wait_for_sent(2)
    refusals = [s for s in sent if s.chat_id == MALLORY]
    assert len(refusals) == 1 and str(MALLORY) in (refusals[0].text or "")
    assert len(fake_groq.requests) == 1
    assert not chat_dir(bot.app.settings, MALLORY).exists()


async def test_empty_allowlist_refuses_everyone(start_bot, bot_settings, fake_telegram,
                                                fake_groq) -> None:
    settings = bot_settings()
    settings.telegram.allowed_users = []
    await start_bot(settings)
    fake_telegram.push_text(ALICE, ALICE, "hola")
    [sent] = await fake_telegram.wait_for_sent(1)
    assert "autorizadas" in (sent.text or "")
    assert fake_groq.requests == []


async def test_long_reply_is_split_in_two(start_bot, fake_telegram, fake_groq) -> None:
    await start_bot()
    paragraphs = [f"Párrafo {i}: " + "x" * 490 for i in range(10)]
    long_text = "\n\n".join(paragraphs)
    assert len(long_text) > 5000
    # ~1,270 tokens: cut by the default 1,024-token budget, then asked again with more room
    fake_groq.enqueue_text(long_text)
    fake_groq.enqueue_text(long_text)
    fake_telegram.push_text(ALICE, ALICE, "cuéntame mucho")
    sent = await fake_telegram.wait_for_sent(2)
    assert [r["max_completion_tokens"] for r in fake_groq.requests] == [1024, 4096]
    assert all(len(s.text or "") <= 4096 for s in sent)
    assert (sent[0].text or "").endswith("x") and (sent[1].text or "").startswith("Párrafo")
    assert "\n\n".join(s.text or "" for s in sent) == long_text
    await asyncio.sleep(0.2)
    assert len(fake_telegram.sent) == 2


async def test_parse_error_resends_as_plain_text(start_bot, bot_settings, fake_telegram,
                                                 fake_groq) -> None:
    settings = bot_settings()
    settings.telegram.stream = False   # the answer's own send meets the refusal (drafts: below)
    await start_bot(settings)
    fake_telegram.fail_parse(1)
    fake_groq.enqueue_text("usa **negrita** y `code`")
    fake_telegram.push_text(ALICE, ALICE, "formato")
    [sent] = await fake_telegram.wait_for_sent(1)
    assert sent.parse_mode is None and sent.text == "usa **negrita** y `code`"


async def test_groq_429_then_success(start_bot, fake_telegram, fake_groq) -> None:
    await start_bot()
    fake_groq.enqueue_error(429, "rate limited", headers={"retry-after": "0"})
    fake_groq.enqueue_text("ya estoy")
    fake_telegram.push_text(ALICE, ALICE, "hola")
    [sent] = await fake_telegram.wait_for_sent(1)
    assert sent.text == "ya estoy"
    assert len(fake_groq.requests) == 2


async def test_groq_outage_gives_friendly_message(start_bot, fake_telegram, fake_groq) -> None:
    await start_bot()
    fake_groq.responder = lambda body: ScriptedReply(status=503, error_body={"error": {
        "message": "internal details xyz", "type": "server_error"}})
    fake_telegram.push_text(ALICE, ALICE, "hola")
    [sent] = await fake_telegram.wait_for_sent(1)
    assert sent.text == msg.MODEL_UNAVAILABLE
    assert "xyz" not in (sent.text or "")
    assert len(fake_groq.requests) == 3  # 1 + max_retries


async def test_restart_keeps_the_session(start_bot, bot_settings, fake_telegram,
                                         fake_groq) -> None:
    settings = bot_settings()
    first = await start_bot(settings)
    fake_groq.enqueue_text("Encantada, Ana.")
    fake_telegram.push_text(ALICE, ALICE, "me llamo Ana")
    await fake_telegram.wait_for_sent(1)
    await first.stop()
    second = await start_bot(bot_settings())
    assert second is not first
    fake_groq.enqueue_text("Te llamas Ana.")
    fake_telegram.push_text(ALICE, ALICE, "¿cómo me llamo?")
    await fake_telegram.wait_for_sent(2)
    history = json.dumps(fake_groq.requests[-1]["messages"], ensure_ascii=False)
    assert "me llamo Ana" in history and "Encantada, Ana." in history


async def test_corrupt_session_json_is_moved_aside(start_bot, bot_settings, fake_telegram,
                                                   fake_groq, caplog) -> None:
    settings = bot_settings()
    folder = chat_dir(settings, ALICE)
    folder.mkdir(parents=True)
    (folder / "session.json").write_text("{ this is not json", encoding="utf-8")
    await start_bot(settings)
    fake_groq.enqueue_text("sigo aquí")
    fake_telegram.push_text(ALICE, ALICE, "hola")
    [sent] = await fake_telegram.wait_for_sent(1)
    assert sent.text == "sigo aquí"
    aside = list(folder.glob("session.json.corrupt-*"))
    assert len(aside) == 1 and aside[0].read_text() == "{ this is not json"
    assert json.loads((folder / "session.json").read_text())["chat_id"] == str(ALICE)
    assert "corrupt" in caplog.text


async def test_group_answers_only_when_addressed(start_bot, fake_telegram, fake_groq) -> None:
    await start_bot()
    group = -100123
    fake_telegram.push_text(ALICE, group, "hablando entre humanos", chat_type="supergroup")
    fake_groq.enqueue_text("¡Aquí estoy!")
    fake_telegram.push_text(ALICE, group, f"@{fake_telegram.bot_username} ¿estás?",
                            chat_type="supergroup")
    [sent] = await fake_telegram.wait_for_sent(1)
    assert sent.chat_id == group and sent.text == "¡Aquí estoy!"
    assert sent.reply_to_message_id is not None
    fake_groq.enqueue_text("respondiendo a tu respuesta")
    fake_telegram.push_text(ALICE, group, "gracias", reply_to=sent.message_id,
                            chat_type="supergroup")
    await fake_telegram.wait_for_sent(2)
    assert len(fake_groq.requests) == 2
    user_turns = [m["content"] for m in fake_groq.requests[0]["messages"] if m["role"] == "user"]
    assert not any("humanos" in t for t in user_turns)


async def test_stop_cancels_a_running_turn(start_bot, fake_telegram, fake_groq) -> None:
    await start_bot()
    fake_groq.enqueue_text("demasiado tarde", delay=2.0)
    fake_telegram.push_text(ALICE, ALICE, "algo largo")
    while not fake_groq.requests:
        await asyncio.sleep(0.02)
    fake_telegram.push_text(ALICE, ALICE, "/stop")
    sent = await fake_telegram.wait_for_sent(1)
    assert [s.text for s in sent] == [msg.STOPPED_REPLY]   # one reply, not two (issue 33)
    fake_groq.enqueue_text("de nuevo aquí")
    fake_telegram.push_text(ALICE, ALICE, "¿sigues?")
    sent = await fake_telegram.wait_for_sent(2)
    assert [s.text for s in sent] == [msg.STOPPED_REPLY, "de nuevo aquí"]


async def test_pin_by_replying_to_rumis_message_then_status_and_clear(
        start_bot, fake_telegram, fake_groq) -> None:
    """The real engine end to end: a reply to the bot's own message pins the assistant
    item it shows; /status shows the live dashboard with the pin; /clear empties it all."""
    bot = await start_bot()
    fake_groq.enqueue_text("[#2] La contraseña del wifi es **rumi-2026**.")
    fake_telegram.push_text(ALICE, ALICE, "¿Cuál era la contraseña del wifi?")
    [answer] = await fake_telegram.wait_for_sent(1)
    assert answer.text == "La contraseña del wifi es <b>rumi-2026</b>."
    session = await bot.app.sessions.get(str(ALICE))
    item = session.items[-1]
    assert item.role == "assistant"
    for _ in range(100):  # linked right after sendMessage returns
        if item.channel_message_id == answer.message_id:
            break
        await asyncio.sleep(0.02)
    assert item.channel_message_id == answer.message_id

    fake_telegram.push_text(ALICE, ALICE, "/pin", reply_to=answer.message_id)
    sent = await fake_telegram.wait_for_sent(2)
    assert sent[1].text == msg.PINNED.format(id=item.id) and item.pinned

    fake_telegram.push_text(ALICE, ALICE, "/status detalle")
    sent = await fake_telegram.wait_for_sent(3)
    assert "ESTADO DE MEMORIA:" in (sent[2].text or "")
    assert f"Fijados (no se pueden podar ni resumir): #{item.id}" in (sent[2].text or "")

    fake_telegram.push_text(ALICE, ALICE, "/clear")
    await fake_telegram.wait_for_sent(4)
    assert session.items == []
    tape = (chat_dir(bot.app.settings, ALICE) / ".smma" / "session_log.jsonl").read_text()
    events = [json.loads(line).get("event") for line in tape.splitlines()]
    assert "pin" in events and "clear" in events


def test_malformed_config_exits_2(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text('[telegram]\nallowed_users = "everyone"\n', encoding="utf-8")
    result = subprocess.run([*RUMI, "run", "--config", str(config)],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and "telegram.allowed_users" in result.stderr
    assert "Traceback" not in result.stderr


def test_missing_token_exits_2(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text('[llm]\napi_key = "k"\n', encoding="utf-8")
    result = subprocess.run([*RUMI, "run", "--config", str(config)],
                            capture_output=True, text=True, timeout=60,
                            env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)})
    assert result.returncode == 2
    assert "telegram.token" in result.stderr and "TELEGRAM_TOKEN" in result.stderr

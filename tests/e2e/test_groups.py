"""Groups through the real bot: who is speaking, whose memory it is, who may forget it, and
`/memory off|on` — fake Telegram (a supergroup, several members, getChatMember) and fake Groq."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from rumi import messages as msg
from tests.e2e.conftest import ALICE, chat_dir
from tests.fakes.groq_server import ScriptedReply
from tests.prompt_shape import automatic, person

pytestmark = pytest.mark.e2e

LUIS = 222
BOSS = 333
GROUP = -100200
EXTRACTION = "You extract long-term memories"


class Model:
    """Fake Groq's answers: scripted extraction JSON, a plain reply otherwise."""

    def __init__(self) -> None:
        self.memories: list[dict[str, Any]] = []

    def __call__(self, body: dict[str, Any]) -> ScriptedReply:
        system = str(body["messages"][0].get("content") or "")
        if system.startswith(EXTRACTION):
            payload = {"memories": self.memories, "events": []}
            return ScriptedReply({"role": "assistant", "content": json.dumps(payload)})
        if (body.get("response_format") or {}).get("type") == "json_object":
            return ScriptedReply({"role": "assistant", "content": '{"action": "ADD"}'})
        return ScriptedReply({"role": "assistant", "content": "De acuerdo."})


@pytest.fixture
def model(fake_groq) -> Model:
    responder = Model()
    fake_groq.responder = responder
    return responder


@pytest.fixture
def group_settings(bot_settings):
    def factory() -> Any:
        settings = bot_settings()
        settings.telegram.allowed_users = [ALICE, LUIS, BOSS]
        return settings

    return factory


def say(fake_telegram, user: int, name: str, text: str) -> None:
    """A group message for the bot: commands as /cmd@bot, anything else with a mention."""
    bot = fake_telegram.bot_username
    if text.startswith("/"):
        command, _, rest = text.partition(" ")
        text = f"{command}@{bot} {rest}".strip()
    else:
        text = f"@{bot} {text}"
    fake_telegram.push_text(user, GROUP, text, chat_type="supergroup", first_name=name)


async def answer(fake_telegram, user: int, name: str, text: str) -> str:
    """Say it and wait for the bot's answer in the group (an "⏳ busy" notice is not one)."""
    wanted = len(fake_telegram.sent) + 1
    say(fake_telegram, user, name, text)
    while True:
        sent = await fake_telegram.wait_for_sent(wanted)
        if sent[-1].text != msg.BUSY:
            return sent[-1].text or ""
        wanted = len(sent) + 1


def chats(fake_groq) -> list[dict[str, Any]]:
    return [r for r in fake_groq.requests if "response_format" not in r]


def extractions(fake_groq) -> list[dict[str, Any]]:
    return [r for r in fake_groq.requests
            if str(r["messages"][0].get("content") or "").startswith(EXTRACTION)]


async def memories(bot, **filters: Any) -> list[Any]:
    return await bot.app.parts["memory_store"].list(str(GROUP), **filters)


async def test_each_message_carries_its_speaker_in_the_prompt_and_on_the_tape(
        start_bot, group_settings, fake_telegram, fake_groq, model) -> None:
    settings = group_settings()
    first = await start_bot(settings)
    await answer(fake_telegram, ALICE, "Ana", "mi DNI es 12345678Z")
    await answer(fake_telegram, LUIS, "Luis", "¿cuál es mi DNI?")
    prompt = chats(fake_groq)[-1]["messages"]
    spoken = [m["content"] for m in prompt if m["role"] == "user"]
    assert "[#1] Ana (id 111): mi DNI es 12345678Z" in spoken
    assert "[#3] Luis (id 222): ¿cuál es mi DNI?" in spoken
    tape = (chat_dir(settings, GROUP) / ".smma" / "session_log.jsonl").read_text("utf-8")
    records = [json.loads(line) for line in tape.splitlines()]
    users = [r for r in records if r.get("role") == "user"]
    assert [(r["speaker_id"], r["speaker_name"]) for r in users] == [("111", "Ana"),
                                                                     ("222", "Luis")]
    assert users[0]["content"] == "mi DNI es 12345678Z"   # the label is not in the words

    await first.stop()   # the labels come back from session.json after a restart
    await start_bot(group_settings())
    await answer(fake_telegram, ALICE, "Ana", "gracias")
    spoken = [m["content"] for m in chats(fake_groq)[-1]["messages"] if m["role"] == "user"]
    assert "[#1] Ana (id 111): mi DNI es 12345678Z" in spoken
    assert any(re.fullmatch(r"\[#\d+\] Ana \(id 111\): gracias", text) for text in spoken)


async def test_private_chat_messages_have_no_speaker_label(start_bot, fake_telegram,
                                                           fake_groq, model) -> None:
    await start_bot()
    fake_telegram.push_text(ALICE, ALICE, "hola")
    await fake_telegram.wait_for_sent(1)
    assert person(chats(fake_groq)[-1])["content"] == "[#1] hola"


async def test_extraction_attributes_each_fact_to_the_member_it_is_about(
        start_bot, group_settings, fake_telegram, fake_groq, model) -> None:
    bot = await start_bot(group_settings())
    await answer(fake_telegram, ALICE, "Ana", "mi DNI es 12345678Z")
    await answer(fake_telegram, LUIS, "Luis", "yo vivo en Lima")
    model.memories = [
        {"type": "fact", "content": "El DNI de Ana es 12345678Z", "key": "dni", "about": 111},
        {"type": "fact", "content": "Luis vive en Lima", "key": "ciudad", "about": "222"},
        {"type": "decision", "content": "El grupo cena el viernes", "about": None},
        {"type": "fact", "content": "Pepe es alto", "about": "999"},   # not in the chat
    ]
    fake_telegram.set_admin(GROUP, ALICE)   # /reset is for a group's admins
    await answer(fake_telegram, ALICE, "Ana", "/reset")
    [asked] = extractions(fake_groq)
    assert "GROUP chat" in asked["messages"][0]["content"]
    transcript = asked["messages"][1]["content"]
    assert "user Ana (id 111): mi DNI es 12345678Z" in transcript
    assert "user Luis (id 222): yo vivo en Lima" in transcript
    owners = {m.content: m.owner_id for m in await memories(bot)}
    assert owners == {"El DNI de Ana es 12345678Z": "111", "Luis vive en Lima": "222",
                      "El grupo cena el viernes": None, "Pepe es alto": None}

    await answer(fake_telegram, LUIS, "Luis", "¿dónde vivo? Lima")
    [line] = [x for x in automatic(chats(fake_groq)[-1]).splitlines()
              if "Luis vive en Lima" in x]
    assert "fact:ciudad · de Luis (id 222) ·" in line


async def test_a_member_forgets_only_their_own_memories_unless_admin(
        start_bot, group_settings, fake_telegram, fake_groq, model) -> None:
    fake_telegram.set_admin(GROUP, BOSS)
    bot = await start_bot(group_settings())
    await answer(fake_telegram, ALICE, "Ana", "/remember dni: 12345678Z")
    await answer(fake_telegram, LUIS, "Luis", "/remember dni: 87654321X")
    by_owner = {m.owner_id: m for m in await memories(bot)}
    ana, luis = by_owner["111"], by_owner["222"]
    assert ana.content == "12345678Z" and luis.content == "87654321X"   # one key, two people

    refused = await answer(fake_telegram, LUIS, "Luis", f"/forget #{ana.id}")
    assert refused == msg.FORGET_NOT_YOURS.format(ids=f"#{ana.id}")
    assert {m.id for m in await memories(bot)} == {ana.id, luis.id}
    refused = await answer(fake_telegram, LUIS, "Luis", "/forget 12345678Z")
    assert refused.startswith("⛔") and len(await memories(bot)) == 2

    mine = await answer(fake_telegram, LUIS, "Luis", "/forget dni")   # matches both
    assert mine.startswith("🗑️") and f"#{luis.id}" in mine and f"#{ana.id}" not in mine
    assert mine.endswith(msg.FORGET_OTHERS_LEFT.format(count=1))
    assert [m.id for m in await memories(bot)] == [ana.id]

    admin = await answer(fake_telegram, BOSS, "Jefa", f"/forget #{ana.id}")
    assert admin.startswith("🗑️") and f"#{ana.id}" in admin
    assert await memories(bot) == []
    asked = [params for name, params in fake_telegram.calls if name == "getChatMember"]
    assert {int(p["user_id"]) for p in asked} == {LUIS, BOSS}


async def test_memory_off_stops_learning_and_recall_and_survives_a_restart(
        start_bot, group_settings, fake_telegram, fake_groq, model) -> None:
    fake_telegram.set_admin(GROUP, ALICE, "creator")
    first = await start_bot(group_settings())
    await answer(fake_telegram, ALICE, "Ana", "/remember me encanta el café de Colombia")
    assert await answer(fake_telegram, LUIS, "Luis", "/memory off") == \
        msg.MEMORY_SWITCH_ADMIN_ONLY
    assert await answer(fake_telegram, ALICE, "Ana", "/memory off") == msg.MEMORY_OFF_DONE
    assert await answer(fake_telegram, ALICE, "Ana", "/memory off") == msg.MEMORY_ALREADY_OFF

    await answer(fake_telegram, LUIS, "Luis", "¿qué café le gusta a Ana? Colombia")
    assert "Colombia" not in automatic(chats(fake_groq)[-1])   # nothing recalled while off
    model.memories = [{"type": "fact", "content": "Luis tiene un gato", "about": "222"}]
    await answer(fake_telegram, LUIS, "Luis", "tengo un gato")
    await answer(fake_telegram, ALICE, "Ana", "/reset")
    assert extractions(fake_groq) == []
    assert [m.content for m in await memories(first)] == ["me encanta el café de Colombia"]
    assert await answer(fake_telegram, LUIS, "Luis", "/remember algo") == msg.REMEMBER_MEMORY_OFF
    assert msg.MEMORY_STATE_OFF in await answer(fake_telegram, LUIS, "Luis", "/memory")

    await first.stop()
    bot = await start_bot(group_settings())
    assert msg.MEMORY_STATE_OFF in await answer(fake_telegram, LUIS, "Luis", "/status")
    await answer(fake_telegram, LUIS, "Luis", "¿qué café le gusta a Ana? Colombia")
    assert "Colombia" not in automatic(chats(fake_groq)[-1])

    model.memories = []
    assert await answer(fake_telegram, ALICE, "Ana", "/memory on") == msg.MEMORY_ON_DONE
    await answer(fake_telegram, LUIS, "Luis", "¿qué café le gusta a Ana? Colombia")
    assert "Colombia" in automatic(chats(fake_groq)[-1])
    assert msg.MEMORY_STATE_OFF not in await answer(fake_telegram, LUIS, "Luis", "/status")
    await answer(fake_telegram, ALICE, "Ana", "/reset")
    # what was said while memory was off is not learned now that it is on
    assert all("tengo un gato" not in r["messages"][1]["content"]
               for r in extractions(fake_groq))
    assert [m.content for m in await memories(bot)] == ["me encanta el café de Colombia"]


async def group_document(fake_telegram, user: int, data: bytes) -> str:
    """`/import` as a group member would send it: the archive captioned /import@bot."""
    wanted = len(fake_telegram.sent) + 1
    fake_telegram.push_document(user, GROUP, "rumi.tar.gz", data,
                                caption=f"/import@{fake_telegram.bot_username}",
                                chat_type="supergroup")
    return (await fake_telegram.wait_for_sent(wanted))[-1].text or ""


async def private_archive(fake_telegram) -> bytes:
    """An archive exported from Ana's private chat holding one memory."""
    fake_telegram.push_text(ALICE, ALICE, "/remember me gusta el té verde")
    await fake_telegram.wait_for_sent(len(fake_telegram.sent) + 1)
    fake_telegram.push_text(ALICE, ALICE, "/export")
    wanted = len(fake_telegram.sent) + 2   # the text, then the document
    sent = await fake_telegram.wait_for_sent(wanted)
    [archive] = [s.document for s in sent if s.method == "sendDocument"]
    assert archive
    return archive


async def test_chat_wide_commands_are_refused_to_members_and_change_nothing(
        start_bot, group_settings, fake_telegram, fake_groq, model) -> None:
    fake_telegram.set_admin(GROUP, BOSS)
    bot = await start_bot(group_settings())
    reminders = bot.app.parts["reminders"]
    default_zone = (await reminders.timezone(str(GROUP))).key
    assert default_zone != "Europe/Madrid"
    archive = await private_archive(fake_telegram)
    await answer(fake_telegram, ALICE, "Ana", "el viernes cenamos juntos")
    reminder = await reminders.create(str(GROUP), "+1d", "reservar mesa", task=False)
    session = await bot.app.sessions.get(str(GROUP))
    items = [item.id for item in session.items]
    assert items
    refusals = msg.GROUP_ADMIN_REFUSALS

    assert await answer(fake_telegram, LUIS, "Luis", "/timezone Europe/Madrid") == \
        refusals["timezone"]
    assert (await reminders.timezone(str(GROUP))).key == default_zone
    assert await answer(fake_telegram, LUIS, "Luis", "/clear") == refusals["clear"]
    assert await answer(fake_telegram, LUIS, "Luis", "/reset") == refusals["reset"]
    session = await bot.app.sessions.get(str(GROUP))
    assert [item.id for item in session.items] == items   # nothing cleared nor reset
    assert extractions(fake_groq) == []                     # no session ended
    assert await group_document(fake_telegram, LUIS, archive) == refusals["import"]
    assert await memories(bot) == []
    assert await answer(fake_telegram, LUIS, "Luis", f"/cancel {reminder.id}") == \
        refusals["cancel"]
    assert [r.id for r in await reminders.list(str(GROUP))] == [reminder.id]
    assert await answer(fake_telegram, LUIS, "Luis", "/memorymd si") == refusals["memorymd"]
    assert await answer(fake_telegram, LUIS, "Luis", "/redact viernes") == refusals["redact"]
    session = await bot.app.sessions.get(str(GROUP))
    assert any("viernes" in (item.content or "") for item in session.items)   # not erased

    # reading stays open to every member
    shown = await answer(fake_telegram, LUIS, "Luis", "/timezone")
    assert shown.startswith("🕒") and default_zone in shown
    assert "reservar mesa" in await answer(fake_telegram, LUIS, "Luis", "/reminders")
    assert await answer(fake_telegram, LUIS, "Luis", "/memorymd") == msg.MD_CONFIRM_USAGE

    # an admin may do each of them
    assert (await answer(fake_telegram, BOSS, "Jefa", "/timezone Europe/Madrid")).startswith(
        msg.TIMEZONE_SET.split("{", 1)[0])
    assert (await reminders.timezone(str(GROUP))).key == "Europe/Madrid"
    assert (await group_document(fake_telegram, BOSS, archive)).startswith(
        msg.IMPORTED.split("{written}")[0].format(added=1))
    assert [m.content for m in await memories(bot)] == ["me gusta el té verde"]
    assert await answer(fake_telegram, BOSS, "Jefa", f"/cancel {reminder.id}") == \
        msg.CANCEL_DONE.format(id=reminder.id, text="reservar mesa")
    assert await reminders.list(str(GROUP)) == []
    cleared = await answer(fake_telegram, BOSS, "Jefa", "/clear")
    assert cleared.startswith(msg.CLEARED.format(count=msg.count_of(len(items), "ITEMS")))
    assert (await answer(fake_telegram, BOSS, "Jefa", "/reset")).startswith(msg.RESET_FRESH)
    asked = {int(p["user_id"]) for name, p in fake_telegram.calls if name == "getChatMember"}
    assert asked == {LUIS, BOSS}


async def test_private_chats_keep_every_command_without_asking_telegram(
        start_bot, fake_telegram, fake_groq, model) -> None:
    bot = await start_bot()
    sent: list[str] = []
    for n, text in enumerate(["hola", "/timezone Europe/Madrid", "/clear", "/reset"], 1):
        fake_telegram.push_text(ALICE, ALICE, text)
        sent.append((await fake_telegram.wait_for_sent(n))[-1].text or "")
    assert sent[1].startswith(msg.TIMEZONE_SET.split("{", 1)[0])
    assert sent[2].startswith(msg.CLEARED.format(count=msg.count_of(2, "ITEMS")))
    assert sent[3].startswith(msg.RESET_FRESH)
    assert (await bot.app.parts["reminders"].timezone(str(ALICE))).key == "Europe/Madrid"
    assert not [name for name, _ in fake_telegram.calls if name == "getChatMember"]


async def test_a_member_cancels_the_reminders_they_asked_for_not_anyone_elses(
        start_bot, group_settings, fake_telegram, fake_groq, model) -> None:
    fake_telegram.set_admin(GROUP, BOSS)
    bot = await start_bot(group_settings())
    reminders = bot.app.parts["reminders"]
    fake_groq.enqueue_tool_call("schedule", {"when": "+1d", "text": "regar las plantas"})
    fake_groq.enqueue_text("Hecho.")
    assert await answer(fake_telegram, LUIS, "Luis", "recuérdame regar mañana") == "Hecho."
    [mine] = await reminders.list(str(GROUP))
    assert mine.set_by == str(LUIS)

    assert await answer(fake_telegram, ALICE, "Ana", f"/cancel {mine.id}") == \
        msg.GROUP_ADMIN_REFUSALS["cancel"]
    assert [r.id for r in await reminders.list(str(GROUP))] == [mine.id]
    assert await answer(fake_telegram, LUIS, "Luis", f"/cancel {mine.id}") == \
        msg.CANCEL_DONE.format(id=mine.id, text="regar las plantas")
    assert await reminders.list(str(GROUP)) == []
    asked = {int(p["user_id"]) for name, p in fake_telegram.calls if name == "getChatMember"}
    assert asked == {ALICE}   # the one who set it is not asked about

"""Rumi speaks Spanish or English, as `agent.language` says, through the real bot and fake
Telegram and Groq servers: commands, errors and the busy notice, judged by a word detector
(tests/language_words.py), not by comparing against the catalogue itself."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest

from rumi.config import Settings
from tests.e2e.conftest import ALICE, TOKEN, chat_dir
from tests.language_words import english_markers, language_of, spanish_markers

BOB = 222
COMMANDS = ["/help", "/status", "/remember my city: Lima", "/memory", "/search Lima",
            "/forget city", "/forget Lima", "/import",
            "/reminders", "/timezone", "/timezone Mars/Base", "/pin", "/stop",
            "/start", "/status details", "/nonsense", "/clear", "/reset"]


def settings_for(make_settings, fake_groq, fake_telegram, language: str) -> Settings:
    return make_settings(
        f'[telegram]\ntoken = "{TOKEN}"\nbase_url = "{fake_telegram.base_url}"\n'
        f'base_file_url = "{fake_telegram.base_file_url}"\n'
        f"allowed_users = [{ALICE}, {BOB}]\npoll_timeout = 1\n"
        f'[llm]\napi_key = "gsk_test"\nbase_url = "{fake_groq.base_url}"\n'
        "retry_base_delay = 0.05\nmax_retries = 1\ntimeout = 5\n"
        f'[agent]\nlanguage = "{language}"\n'
        "[sandbox]\nenabled = false\n[memory]\nembeddings_enabled = false\n")


async def say(fake_telegram, text: str, *, user: int = ALICE, language_code: str | None = None,
              count: int = 1) -> list[str]:
    before = len(fake_telegram.sent)
    fake_telegram.push_text(user, user, text, language_code=language_code)
    sent = await fake_telegram.wait_for_sent(before + count)
    return [s.text or "" for s in sent[before:before + count]]


async def replies_to_everything(fake_telegram, fake_groq, *, language_code: str | None = None
                                ) -> dict[str, str]:
    """Commands, a 401, a daily 429 and the busy notice, each reply by what caused it."""
    got: dict[str, str] = {}
    for command in COMMANDS:
        [got[command]] = await say(fake_telegram, command, language_code=language_code)
    fake_groq.enqueue_status(401)
    [got["401"]] = await say(fake_telegram, "hello there", language_code=language_code)
    for _ in range(2):  # 120b's daily requests, then its fallback 20b's (each has its own)
        fake_groq.enqueue_rate_limit(1, scope="RPD", limit=1000, used=1000, requested=1)
    [got["429"]] = await say(fake_telegram, "hello again", language_code=language_code)
    await asyncio.sleep(1.1)  # Groq's "try again in 1s" has passed
    fake_groq.enqueue_text("first", delay=1.0)
    fake_groq.enqueue_text("second")
    asked = len(fake_groq.requests)
    before = len(fake_telegram.sent)
    fake_telegram.push_text(ALICE, ALICE, "one", language_code=language_code)
    while len(fake_groq.requests) == asked:
        await asyncio.sleep(0.02)
    fake_telegram.push_text(ALICE, ALICE, "two", language_code=language_code)
    sent = await fake_telegram.wait_for_sent(before + 3)
    got["busy"] = sent[before].text or ""
    [got["/status after"]] = await say(fake_telegram, "/status", language_code=language_code)
    return got


async def test_english_bot_says_nothing_in_spanish(start_bot, make_settings, fake_groq,
                                                   fake_telegram) -> None:
    await start_bot(settings_for(make_settings, fake_groq, fake_telegram, "en"))
    got = await replies_to_everything(fake_telegram, fake_groq, language_code="es")
    assert got["busy"].startswith("⏳")
    assert "Groq" in got["401"] and "Groq" in got["429"]
    for cause, text in got.items():
        assert text, cause
        assert not spanish_markers(text), (cause, spanish_markers(text), text)
        assert language_of(text) == "en" or cause in ("busy",), (cause, text)
    status = got["/status after"]
    assert "Model: openai/gpt-oss-120b" in status and "answers: 2" in status
    assert "Groq key: works" in status and "Memories kept: 0" in status
    menu = " ".join(c["description"] for c in fake_telegram.commands)
    assert not spanish_markers(menu), menu
    system = fake_groq.requests[-1]["messages"][0]["content"]
    assert "Reply language: English" in system


async def test_spanish_bot_says_nothing_in_english(start_bot, make_settings, fake_groq,
                                                   fake_telegram) -> None:
    await start_bot(settings_for(make_settings, fake_groq, fake_telegram, "es"))
    got = await replies_to_everything(fake_telegram, fake_groq, language_code="en")
    for cause, text in got.items():
        assert text, cause
        assert not english_markers(text), (cause, english_markers(text), text)
        assert language_of(text) == "es", (cause, text)
    menu = " ".join(c["description"] for c in fake_telegram.commands)
    assert not english_markers(menu), menu
    system = fake_groq.requests[-1]["messages"][0]["content"]
    assert "Idioma de respuesta: español" in system


async def test_auto_answers_each_person_in_their_telegram_language(
        start_bot, make_settings, fake_groq, fake_telegram) -> None:
    bot = await start_bot(settings_for(make_settings, fake_groq, fake_telegram, "auto"))
    for command in ("/help", "/status", "/remember city: Lima", "/memory"):
        [english] = await say(fake_telegram, command, user=ALICE, language_code="en")
        [spanish] = await say(fake_telegram, command, user=BOB, language_code="es-ES")
        assert language_of(english) == "en", english
        assert language_of(spanish) == "es", spanish
    # each menu in its language; the default one in Rumi's default (Spanish)
    by_language = fake_telegram.commands_by_language
    assert language_of(" ".join(c["description"] for c in by_language["en"])) == "en"
    assert language_of(" ".join(c["description"] for c in by_language["es"])) == "es"
    # remembered for what is said later with no message in hand (reminders, notices)
    settings = bot.app.settings
    assert (chat_dir(settings, ALICE) / "language").read_text().strip() == "en"
    assert (chat_dir(settings, BOB) / "language").read_text().strip() == "es"
    assistant = bot.app.assistant
    assert assistant.chat_language(str(ALICE)) == "en"
    assert assistant.chat_language(str(BOB)) == "es"
    # a message whose app reports no language keeps the chat's language
    [again] = await say(fake_telegram, "/help", user=ALICE)
    assert language_of(again) == "en", again


async def test_a_stranger_is_refused_in_their_language(start_bot, make_settings, fake_groq,
                                                       fake_telegram) -> None:
    bot = await start_bot(settings_for(make_settings, fake_groq, fake_telegram, "auto"))
    [refusal] = await say(fake_telegram, "hi", user=999, language_code="en-GB")
    assert language_of(refusal) == "en", refusal
    assert not chat_dir(bot.app.settings, 999).exists()   # nothing of theirs is stored


async def test_a_reminder_fires_in_the_chat_language(start_bot, make_settings, fake_groq,
                                                     fake_telegram) -> None:
    """Sent later, with no message in hand: the remembered language is used."""
    bot = await start_bot(settings_for(make_settings, fake_groq, fake_telegram, "auto"))
    await say(fake_telegram, "/help", user=ALICE, language_code="en")
    service = bot.app.parts["reminders"]
    await service.create(str(ALICE), "+1s", "call Ana", task=False)
    [fired] = [t for t in (s.text or "" for s in await fake_telegram.wait_for_sent(2, 10))
               if "call Ana" in t]
    assert fired.startswith("⏰ Reminder"), fired


@pytest.mark.parametrize("value", ["fr", "spanish", ""])
def test_an_unknown_language_is_a_clear_config_error(make_settings, value: str) -> None:
    from rumi.config import ConfigError

    with pytest.raises(ConfigError) as caught:
        make_settings(f'[agent]\nlanguage = "{value}"\n')
    text = str(caught.value)
    assert "agent.language" in text and '"es", "en" or "auto"' in text


def test_language_setting_is_case_insensitive(make_settings: Callable[..., Settings]) -> None:
    assert make_settings('[agent]\nlanguage = "EN"\n').agent.language == "en"
    assert make_settings('[agent]\nlanguage = "auto"\n').agent.language == "auto"


def described(node) -> list[str]:
    """Every description in a tool list (tools and parameters): what the model reads of it."""
    if isinstance(node, list):
        return [w for n in node for w in described(n)]
    if not isinstance(node, dict):
        return []
    own = [node["description"]] if isinstance(node.get("description"), str) else []
    return own + [w for v in node.values() for w in described(v)]


def model_read(request: dict) -> str:
    """Everything of a request Rumi sent to Groq that Rumi wrote: every message (tool results
    included) but the person's own words ("42"), and the tools' descriptions."""
    said = [str(m.get("content") or "") for m in request["messages"]
            if str(m.get("content") or "").strip() != "42"]
    return "\n".join(said + described(request.get("tools") or []))


@pytest.mark.parametrize(("setting", "code", "expected"), [
    ("en", None, "en"), ("es", None, "es"), ("auto", "en", "en"), ("auto", "es-ES", "es")])
async def test_the_model_reads_one_language(start_bot, make_settings, fake_groq, fake_telegram,
                                            setting, code, expected) -> None:
    """Issue 27: a chat in English read Spanish headers, `- Idioma: español`, Spanish tool
    schemas and "Liberados ≈… tokens". The whole request of a turn that runs tools (schedule,
    a refused prune, search_memory) is judged by the word detector, tool schemas and results
    included; via the real bot, fake Telegram (`language_code`) and fake Groq."""
    await start_bot(settings_for(make_settings, fake_groq, fake_telegram, setting))
    fake_groq.enqueue_tool_calls([("schedule", {"when": "+1d", "text": "42"}, None),
                                  ("prune_messages", {"message_ids": [999]}, None),
                                  ("search_memory", {"query": "42"}, None)])
    fake_groq.enqueue_text("7")
    await say(fake_telegram, "42", language_code=code)
    request = fake_groq.requests[-1]
    results = [m for m in request["messages"] if m["role"] == "tool"]
    assert len(results) == 3 and "#1" in results[0]["content"], results
    names = {t["function"]["name"] for t in request["tools"]}
    assert {"schedule", "prune_messages", "search_memory", "remember"} <= names
    assert len(described(request["tools"])) > len(names)
    text = model_read(request)
    if expected == "en":
        assert not spanish_markers(text), (spanish_markers(text), text)
    else:
        assert not english_markers(text), (english_markers(text), text)

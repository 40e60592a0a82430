"""The person is answered, not Rumi's own note (issue 24), in the terminal and in Telegram, in
Spanish and in English, against a stand-in model that behaves like chat models do: it
answers the LATEST user-role message, decides tool calls from it, and after a tool result
answers with the output instead of calling again (tests/fakes/chat_model.py).

A command asked for runs exactly once in the real sandbox (each run appends a line to a file
in /workspace, counted afterwards), and a reminder asked for is set exactly once (one row in
the reminders table, one scheduled job). Before 0.7 every request ended with Rumi's automatic
note as a user message: this model answered the note, no command ran, and nothing was set.
"""

from __future__ import annotations

import io
import json
from dataclasses import dataclass

import pytest

from rumi.channels.terminal import TERMINAL_CHAT_ID, TerminalChannel
from rumi.reminders.service import job_name
from tests.e2e.conftest import ALICE
from tests.e2e.test_sandbox_e2e import new_chat, owned_sandboxes, sandbox_settings  # noqa: F401
from tests.fakes.chat_model import StandInModel, ToolRule
from tests.prompt_shape import person

pytestmark = [pytest.mark.e2e, pytest.mark.docker]


@dataclass(frozen=True)
class Script:
    """One language's three messages: small talk, a command, a reminder."""

    lang: str
    hello: str
    command: str        # the message asking for it; the command itself is between backticks
    remind: str
    reminder_text: str  # what the reminder must say
    runs_file: str

    def run_message(self) -> str:
        return self.command.format(f"echo corrida >> {self.runs_file} && "
                                   f"echo \"corridas: $(wc -l < {self.runs_file})\"")


SCRIPTS = (
    Script("es", "hola, ¿me oyes bien?", "ejecuta `{}` por favor",
           "recuérdame regar las plantas en 30 minutos", "regar las plantas",
           "/workspace/veces-es.txt"),
    Script("en", "hi there, can you hear me?", "please run `{}`",
           "remind me to water the plants in 30 minutes", "water the plants",
           "/workspace/runs-en.txt"),
)


def stand_in() -> StandInModel:
    return StandInModel(
        rules=[
            ToolRule(r"(?:ejecuta|run) `([^`]+)`", "bash", lambda m: {"command": m[1]}),
            ToolRule(r"(?:recuérdame|remind me to) (.+?) (?:en|in) (\d+) (?:minutos|minutes)",
                     "schedule", lambda m: {"when": f"+{m[2]}m", "text": m[1]}),
        ],
        reply="Respuesta a «{said}»",
        after_tool="Listo:\n{output}",
        json_reply=json.dumps({"memories": [], "events": []}),
    )


def check_requests(fake_groq, said: list[str]) -> None:  # noqa: ANN001
    """Every agent request ends its user messages with the person's words: the message the
    turn answers (the requests of one turn carry the same one)."""
    agent = [r for r in fake_groq.requests if r.get("tools")]
    assert agent
    for request in agent:
        words = person(request)["content"]
        assert any(words.endswith(text) for text in said), words
        assert request["messages"][-1]["role"] in ("user", "tool")


async def check_effects(bot, chat: str, script: Script) -> None:  # noqa: ANN001
    runs = await bot.app.parts["sandbox"].exec(chat, f"cat {script.runs_file}")
    assert runs.stdout == "corrida\n", runs.stdout   # the command ran, exactly once
    service = bot.app.parts["reminders"]
    rows = [r for r in await service.list(chat) if r.text == script.reminder_text]
    assert len(rows) == 1, rows                       # one reminder row …
    jobs = service.scheduler.pending_at()
    assert job_name(rows[0].id) in jobs                # … and its one job
    assert len([j for j in jobs if j == job_name(rows[0].id)]) == 1


@pytest.mark.parametrize("script", SCRIPTS, ids=[s.lang for s in SCRIPTS])
async def test_telegram_person_is_answered_command_runs_once_reminder_set_once(
        script: Script, start_bot, bot_settings, fake_telegram, fake_groq,
        owned_sandboxes) -> None:  # noqa: F811
    model = stand_in()
    fake_groq.responder = model
    bot = await start_bot(sandbox_settings(bot_settings))
    owned_sandboxes(bot.app.parts["sandbox"].instance)
    chat = new_chat()
    replies = []
    for text in (script.hello, script.run_message(), script.remind):
        before = len(fake_telegram.sent)
        fake_telegram.push_text(ALICE, chat, text)
        sent = await fake_telegram.wait_for_sent(before + 1, timeout=90)
        replies.append(sent[before].text or "")
    hello, ran, reminded = replies
    assert script.hello in hello and "[Rumi" not in hello   # the person, not the note
    assert "corridas: 1" in ran and "[exit code 0]" in ran
    assert "Programado #1 (recordatorio)" in reminded   # the bot speaks es; text: see below
    assert [name for name, _ in model.calls] == ["bash", "schedule"]   # each asked once
    check_requests(fake_groq, [script.hello, script.run_message(), script.remind])
    await check_effects(bot, str(chat), script)


async def test_terminal_person_is_answered_in_both_languages(
        start_bot, bot_settings, fake_groq, owned_sandboxes) -> None:  # noqa: F811
    model = stand_in()
    fake_groq.responder = model
    bot = await start_bot(sandbox_settings(bot_settings))
    owned_sandboxes(bot.app.parts["sandbox"].instance)
    lines = [line for s in SCRIPTS for line in (s.hello, s.run_message(), s.remind)]
    out = io.StringIO()
    await TerminalChannel(bot.app.assistant, stdin=io.StringIO("\n".join(lines) + "\n/salir\n"),
                          stdout=out).run()
    text = out.getvalue()
    answers = [part.split("\n", 1)[0] for part in text.split("rumi> ")[1:]]
    said = [a for a in answers if a.startswith("Respuesta a «")]
    assert len(said) == 2, text   # the two greetings, each answered as such
    assert all(s.hello in a and "[Rumi" not in a for s, a in zip(SCRIPTS, said, strict=True))
    assert text.count("corridas: 1") == 2 and "corridas: 2" not in text
    assert text.count("Programado #") == 2   # tool results in the bot's language (es)
    for script in SCRIPTS:
        await check_effects(bot, TERMINAL_CHAT_ID, script)
    assert [name for name, _ in model.calls] == ["bash", "schedule"] * 2
    check_requests(fake_groq, lines)

"""The real bot, through fake Telegram, against a Groq that fails the way today's Groq does.

Each recoverable fault recovers inside the same turn; every other one gets its own Spanish
sentence within seconds; and the next message always works.
"""

from __future__ import annotations

import asyncio
import json
import time

import pytest

from rumi import messages as msg
from tests.e2e.conftest import ALICE, chat_dir
from tests.fakes.groq_server import ScriptedReply
from tests.prompt_shape import automatic, person

pytestmark = pytest.mark.e2e


@pytest.fixture(params=[True, False], ids=["stream", "whole"])
def telegram_stream(request: pytest.FixtureRequest) -> bool:
    """Every fault here is met on streamed answers (drafts) and on whole ones."""
    return bool(request.param)

NOTES_CALL = {"file_name": "agent_notes.md"}
SHAPES = [
    '<function=load_from_disk>{"file_name": "agent_notes.md"}</function>',
    '<function=load_from_disk={"file_name": "agent_notes.md"}</function>',
    'load_from_disk{"file_name": "agent_notes.md"}</function>',
    '```json\n{"tool_calls": [{"id": "pending", "type": "function", "function": '
    '{"name": "load_from_disk"}, "parameters": {"file_name": "agent_notes.md"}}]}\n```',
    "<function=load_from_disk>{'file_name': 'agent_notes.md',}</function>",
]


async def ask(fake_telegram, text: str, count: int = 1) -> list[str]:
    before = len(fake_telegram.sent)
    fake_telegram.push_text(ALICE, ALICE, text)
    sent = await fake_telegram.wait_for_sent(before + count)
    return [s.text or "" for s in sent[before:before + count]]


def tape(bot) -> str:
    return (chat_dir(bot.app.settings, ALICE) / ".smma" / "session_log.jsonl").read_text()


@pytest.mark.parametrize("shape", SHAPES, ids=["tag", "tag=", "glued", "fenced", "repaired"])
async def test_tool_use_failed_is_recovered_in_the_same_turn(start_bot, fake_telegram,
                                                             fake_groq, shape: str,
                                                             telegram_stream: bool) -> None:
    await start_bot()
    # a streamed request learns it inside the stream, after the 200 (Groq's error event)
    fake_groq.enqueue_tool_use_failed(shape, mid_stream=telegram_stream)
    fake_groq.enqueue_text("Tus notas están vacías.")
    [reply] = await ask(fake_telegram, "¿qué dicen mis notas?")
    assert reply == "Tus notas están vacías."
    second = fake_groq.requests[1]["messages"]
    call_message = next(m for m in second if m.get("tool_calls"))
    call = call_message["tool_calls"][0]
    assert call["function"]["name"] == "load_from_disk"
    assert json.loads(call["function"]["arguments"]) == NOTES_CALL
    result = next(m for m in second if m["role"] == "tool")
    assert result["tool_call_id"] == call["id"] and "error" not in result["content"].lower()


async def test_prose_in_failed_generation_is_the_answer(start_bot, fake_telegram,
                                                        fake_groq) -> None:
    await start_bot()
    fake_groq.enqueue_tool_use_failed("Claro: no necesito herramientas, son las tres.")
    [reply] = await ask(fake_telegram, "¿qué hora es?")
    assert reply == "Claro: no necesito herramientas, son las tres."
    assert len(fake_groq.requests) == 1


async def test_bare_arguments_are_retried_once_with_the_reason(start_bot, fake_telegram,
                                                               fake_groq) -> None:
    await start_bot()
    fake_groq.enqueue_tool_use_failed("ls -la /workspace",
                                      message="Failed to parse tool call arguments as JSON")
    fake_groq.enqueue_text("Listo.")
    [reply] = await ask(fake_telegram, "lista la carpeta")
    assert reply == "Listo."
    retry = fake_groq.requests[1]
    note = automatic(retry)   # the reason, in Rumi's automatic message before the person's
    assert "ls -la /workspace" in note and "JSON" in note
    assert retry["messages"][-1] == person(retry)
    assert retry["messages"][-1]["content"].endswith("lista la carpeta")


async def test_unparseable_twice_says_so_and_the_next_message_works(start_bot, fake_telegram,
                                                                    fake_groq) -> None:
    await start_bot()
    for _ in range(2):
        fake_groq.enqueue_tool_use_failed("", message="Failed to call a function.")
    [reply] = await ask(fake_telegram, "haz algo")
    assert reply == msg.TOOL_CALL_FAILED
    fake_groq.enqueue_text("Aquí estoy.")
    assert await ask(fake_telegram, "¿sigues?") == ["Aquí estoy."]


async def test_schema_mismatch_reaches_the_model_as_a_tool_error(start_bot, fake_telegram,
                                                                 fake_groq) -> None:
    await start_bot()
    fake_groq.enqueue_tool_use_failed(
        '<function=load_from_disk>{"name": "agent_notes.md"}</function>',
        message="tool call validation failed: parameters for tool load_from_disk did not "
                "match schema: errors: [missing properties: 'file_name']")
    fake_groq.enqueue_text("Perdona, lo intento bien.")
    [reply] = await ask(fake_telegram, "lee mis notas")
    assert reply == "Perdona, lo intento bien."
    result = next(m for m in fake_groq.requests[1]["messages"] if m["role"] == "tool")
    assert "file_name" in result["content"] and "Invalid arguments" in result["content"]


async def test_arguments_that_are_not_json_never_poison_the_chat(start_bot, fake_telegram,
                                                                 fake_groq) -> None:
    bot = await start_bot()
    fake_groq.enqueue_tool_call("load_from_disk", "file_name=agent_notes.md")
    fake_groq.enqueue_text("Vale.")
    assert await ask(fake_telegram, "lee mis notas") == ["Vale."]
    fake_groq.enqueue_text("Sigo bien.")
    assert await ask(fake_telegram, "¿y ahora?") == ["Sigo bien."]  # history still valid
    later = fake_groq.requests[-1]["messages"]
    call = next(m for m in later if m.get("tool_calls"))["tool_calls"][0]
    assert call["function"]["arguments"] == "{}"
    result = next(m for m in later if m["role"] == "tool")
    assert "not a JSON object" in result["content"] and "file_name=agent_notes.md" in result[
        "content"]
    records = [json.loads(line) for line in tape(bot).splitlines()]
    stored = next(r for r in records if r.get("tool_calls"))["tool_calls"][0]
    assert stored["function"]["arguments"] == "{}"


async def test_an_answer_lost_to_reasoning_is_asked_again_with_room(start_bot, fake_telegram,
                                                                    fake_groq) -> None:
    await start_bot()
    fake_groq.enqueue_text("no llega", reasoning_tokens=1_024)  # all of the 1,024 budget
    fake_groq.enqueue_text("Respuesta completa.", reasoning_tokens=1_200)
    assert await ask(fake_telegram, "piensa mucho") == ["Respuesta completa."]
    assert [r["max_completion_tokens"] for r in fake_groq.requests] == [1024, 4096]


async def test_an_answer_still_cut_says_it_was_cut(start_bot, bot_settings, fake_telegram,
                                                   fake_groq) -> None:
    await start_bot(bot_settings(llm_extra="max_output_tokens = 100\n"
                                           "max_output_tokens_retry = 120\n"))
    long_text = "Primera parte de una respuesta larga. " * 40
    fake_groq.enqueue_text(long_text, reasoning_tokens=10)
    fake_groq.enqueue_text(long_text, reasoning_tokens=10)
    [reply] = await ask(fake_telegram, "cuéntamelo todo")
    assert reply.startswith("Primera parte") and reply.endswith(msg.REPLY_CUT)


async def test_tool_step_reasoning_is_replayed_in_its_turn_only(start_bot, fake_telegram,
                                                                fake_groq) -> None:
    bot = await start_bot()
    fake_groq.enqueue_tool_call("load_from_disk", NOTES_CALL,
                                reasoning="Need the notes file before answering.")
    fake_groq.enqueue_text("Hecho.")
    assert await ask(fake_telegram, "mira mis notas") == ["Hecho."]
    fake_groq.enqueue_text("Nada más.")
    assert await ask(fake_telegram, "¿algo más?") == ["Nada más."]
    in_turn = next(m for m in fake_groq.requests[1]["messages"] if m.get("tool_calls"))
    next_turn = next(m for m in fake_groq.requests[2]["messages"] if m.get("tool_calls"))
    assert in_turn["reasoning"] == "Need the notes file before answering."
    assert "reasoning" not in next_turn
    assert "Need the notes file" not in tape(bot)


async def test_a_retired_model_answers_through_the_fallback_and_says_so_once(
        start_bot, bot_settings, fake_telegram, fake_groq) -> None:
    await start_bot(bot_settings(llm_extra='model = "llama-3.3-70b-versatile"\n'))
    fake_groq.default_text = "Hola."
    [first] = await ask(fake_telegram, "hola")
    assert "llama-3.3-70b-versatile" in first and "openai/gpt-oss-20b" in first
    assert first.endswith("Hola.")
    assert await ask(fake_telegram, "otra vez") == ["Hola."]
    [status] = await ask(fake_telegram, "/status")
    assert "openai/gpt-oss-20b" in status and "llama-3.3-70b-versatile" in status


async def test_two_429s_in_a_row_are_waited_and_the_message_answered_once(
        start_bot, fake_telegram, fake_groq) -> None:
    """0.7.0 answered "⏳ … la espera (unos 1 s) es más larga de lo razonable … vuelve a
    escribirme dentro de unos 1 s"; the person had to write again."""
    await start_bot()
    fake_groq.enqueue_rate_limit(0, scope="TPM", limit=8000, used=8000, requested=3000)
    fake_groq.enqueue_rate_limit(0, scope="TPM", limit=8000, used=8000, requested=3000)
    fake_groq.enqueue_text("Hola, aquí estoy.")
    assert await ask(fake_telegram, "hola") == ["Hola, aquí estoy."]
    await asyncio.sleep(0.3)
    assert fake_telegram.texts(ALICE) == ["Hola, aquí estoy."]


FAULTS = [
    ("bad key", lambda g: g.enqueue_status(401), "clave de API"),
    ("no model", lambda g: [g.retire("openai/gpt-oss-120b"), g.retire("openai/gpt-oss-20b")],
     "ya no sirve el modelo «openai/gpt-oss-120b»"),
    ("daily limit", lambda g: [g.enqueue_rate_limit(3600, scope="RPD", limit=1000, used=1000,
                                                    requested=1) for _ in range(2)],
     "límite diario"),  # 120b's quota, then its fallback 20b's: each model has its own
    ("long minute wait", lambda g: g.enqueue_rate_limit(50, scope="TPM", limit=8000, used=8000,
                                                        requested=3000), "límite por minuto"),
    ("provider down", lambda g: [g.enqueue_status(503) for _ in range(3)], "no está disponible"),
    ("flex capacity", lambda g: [g.enqueue_status(498) for _ in range(3)], "no está disponible"),
    ("over the account's cap", lambda g: [g.enqueue_request_too_large() for _ in range(2)],
     "límite por minuto de tu cuenta"),
]


@pytest.mark.parametrize(("name", "fault", "words"), FAULTS, ids=[f[0] for f in FAULTS])
async def test_each_fault_has_its_own_message_and_the_next_message_works(
        start_bot, fake_telegram, fake_groq, name, fault, words) -> None:
    await start_bot()
    fault(fake_groq)
    started = time.monotonic()
    [reply] = await ask(fake_telegram, "hola")
    assert words in reply, reply
    assert time.monotonic() - started < 5
    if name == "no model":  # a model Groq no longer serves stays gone: same clear words
        assert words in (await ask(fake_telegram, "¿y ahora?"))[0]
        return
    if name == "daily limit":  # Groq said an hour for both models: not asked again before
        asked = len(fake_groq.requests)
        assert words in (await ask(fake_telegram, "¿y ahora?"))[0]
        assert len(fake_groq.requests) == asked
        return
    fake_groq.enqueue_text("Ya funciono.")
    assert await ask(fake_telegram, "¿y ahora?") == ["Ya funciono."]


async def test_a_long_chat_on_a_free_account_is_compacted_to_fit_its_minute_cap(
        start_bot, bot_settings, fake_telegram, fake_groq) -> None:
    fake_groq.free_tier()  # 8,000 tokens a minute, prompt and max_tokens together
    fake_groq.window_seconds = 1.0

    def respond(body: dict) -> ScriptedReply:
        if not body.get("tools"):  # the compaction summary or the memory flush
            if (body.get("response_format") or {}).get("type") == "json_object":
                return ScriptedReply({"role": "assistant", "content": '{"memories": []}'})
            return ScriptedReply({"role": "assistant", "content": "Resumen: hablamos de Lima."})
        return ScriptedReply({"role": "assistant", "content": "Anotado. " * 30})

    fake_groq.responder = respond
    bot = await start_bot(bot_settings(llm_extra="rate_window_seconds = 1.0\n"))
    paragraph = "Te cuento más detalles del viaje a Lima con mi hermana en marzo. " * 45
    for number in range(10):
        [reply] = await ask(fake_telegram, f"{number}: {paragraph}")
        assert reply.startswith("Anotado."), reply
    assert fake_groq.limit_counters.too_large == 0  # never over the cap: compacted first
    assert bot.app.llm.stats.failures == 0  # any 429 was a short wait, waited out
    assert '"event":"compact"' in tape(bot).replace(" ", "")
    assert max(u["prompt"] for u in fake_groq.usage_log) + 1_024 <= 8_000

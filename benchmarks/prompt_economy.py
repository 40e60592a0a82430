"""Benchmark: what Rumi's requests cost on today's Groq, and how much of them is cached.

Drives the real application (`build_app`, `Assistant.handle`) against the fake Groq server in
its gpt-oss shape: reasoning inside the answer budget, automatic prefix caching, free-tier
limits. Every request is counted as gpt-oss reads it: rendered by OpenAI's harmony renderer
(benchmarks/harmony_count.py; system and developer messages, the tools as the developer
message's `functions` namespace, the conversation, tool calls and tool results) into o200k
tokens. A request's cached tokens are the longest token prefix it shares with an earlier
request, in the fake's cache blocks, the way Groq's prefix cache serves them.

Three runs, one JSON report:

- `chat`: a scripted 20-message chat (two messages use a tool). First-request tokens (as sent,
  and with all 13 tools as when the sandbox is up; target <= 2,400), the cached share of
  consecutive chat requests (target >= 85 %), mean tokens per turn, and how many turns a day
  fit gpt-oss-120b's free tier (1,000 requests and 200,000 tokens a day; cached tokens do not
  count toward Groq's limits).
- `tool_turn`: one message answered after ten tool steps; the cached share of the turn's
  requests after its first (target >= 85 %).
- `free_tier_burst`: a free-tier account with Groq's real one-minute window answers 12
  messages in a row, two of them running a shell command in the real sandbox (Docker and the
  sandbox image needed, else the run says why it was skipped); wall time (target <= 120 s).

    TIKTOKEN_CACHE_DIR=../shared/tiktoken python benchmarks/prompt_economy.py [--effort low]
        [--image rumi-sandbox:test] [--skip-burst]

The reasoning token counts are the fake's (low 40, medium 120, high 400 per answer), not a
measurement of the real model: they show how effort moves the daily budget, nothing more.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

SHARED = Path(__file__).resolve().parents[2] / "shared"
os.environ.setdefault("TIKTOKEN_CACHE_DIR", str(SHARED / "tiktoken"))

import free_tier_day  # noqa: E402
import harmony_count  # noqa: E402

from rumi.app import build_app  # noqa: E402
from rumi.config_load import load_settings  # noqa: E402
from tests.fakes.groq_server import FakeGroqServer, ScriptedReply  # noqa: E402

FREE_TIER_RPD = 1_000
FREE_TIER_TPD = 200_000
WINDOW = 2.0

CHAT = [
    "Hola, soy Ana. ¿Qué tal?",
    "Estoy preparando un viaje a Lima en marzo con mi hermana.",
    "¿Qué barrios me recomiendas para alojarnos?",
    "apunta en la tarea actual: planear el viaje a Lima en marzo",
    "Nos gusta mucho la comida; ¿qué platos no nos podemos perder?",
    "Mi hermana es vegetariana, tenlo en cuenta.",
    "¿Y para un día de excursión fuera de la ciudad?",
    "¿Cuánto cuesta más o menos un taxi del aeropuerto al centro?",
    "busca en tu memoria lo que te conté del viaje",
    "Perfecto. ¿Qué ropa llevo para marzo?",
    "¿Hace falta vacunarse de algo?",
    "Cambiando de tema: mañana tengo una reunión a las diez.",
    "¿Me ayudas a preparar tres puntos para la reunión?",
    "El tema es el presupuesto del segundo trimestre.",
    "Gracias. ¿Cómo lo resumirías en una frase?",
    "Vuelvo al viaje: ¿cuántos días recomiendas en Cusco?",
    "¿Se puede ir en tren a Machu Picchu?",
    "¿Qué tal el clima allí en marzo?",
    "Genial, creo que ya lo tengo claro.",
    "¿Me haces un resumen de todo lo que hemos hablado del viaje?",
]
ANSWER = ("Claro. Te cuento lo esencial en pocas líneas para que sea fácil de leer: primero lo "
          "importante, luego los detalles prácticos, y al final una recomendación concreta que "
          "puedes seguir sin complicarte. ")


TOOL_TURN = "revisa en tu memoria estos diez temas uno a uno y dime qué encuentras"
TOOL_TURN_QUERIES = ["Lima", "marzo", "hermana", "barrios", "comida", "vegetariana",
                     "excursión", "taxi", "reunión", "presupuesto"]
BURST_WINDOW = 60.0
CALL_IDS = itertools.count(1)  # every call its own id, as the model's are
BURST = [
    "Hola de nuevo, ¿qué tal?",
    "ejecuta: ls -la /workspace",
    "¿Qué significa cada columna de esa lista?",
    "Vale, gracias.",
    "ejecuta: python3 -c 'print(sum(range(10)))'",
    "¿Por qué da 45?",
    "¿Y si fuera hasta 100?",
    "Perfecto.",
    "¿Me recuerdas cómo se llama mi hermana?",
    "No te preocupes si no lo sabes.",
    "Otra cosa: ¿qué día es hoy?",
    "Gracias por todo.",
]


@dataclass
class Script:
    """What the stand-in model answers: it reads the person's current message (found by its
    text, wherever the prompt puts it) and how many tool results came after it."""

    current: str = ""
    log: list[str] = field(default_factory=list)

    def respond(self, body: dict[str, Any]) -> ScriptedReply:
        if (body.get("response_format") or {}).get("type") == "json_object":
            system = json.dumps(body["messages"][:1])
            payload = {"action": "ADD"} if "ADD" in system else {"memories": [], "events": []}
            return ScriptedReply({"role": "assistant", "content": json.dumps(payload)})
        if not body.get("tools"):
            return ScriptedReply({"role": "assistant", "content": "viaje a lima"})
        steps = tool_results_after(body.get("messages") or [], self.current)
        text = self.current
        if text == TOOL_TURN and steps < len(TOOL_TURN_QUERIES):
            return _call("search_memory", {"query": TOOL_TURN_QUERIES[steps]}, steps)
        if steps == 0 and "apunta en la tarea" in text:
            return _call("edit_section", {"section_name": "current_task",
                                          "new_content": "Planear el viaje a Lima en marzo."})
        if steps == 0 and "busca en tu memoria" in text:
            return _call("search_memory", {"query": "viaje Lima"})
        if steps == 0 and text.startswith("ejecuta: "):
            return _call("bash", {"command": text.removeprefix("ejecuta: ")})
        return ScriptedReply({"role": "assistant", "content": ANSWER * 2})


def tool_results_after(messages: list[dict[str, Any]], text: str) -> int:
    """Tool results since the last message holding the person's `text` (0: not answered yet)."""
    start = max((i for i, m in enumerate(messages)
                 if m.get("role") == "user" and text in str(m.get("content") or "")),
                default=-1)
    return sum(1 for m in messages[start + 1:] if m.get("role") == "tool")


def _call(name: str, arguments: dict[str, Any], step: int = 0) -> ScriptedReply:
    call = {"id": f"call_{name}_{step}_{next(CALL_IDS)}", "type": "function",
            "function": {"name": name, "arguments": json.dumps(arguments, ensure_ascii=False)}}
    return ScriptedReply({"role": "assistant", "content": None, "tool_calls": [call]})


@dataclass
class Counted:
    """One answered request as harmony renders it."""

    body: dict[str, Any]
    tokens: list[int]
    cached: int
    completion: int
    reasoning: int

    @property
    def prompt(self) -> int:
        return len(self.tokens)

    @property
    def chat(self) -> bool:
        return bool(self.body.get("tools"))


def count_all(groq: FakeGroqServer) -> list[Counted]:
    """Every answered request rendered, with the prefix an earlier request already had."""
    out: list[Counted] = []
    block = groq.cache_block_tokens
    for usage in groq.usage_log:
        tokens = harmony_count.render(usage["request"])
        shared = max((harmony_count.common_prefix(c.tokens, tokens) for c in out
                      if c.body.get("model") == usage["request"].get("model")), default=0)
        out.append(Counted(usage["request"], tokens, shared - shared % block,
                           usage["completion"], usage["reasoning"]))
    return out


def cached_share(requests: list[Counted]) -> float:
    prompt = sum(r.prompt for r in requests)
    return round(sum(r.cached for r in requests) / prompt, 3) if prompt else 0.0


def sandbox_tool_specs(settings: Any) -> list[dict[str, Any]]:
    """The four sandbox tools' definitions, as sent when Docker is up (no engine needed)."""
    from rumi.sandbox.manager import SandboxManager
    from rumi.sandbox.tools import sandbox_tools

    manager = SandboxManager(settings.sandbox, settings.data_dir)
    return [tool.spec() for tool in sandbox_tools(manager)]


def with_all_tools(body: dict[str, Any], sandbox_specs: list[dict[str, Any]]) -> int:
    offered = {t["function"]["name"] for t in body.get("tools") or []}
    extra = [s for s in sandbox_specs if s["function"]["name"] not in offered]
    return harmony_count.count({**body, "tools": [*(body.get("tools") or []), *extra]})


def config_text(tmp: str, groq: FakeGroqServer, effort: str, window: float,
                image: str | None) -> str:
    sandbox = (f'[sandbox]\nenabled = true\nimage = "{image}"\n' if image
               else "[sandbox]\nenabled = false\n")
    return (f'data_dir = "{tmp}/data"\n[llm]\napi_key = "gsk_bench"\n'
            f'base_url = "{groq.base_url}"\nreasoning_effort = "{effort}"\n'
            f"rate_window_seconds = {window}\n"
            + sandbox + "[memory]\nembeddings_enabled = false\n")


async def fake_groq(script: Script, window: float) -> FakeGroqServer:
    groq = await FakeGroqServer().start()
    groq.free_tier()
    groq.window_seconds = window
    groq.responder = script.respond
    groq.prompt_counter = harmony_count.count
    return groq


async def run_chat(effort: str) -> dict[str, Any]:
    """The 20-message chat, then the 10-step tool turn, in one chat (a shorter "minute": the
    numbers, not the waits, matter here)."""
    script = Script()
    groq = await fake_groq(script, WINDOW)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            config = Path(tmp) / "config.toml"
            config.write_text(config_text(tmp, groq, effort, WINDOW, None), encoding="utf-8")
            settings = load_settings(config, env={})
            app = await build_app(settings)
            await app.start()
            try:
                for text in CHAT:
                    script.current = text
                    await app.assistant.handle("bench", 1, text)
                chat_answered = len(groq.usage_log)
                script.current = TOOL_TURN
                reply = await app.assistant.handle("bench", 1, TOOL_TURN)
            finally:
                await app.stop()
            specs = sandbox_tool_specs(settings)
    finally:
        await groq.stop()
    counted = count_all(groq)
    # the background requests at stop (learning from the session) are the chat's cost too
    background = [c for c in counted[chat_answered:] if not c.chat]
    return {"chat": chat_report(counted[:chat_answered] + background, specs),
            "tool_turn": tool_turn_report(counted[chat_answered:], reply.text)}


def chat_report(counted: list[Counted], sandbox_specs: list[dict[str, Any]]) -> dict[str, Any]:
    chat = [c for c in counted if c.chat]
    turns = len(CHAT)
    total = {"prompt": sum(c.prompt for c in chat), "cached": sum(c.cached for c in chat),
             "reasoning": sum(c.reasoning for c in chat),
             "answer": sum(c.completion - c.reasoning for c in chat)}
    counted_all = sum(c.prompt - c.cached + c.completion for c in counted)
    requests_per_turn = len(counted) / turns
    tokens_per_turn = counted_all / turns
    first = chat[0]
    report = {
        "messages": turns,
        "chat_requests": len(chat),
        "background_requests": len(counted) - len(chat),
        "first_request_tokens": first.prompt,
        "first_request_tokens_all_tools": with_all_tools(first.body, sandbox_specs),
        "first_request_tools_offered": len(first.body.get("tools") or []),
        "mean_per_turn": {k: round(v / turns, 1) for k, v in total.items()},
        "cached_share_consecutive": cached_share(chat[1:]),
        "cached_share_all": cached_share(chat),
        "median_cached_share_per_request": round(statistics.median(
            c.cached / c.prompt for c in chat[1:]), 3),
        "min_cached_share_per_request": round(min(c.cached / c.prompt for c in chat[1:]), 3),
        "free_tier_day": {
            "requests_per_turn": round(requests_per_turn, 2),
            "counted_tokens_per_turn": round(tokens_per_turn, 1),
            "turns_by_requests": int(FREE_TIER_RPD / requests_per_turn),
            "turns_by_tokens": int(FREE_TIER_TPD / tokens_per_turn),
            "turns_a_day": int(min(FREE_TIER_RPD / requests_per_turn,
                                   FREE_TIER_TPD / tokens_per_turn)),
        },
    }
    day = report["free_tier_day"]
    day.update(free_tier_day.turns_a_day({"requests_per_turn": requests_per_turn,
                                          "counted_tokens_per_turn": tokens_per_turn}))
    return report


def tool_turn_report(counted: list[Counted], answer: str) -> dict[str, Any]:
    chat = [c for c in counted if c.chat]
    return {
        "requests": len(chat),
        "tool_steps": len(chat) - 1,
        "answered": answer.startswith(ANSWER.strip()[:20]),
        "cached_share_after_first": cached_share(chat[1:]),
        "cached_share_all": cached_share(chat),
        "min_cached_share_per_request": round(min((c.cached / c.prompt for c in chat[1:]),
                                                  default=0.0), 3),
        "prompt_tokens": [c.prompt for c in chat],
        "cached_tokens": [c.cached for c in chat],
    }


async def run_burst(effort: str, image: str) -> dict[str, Any]:
    """Twelve messages in a row on the free tier's real minute, two running a command."""
    script = Script()
    groq = await fake_groq(script, BURST_WINDOW)
    replies: list[str] = []
    finished: list[float] = []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            config = Path(tmp) / "config.toml"
            config.write_text(config_text(tmp, groq, effort, BURST_WINDOW, image),
                              encoding="utf-8")
            app = await build_app(load_settings(config, env={}))
            await app.start()
            sandbox = app.parts.get("sandbox")
            try:
                if sandbox is None or not sandbox.available:
                    return {"skipped": f"the sandbox cannot run here ({image}): "
                                       f"{getattr(sandbox, 'last_problem', None)}"}
                started = time.perf_counter()
                for text in BURST:
                    script.current = text
                    replies.append((await app.assistant.handle("burst", 1, text)).text)
                    finished.append(time.perf_counter() - started)
                seconds = time.perf_counter() - started
            finally:
                if sandbox is not None:
                    await sandbox.remove("burst", workspace=True)
                await app.stop()
    finally:
        await groq.stop()
    counted = count_all(groq)
    ran = {m.get("tool_call_id") for c in counted for m in c.body["messages"]
           if m.get("role") == "tool" and "[exit code 0]" in str(m.get("content"))}
    answered = [r.startswith(ANSWER.strip()[:20]) for r in replies]
    return {
        "messages": len(BURST),
        "wall_seconds": round(seconds, 1),
        "answered": sum(answered),
        "commands_run": len(ran),
        "all_answered_within_120_s": all(answered) and len(ran) == 2 and seconds <= 120,
        "seconds_at_each_reply": [round(t, 1) for t in finished],
        "requests": len(counted),
        "chat_requests": sum(1 for c in counted if c.chat),
        "rate_limited_429": groq.limit_counters.rate_limited,
        "window_seconds": BURST_WINDOW,
        "replies_not_answers": [r[:100] for r, ok in zip(replies, answered, strict=True)
                                if not ok],
    }


async def run(effort: str, image: str | None) -> dict[str, Any]:
    missing = harmony_count.available()
    if missing:
        raise SystemExit(f"prompt_economy: cannot count with the harmony renderer: {missing}")
    report = {"tokenizer": "o200k_harmony (openai-harmony renderer)", "effort": effort,
              **await run_chat(effort)}
    report["free_tier_burst"] = (await run_burst(effort, image) if image
                                 else {"skipped": "--skip-burst"})
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--effort", choices=["low", "medium", "high"], default="low",
                        help="llm.reasoning_effort for chat answers (default: low)")
    parser.add_argument("--image", default=os.environ.get("RUMI_TEST_SANDBOX_IMAGE",
                                                          "rumi-sandbox:test"),
                        help="sandbox image for the free-tier burst (default rumi-sandbox:test)")
    parser.add_argument("--skip-burst", action="store_true",
                        help="leave out the free-tier burst (it takes a minute or more)")
    args = parser.parse_args()
    image = None if args.skip_burst else args.image
    print(json.dumps(asyncio.run(run(args.effort, image)), indent=2, ensure_ascii=False))


if __name__ == "__main__":
    main()

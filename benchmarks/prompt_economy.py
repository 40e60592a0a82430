"""Benchmark: what a scripted 20-message chat costs on today's Groq, and how much is cached.

Drives the real application (`build_app`, `Assistant.handle`) against the fake Groq server in
its gpt-oss shape: reasoning inside the answer budget, automatic prefix caching reported as
`cached_tokens`, free-tier headers. Prompt tokens are counted with cl100k (the tokenizer
Rumi ships with; Groq's own count for gpt-oss differs by a few percent), cached tokens as the
share of the prompt that repeats a prefix of an earlier request, the way Groq's cache works.

Prints JSON: first-request tokens (the real first request, and the same with all 13 tools as
when the sandbox is up), mean tokens per chat turn (prompt, cached, reasoning, answer), the
median shared-prefix share of consecutive requests, the cached share, and how many turns a
day fit gpt-oss-120b's free tier (1,000 requests and 200,000 tokens a day; cached tokens do
not count toward Groq's limits).

    TIKTOKEN_CACHE_DIR=../shared/tiktoken python benchmarks/prompt_economy.py [--effort low]

The reasoning token counts are the fake's (low 40, medium 120, high 400 per answer), not a
measurement of the real model: they show how effort moves the daily budget, nothing more.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from rumi.app import build_app  # noqa: E402
from rumi.config import load_settings  # noqa: E402
from rumi.context.tokens import TokenCounter  # noqa: E402
from tests.fakes.chat_model import latest_user, pending_tool_results  # noqa: E402
from tests.fakes.groq_limits import canonical_prompt  # noqa: E402
from tests.fakes.groq_server import FakeGroqServer, ScriptedReply  # noqa: E402

SHARED = Path(__file__).resolve().parents[2] / "shared"
os.environ.setdefault("TIKTOKEN_CACHE_DIR", str(SHARED / "tiktoken"))

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


def respond(body: dict[str, Any]) -> ScriptedReply:
    """Answers the way the model would for this script: two messages use a tool first."""
    if (body.get("response_format") or {}).get("type") == "json_object":
        system = json.dumps(body["messages"][:1])
        payload = {"action": "ADD"} if "ADD" in system else {"memories": [], "events": []}
        return ScriptedReply({"role": "assistant", "content": json.dumps(payload)})
    last = {} if pending_tool_results(body) else latest_user(body)
    if last.get("role") == "user" and not body.get("tools"):
        return ScriptedReply({"role": "assistant", "content": "viaje a lima"})
    if last.get("role") == "user":
        text = str(last.get("content") or "")
        if "apunta en la tarea" in text:
            return _call("edit_section", {"section_name": "current_task",
                                          "new_content": "Planear el viaje a Lima en marzo."})
        if "busca en tu memoria" in text:
            return _call("search_memory", {"query": "viaje Lima"})
    return ScriptedReply({"role": "assistant", "content": ANSWER * 2})


def _call(name: str, arguments: dict[str, Any]) -> ScriptedReply:
    call = {"id": f"call_{name}", "type": "function",
            "function": {"name": name, "arguments": json.dumps(arguments, ensure_ascii=False)}}
    return ScriptedReply({"role": "assistant", "content": None, "tool_calls": [call]})


def shared_prefix(a: str, b: str) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


def all_tools_first_request(counter: TokenCounter, body: dict[str, Any],
                            sandbox_specs: list[dict[str, Any]]) -> int:
    offered = {t["function"]["name"] for t in body.get("tools") or []}
    extra = [s for s in sandbox_specs if s["function"]["name"] not in offered]
    return (counter.count_messages(body["messages"])
            + counter.count_tools([*(body.get("tools") or []), *extra]))


def sandbox_tool_specs(settings: Any) -> list[dict[str, Any]]:
    """The four sandbox tools' definitions, as sent when Docker is up (no engine needed)."""
    from rumi.sandbox.manager import SandboxManager
    from rumi.sandbox.tools import sandbox_tools

    manager = SandboxManager(settings.sandbox, settings.data_dir)
    return [tool.spec() for tool in sandbox_tools(manager)]


async def run(effort: str) -> dict[str, Any]:
    counter = TokenCounter()
    groq = await FakeGroqServer().start()
    groq.free_tier()
    groq.window_seconds = WINDOW  # a shorter "minute": the numbers, not the waits, matter here
    groq.responder = respond
    groq.prompt_counter = lambda body: (counter.count_messages(body.get("messages") or [])
                                        + counter.count_tools(body.get("tools")))
    try:
        with tempfile.TemporaryDirectory() as tmp:
            config = Path(tmp) / "config.toml"
            config.write_text(
                f'data_dir = "{tmp}/data"\n[llm]\napi_key = "gsk_bench"\n'
                f'base_url = "{groq.base_url}"\nreasoning_effort = "{effort}"\n'
                f"rate_window_seconds = {WINDOW}\n"
                "[sandbox]\nenabled = false\n[memory]\nembeddings_enabled = false\n",
                encoding="utf-8")
            settings = load_settings(config, env={})
            app = await build_app(settings)
            await app.start()
            try:
                for text in CHAT:
                    await app.assistant.handle("bench", 1, text)
            finally:
                await app.stop()
            specs = sandbox_tool_specs(settings)
    finally:
        await groq.stop()
    return report(groq, counter, specs)


def report(groq: FakeGroqServer, counter: TokenCounter,
           sandbox_specs: list[dict[str, Any]]) -> dict[str, Any]:
    pairs = [(usage["request"], usage) for usage in groq.usage_log]  # answered requests
    chat = [(body, usage) for body, usage in pairs if body.get("tools")]
    background = [usage for body, usage in pairs if not body.get("tools")]
    prompts = [canonical_prompt(body) for body, _ in chat]
    prefix_shares = [shared_prefix(a, b) / len(b)
                     for a, b in zip(prompts, prompts[1:], strict=False)]
    turns = len(CHAT)
    total = {k: sum(u[k] for _, u in chat) for k in ("prompt", "cached", "reasoning",
                                                     "completion")}
    answer = total["completion"] - total["reasoning"]
    counted_all = sum(u["prompt"] - u["cached"] + u["completion"] for _, u in pairs)
    requests_per_turn = len(pairs) / turns
    tokens_per_turn = counted_all / turns
    first = chat[0][0]
    return {
        "messages": turns,
        "chat_requests": len(chat),
        "background_requests": len(background),
        "first_request_tokens": counter.count_messages(first["messages"])
        + counter.count_tools(first.get("tools")),
        "first_request_tokens_all_tools": all_tools_first_request(counter, first, sandbox_specs),
        "first_request_tools_offered": len(first.get("tools") or []),
        "mean_per_turn": {
            "prompt": round(total["prompt"] / turns, 1),
            "cached": round(total["cached"] / turns, 1),
            "reasoning": round(total["reasoning"] / turns, 1),
            "answer": round(answer / turns, 1),
        },
        "median_shared_prefix_share": round(statistics.median(prefix_shares), 3),
        "min_shared_prefix_share": round(min(prefix_shares), 3),
        "cached_share": round(total["cached"] / total["prompt"], 3),
        "median_cached_share_per_request": round(statistics.median(
            u["cached"] / u["prompt"] for _, u in chat[1:]), 3),
        "free_tier_day": {
            "requests_per_turn": round(requests_per_turn, 2),
            "counted_tokens_per_turn": round(tokens_per_turn, 1),
            "turns_by_requests": int(FREE_TIER_RPD / requests_per_turn),
            "turns_by_tokens": int(FREE_TIER_TPD / tokens_per_turn),
            "turns_a_day": int(min(FREE_TIER_RPD / requests_per_turn,
                                   FREE_TIER_TPD / tokens_per_turn)),
        },
        "rate_limited_429": groq.limit_counters.rate_limited,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--effort", choices=["low", "medium", "high"], default="low",
                        help="llm.reasoning_effort for chat answers (default: low)")
    args = parser.parse_args()
    print(json.dumps(asyncio.run(run(args.effort)), indent=2))


if __name__ == "__main__":
    main()

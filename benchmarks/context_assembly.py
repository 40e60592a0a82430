"""Benchmark: SMMA prompt assembly for a 500-message session, and token-counting throughput.

Usage: TIKTOKEN_CACHE_DIR=../shared/tiktoken python benchmarks/context_assembly.py [--messages 500]
Prints JSON. Recall is excluded (no RecallProvider), as the issue's target specifies.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import tempfile
import time
from pathlib import Path

from rumi.config import Settings
from rumi.context import ContextEngine, TokenCounter
from rumi.sessions.state import SessionState

SHARED = Path(__file__).resolve().parents[2] / "shared"
os.environ.setdefault("TIKTOKEN_CACHE_DIR", str(SHARED / "tiktoken"))

USER = "¿Puedes revisar el módulo de autenticación y decirme por qué falla el test {n}? " * 2
TOOL = "PASSED tests/test_auth.py::test_login\nFAILED tests/test_auth.py::test_refresh_{n}\n" * 12
REPLY = "El test {n} falla porque el token de refresco caduca antes de tiempo; lo corrijo. " * 3


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    k = min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))
    return ordered[k]


async def populate(engine: ContextEngine, session: SessionState, count: int) -> None:
    """User → tool call → result → reply, repeated: a realistic mix for sections 7–8."""
    n = 0
    while len(session.items) < count:
        await engine.add_message(session, "user", USER.format(n=n))
        arguments = json.dumps({"command": f"pytest -k {n}"})
        call = {"id": f"call_{n}", "type": "function",
                "function": {"name": "bash", "arguments": arguments}}
        await engine.add_message(session, "assistant", None, tool_calls=[call])
        await engine.add_message(session, "tool", TOOL.format(n=n), tool_call_id=call["id"])
        await engine.add_message(session, "assistant", REPLY.format(n=n))
        n += 1


async def main(messages: int, runs: int) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(data_dir=Path(tmp))
        settings.llm.context_window = 1_000_000  # keep the safety net out of the measurement
        counter = TokenCounter()
        engine = ContextEngine(settings, counter, None)
        session = SessionState(chat_id="bench")
        await engine.open(session)
        smma = engine.runtime(session).paths.smma
        for name, body in (("user_profile.md", "- preferencia\n" * 80),
                           ("project_context.md", "- módulo: descripción\n" * 300),
                           ("current_task.md", "- [ ] subtarea\n" * 150),
                           ("agent_notes.md", "- hipótesis\n" * 100)):
            (smma / name).write_text("## Sección\n" + body, encoding="utf-8")
        add_start = time.perf_counter()
        await populate(engine, session, messages)
        add_ms = (time.perf_counter() - add_start) * 1000 / len(session.items)
        tools = [t.spec() for t in engine.tools()]
        start_items = len(session.items)

        for item in session.items:
            item.token_count = None
        cold_start = time.perf_counter()
        first = await engine.build(session, tools=tools)
        cold_ms = (time.perf_counter() - cold_start) * 1000
        local = engine.runtime(session).last_local
        for _ in range(5):  # calibrate as a real provider would (Llama ≈ 1.12 × cl100k here)
            engine.record_usage(session, round(local * 1.12))

        timings, cpu = [], []
        for n in range(runs):
            if n % 10 == 0:  # a new message now and then, like a real conversation
                await engine.add_message(session, "user", f"seguimos {n}")
            start, start_cpu = time.perf_counter(), time.thread_time()
            built = await engine.build(session, tools=tools)
            timings.append((time.perf_counter() - start) * 1000)
            cpu.append((time.thread_time() - start_cpu) * 1000)

        texts = [USER.format(n=n) + TOOL.format(n=n) for n in range(200)]
        total_tokens = 0
        start = time.perf_counter()
        for text in texts:
            total_tokens += counter.count(text)
        count_s = time.perf_counter() - start
        msgs = [{"role": "tool", "tool_call_id": f"c{n}", "content": TOOL.format(n=n)}
                for n in range(500)]
        start = time.perf_counter()
        for m in msgs:
            counter.count_message(m)
        msg_s = time.perf_counter() - start

        return {
            "benchmark": "context_assembly",
            "machine": {"python": platform.python_version(), "cpus": os.cpu_count(),
                        "note": "shared 2-core machine, other test runs concurrent"},
            "session_items_start": start_items,
            "session_items_end": len(session.items),
            "prompt_messages": len(built),
            "prompt_tokens_local": engine.runtime(session).last_local,
            "dashboard_used_calibrated": counter.calibrated(
                settings.llm.model, engine.runtime(session).last_local),
            "calibration_factor": round(counter.factor(settings.llm.model), 4),
            "system_prompt_chars": len(first[0]["content"]),
            "build_runs": runs,
            "build_ms_p50": round(statistics.median(timings), 3),
            "build_ms_p95": round(percentile(timings, 95), 3),
            "build_ms_max": round(max(timings), 3),
            "build_cpu_ms_p50": round(statistics.median(cpu), 3),
            "build_cpu_ms_p95": round(percentile(cpu, 95), 3),
            "load_average_1m": round(os.getloadavg()[0], 2),
            "build_cold_ms": round(cold_ms, 3),
            "add_message_ms_mean_incl_fsync": round(add_ms, 3),
            "count_tokens_per_s": round(total_tokens / count_s),
            "count_chars_per_s": round(sum(map(len, texts)) / count_s),
            "count_message_per_s": round(len(msgs) / msg_s),
        }


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--messages", type=int, default=500)
    parser.add_argument("--runs", type=int, default=300)
    args = parser.parse_args()
    print(json.dumps(asyncio.run(main(args.messages, args.runs)), indent=2))

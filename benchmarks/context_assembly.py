"""Benchmark: SMMA prompt assembly for a 500-message session, and token-counting throughput.

Usage: TIKTOKEN_CACHE_DIR=../shared/tiktoken python benchmarks/context_assembly.py \
           [--messages 500] [--runs 300] [--repeats 5]
Prints JSON. Recall is excluded (no RecallProvider), as the issue's target specifies.

Each repeat times `runs` builds and takes their p50/p95; the report gives the median over
the repeats (and the spread of the p95s), so one burst of load on a shared machine does not
decide the figure. "turn" timings are what the agent loop does before every model call:
`build` plus `ensure_room` (the pressure check that compacts when needed; never here).
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


def summary(values: list[list[float]], name: str) -> dict[str, float]:
    """Median over repeats of each repeat's p50/p95, plus the spread of the p95s."""
    p50s = [statistics.median(v) for v in values]
    p95s = [percentile(v, 95) for v in values]
    return {f"{name}_p50": round(statistics.median(p50s), 3),
            f"{name}_p95": round(statistics.median(p95s), 3),
            f"{name}_p95_min": round(min(p95s), 3),
            f"{name}_p95_max": round(max(p95s), 3)}


async def main(messages: int, runs: int, repeats: int) -> dict:
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
        for _ in range(5):  # calibrate as a real provider would (here: 1.12 × cl100k)
            engine.record_usage(session, round(local * 1.12))

        load_before = os.getloadavg()
        timings: list[list[float]] = []
        cpu: list[list[float]] = []
        turn: list[list[float]] = []
        for _ in range(repeats):
            wall_ms, cpu_ms, turn_ms = [], [], []
            for n in range(runs):
                if n % 10 == 0:  # a new message now and then, like a real conversation
                    await engine.add_message(session, "user", f"seguimos {n}")
                start, start_cpu = time.perf_counter(), time.thread_time()
                built = await engine.build(session, tools=tools)
                wall_ms.append((time.perf_counter() - start) * 1000)
                cpu_ms.append((time.thread_time() - start_cpu) * 1000)
                start = time.perf_counter()
                await engine.build(session, tools=tools)
                if await engine.ensure_room(session) is not None:
                    raise RuntimeError("the benchmark session must not need compaction")
                turn_ms.append((time.perf_counter() - start) * 1000)
            timings.append(wall_ms)
            cpu.append(cpu_ms)
            turn.append(turn_ms)

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
            "machine": {"python": platform.python_version(), "cpus": os.cpu_count()},
            "date_utc": time.strftime("%Y-%m-%d %H:%M", time.gmtime()),
            "load_average_before": [round(x, 2) for x in load_before],
            "load_average_after": [round(x, 2) for x in os.getloadavg()],
            "session_items_start": start_items,
            "session_items_end": len(session.items),
            "prompt_messages": len(built),
            "prompt_tokens_local": engine.runtime(session).last_local,
            "dashboard_used_calibrated": counter.calibrated(
                settings.llm.model, engine.runtime(session).last_local),
            "calibration_factor": round(counter.factor(settings.llm.model), 4),
            "system_prompt_chars": len(first[0]["content"]),
            "build_runs": runs,
            "repeats": repeats,
            **summary(timings, "build_ms"),
            "build_ms_max": round(max(max(v) for v in timings), 3),
            **summary(cpu, "build_cpu_ms"),
            **summary(turn, "turn_build_and_ensure_room_ms"),
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
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    print(json.dumps(asyncio.run(main(args.messages, args.runs, args.repeats)), indent=2))

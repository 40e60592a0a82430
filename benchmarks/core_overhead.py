"""Foundation overhead per message: Assistant.handle with the real app against fake Groq.

Measures what Rumi itself adds around the model call (session lock, context build, tape
writes, session save, logging) by answering N messages through the full `build_app`
stack while a local fake Groq replies instantly; also one session save with a small change on
its own (a fsynced journal line, or an atomic snapshot while the session is small).
Prints JSON.

    TIKTOKEN_CACHE_DIR=../shared/tiktoken python benchmarks/core_overhead.py --messages 200
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from rumi.app import build_app  # noqa: E402
from rumi.config_load import load_settings  # noqa: E402
from tests.fakes.groq_server import FakeGroqServer  # noqa: E402


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(p / 100 * len(ordered)))]


async def main(messages: int) -> dict[str, object]:
    groq = await FakeGroqServer().start()
    groq.default_text = "Respuesta breve del modelo."
    with tempfile.TemporaryDirectory() as tmp:
        config = Path(tmp) / "config.toml"
        config.write_text(
            f'data_dir = "{tmp}/data"\nlog_level = "WARNING"\n'
            f'[llm]\napi_key = "k"\nbase_url = "{groq.base_url}"\n'
            "[sandbox]\nenabled = false\n[memory]\nembeddings_enabled = false\n",
            encoding="utf-8")
        app = await build_app(load_settings(config, env={}))
        await app.start()
        try:
            handle_ms: list[float] = []
            model_ms: list[float] = []
            for i in range(messages):
                started = time.perf_counter()
                await app.assistant.handle("bench", 1, f"mensaje número {i} sobre el proyecto")
                handle_ms.append((time.perf_counter() - started) * 1000)
            # The HTTP round trip to the fake alone, to subtract from handle().
            for _ in range(min(messages, 50)):
                started = time.perf_counter()
                await app.llm.complete([{"role": "user", "content": "x"}])
                model_ms.append((time.perf_counter() - started) * 1000)
            session = await app.sessions.get("bench")
            save_ms = []
            for n in range(50):
                # a real change each time (an unchanged session writes nothing): since the
                # session journal, this is what a message's save costs — one fsynced line
                session.metadata["bench_save"] = n
                started = time.perf_counter()
                await app.sessions.save(session)
                save_ms.append((time.perf_counter() - started) * 1000)
            items = len(session.items)
        finally:
            await app.stop()
            await groq.stop()
    model = statistics.median(model_ms)
    return {
        "messages": messages,
        "session_items_at_end": items,
        "handle_ms_p50": round(statistics.median(handle_ms), 2),
        "handle_ms_p95": round(pct(handle_ms, 95), 2),
        "fake_model_roundtrip_ms_p50": round(model, 2),
        "overhead_ms_p50": round(statistics.median(handle_ms) - model, 2),
        "session_save_ms_p50": round(statistics.median(save_ms), 2),
        "session_save_ms_p95": round(pct(save_ms, 95), 2),
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--messages", type=int, default=200)
    args = parser.parse_args()
    print(json.dumps(asyncio.run(main(args.messages)), indent=2))

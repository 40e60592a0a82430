"""Every way out of Rumi, timed while the model thinks (issue 33): a fake Groq that takes
`--slow` seconds (default 30) to answer, the real `rumi chat` / `rumi run` as child processes.

    python benchmarks/exit_latency.py [--runs 3] [--slow 30] [--only run] [--stop-grace 1.0]

For `rumi chat` (stdin a pseudo-terminal, as when a person types): Ctrl-D, `/exit`, `/salir`
and Ctrl-C (SIGINT), each sent once the turn is waiting for the model — seconds until the
process is gone. For `rumi run` (the fake Telegram of tests/fakes, a message under way):
SIGTERM → process gone, and the gap between the log's "rumi stopped" line (printed with
`--verbose`) and the process being gone.
`--only chat|run` times one of the two; `--stop-grace S` writes `telegram.stop_grace_seconds`
(else the default applies), to compare graces at the same load.
Prints one JSON object: per case the median and max over `--runs`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _cli import positive

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from tests.fakes.groq_server import FakeGroqServer, ScriptedReply  # noqa: E402
from tests.fakes.telegram_server import FakeTelegramServer  # noqa: E402

RUMI = [sys.executable, "-c", "import sys; from rumi.cli import main; sys.exit(main())"]
TOKEN = "4242:EXIT-token"  # noqa: S105 (the fake server's token)
OWNER = 5150
CHAT_WAYS = ("ctrl-d", "/exit", "/salir", "ctrl-c")


def write_config(folder: Path, groq: FakeGroqServer, telegram: FakeTelegramServer | None,
                 stop_grace: float | None = None) -> Path:
    text = (f'data_dir = "{folder / "data"}"\n'
            f'[llm]\napi_key = "gsk_bench"\nbase_url = "{groq.base_url}"\nmax_retries = 0\n'
            "[sandbox]\nenabled = false\n[memory]\nembeddings_enabled = false\n")
    if telegram is not None:
        text += (f'[telegram]\ntoken = "{TOKEN}"\nbase_url = "{telegram.base_url}"\n'
                 f'base_file_url = "{telegram.base_file_url}"\nallowed_users = [{OWNER}]\n')
        if stop_grace is not None:
            text += f"stop_grace_seconds = {stop_grace}\n"
    config = folder / "config.toml"
    config.write_text(text, encoding="utf-8")
    return config


def slow_model(groq: FakeGroqServer, slow: float) -> asyncio.Event:
    asked = asyncio.Event()

    def respond(body: dict[str, Any]) -> ScriptedReply:
        asked.set()
        return ScriptedReply({"role": "assistant", "content": "demasiado tarde"}, delay=slow)

    groq.responder = respond
    return asked


async def gone(proc: asyncio.subprocess.Process, began: float) -> float:
    try:
        await asyncio.wait_for(proc.wait(), 120)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    return time.perf_counter() - began


async def chat_exit(folder: Path, groq: FakeGroqServer, way: str, slow: float) -> float:
    asked = slow_model(groq, slow)
    config = write_config(folder, groq, None)
    terminal, typed = os.openpty()[::-1]   # (the child's end, ours)
    try:
        proc = await asyncio.create_subprocess_exec(
            *RUMI, "chat", "--config", str(config), stdin=terminal,
            stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL)
        os.write(typed, "cuéntame algo largo\n".encode())
        await asyncio.wait_for(asked.wait(), 120)
        began = time.perf_counter()
        if way == "ctrl-d":
            os.write(typed, b"\x04")
        elif way == "ctrl-c":
            proc.send_signal(signal.SIGINT)
        else:
            os.write(typed, f"{way}\n".encode())
        return await gone(proc, began)
    finally:
        os.close(terminal)
        os.close(typed)


async def run_sigterm(folder: Path, groq: FakeGroqServer, telegram: FakeTelegramServer,
                      slow: float, stop_grace: float | None) -> tuple[float, float]:
    """(SIGTERM → gone, "rumi stopped" printed → gone)."""
    asked = slow_model(groq, slow)
    config = write_config(folder, groq, telegram, stop_grace)
    proc = await asyncio.create_subprocess_exec(
        *RUMI, "run", "--verbose", "--config", str(config),
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE)
    assert proc.stderr is not None
    await telegram.wait_for_call("getUpdates", timeout=120)
    telegram.push_text(OWNER, OWNER, "cuéntame algo largo")
    await asyncio.wait_for(asked.wait(), 120)
    began = time.perf_counter()
    proc.send_signal(signal.SIGTERM)
    said = None
    while line := await asyncio.wait_for(proc.stderr.readline(), 120):
        if b"rumi stopped" in line and said is None:
            said = time.perf_counter()
    took = await gone(proc, began)
    ended = began + took
    return took, ended - (said if said is not None else ended)


def summary(values: list[float]) -> dict[str, float]:
    return {"median_s": round(statistics.median(values), 3), "max_s": round(max(values), 3)}


async def main_async(runs: int, slow: float, only: str | None = None,
                     stop_grace: float | None = None) -> dict[str, Any]:
    groq = await FakeGroqServer().start()
    telegram = await FakeTelegramServer(TOKEN).start()
    ways = CHAT_WAYS if only in (None, "chat") else ()
    times: dict[str, list[float]] = {way: [] for way in ways}
    if only in (None, "run"):
        times |= {"run SIGTERM": [], "run after 'rumi stopped'": []}
    try:
        with tempfile.TemporaryDirectory(prefix="rumi-exit-") as tmp:
            for n in range(runs):
                for way in ways:
                    folder = Path(tmp) / f"{n}-{way.strip('/')}"
                    folder.mkdir()
                    times[way].append(await chat_exit(folder, groq, way, slow))
                if "run SIGTERM" not in times:
                    continue
                folder = Path(tmp) / f"{n}-run"
                folder.mkdir()
                took, after = await run_sigterm(folder, groq, telegram, slow, stop_grace)
                times["run SIGTERM"].append(took)
                times["run after 'rumi stopped'"].append(after)
    finally:
        await telegram.stop()
        await groq.stop()
    return {"runs": runs, "model_seconds": slow, "stop_grace_seconds": stop_grace,
            "cases": {name: summary(values) for name, values in times.items()}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=positive, default=3)
    parser.add_argument("--slow", type=float, default=30.0)
    parser.add_argument("--only", choices=("chat", "run"))
    parser.add_argument("--stop-grace", type=float,
                        help="telegram.stop_grace_seconds for `rumi run` (default: Rumi's)")
    args = parser.parse_args()
    print(json.dumps(asyncio.run(main_async(args.runs, args.slow, args.only, args.stop_grace)),
                     indent=2))


if __name__ == "__main__":
    main()

"""How often a kill -9 just after Telegram accepted an answer makes the answer go out twice.

    python benchmarks/answer_window.py --rounds 40 --window-ms 20

A real `rumi run` child process (sandbox off, embeddings off) against the fake Groq and the
fake Bot API (tests/fakes). Each round sends one message; the moment the fake Bot API has
accepted the answer (before the bot has read Telegram's reply), a kill -9 is scheduled after
a delay drawn uniformly from 0 to `--window-ms` ms. The bot is restarted (the restarted bot
serves the next round) and each round's answers are counted once its inbox journal is empty.
An answer counted twice is the known limit (docs/reliability.md): Telegram had it, the bot
died before the message id reached the journal. `duplicates / rounds × window_ms` estimates
that moment's length. Prints one JSON object.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import re
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from _cli import positive

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from tests.fakes.groq_server import FakeGroqServer, ScriptedReply  # noqa: E402
from tests.fakes.telegram_server import FakeTelegramServer, Sent  # noqa: E402

TOKEN = "777:bench-token"
ALICE = 111


async def _until(predicate, timeout: float) -> None:  # noqa: ANN001
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError("condition not reached")
        await asyncio.sleep(0.02)


async def _start(config: Path) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable, "-c", "import sys; from rumi.cli import main; sys.exit(main())",
        "run", "--config", str(config), cwd=str(REPO),
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL)


def _settled(journal: Path) -> bool:
    return journal.exists() and '"op": "recv"' not in journal.read_text(encoding="utf-8")


async def run(rounds: int, window_ms: float, seed: int) -> dict[str, object]:
    rng = random.Random(seed)
    groq = await FakeGroqServer().start()
    telegram = await FakeTelegramServer(TOKEN).start()
    groq.responder = lambda body: ScriptedReply(
        {"role": "assistant", "content": "respuesta a " + re.findall(
            r"mensaje \d+", json.dumps(body, ensure_ascii=False))[-1]})
    work = Path(tempfile.mkdtemp(prefix="rumi-answer-window-"))
    config = work / "config.toml"
    config.write_text(
        f'data_dir = "{work / "data"}"\n'
        f'[telegram]\ntoken = "{TOKEN}"\nbase_url = "{telegram.base_url}"\n'
        f'base_file_url = "{telegram.base_file_url}"\nallowed_users = [{ALICE}]\n'
        "poll_timeout = 1\nredeliver_max_age_minutes = 30\n"
        f'[llm]\napi_key = "gsk_test"\nbase_url = "{groq.base_url}"\nmax_retries = 0\n'
        "[sandbox]\nenabled = false\n[memory]\nembeddings_enabled = false\n",
        encoding="utf-8")
    journal = work / "data" / "inbox" / "telegram.jsonl"
    delays: list[float] = []
    loop = asyncio.get_running_loop()
    proc = await _start(config)
    started = time.monotonic()
    try:
        for n in range(1, rounds + 1):
            await telegram.wait_for_call("getUpdates", timeout=120)
            victim = proc

            def kill(sent: Sent, victim: asyncio.subprocess.Process = victim,
                     n: int = n) -> None:
                if f"mensaje {n}" in (sent.text or "") and len(delays) < n:
                    delay = rng.uniform(0.0, window_ms / 1000)
                    delays.append(delay)
                    loop.call_later(delay, victim.kill)

            telegram.on_accepted = kill
            telegram.push_text(ALICE, ALICE, f"mensaje {n}")
            await victim.wait()
            telegram.on_accepted = None
            proc = await _start(config)
            await _until(lambda n=n: any(f"mensaje {n}" in (s.text or "")
                                         for s in telegram.sent), 120)
            await _until(lambda: _settled(journal), 120)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
        await telegram.stop()
        await groq.stop()
    found = (re.search(r"respuesta a mensaje (\d+)", s.text or "") for s in telegram.sent)
    counts = Counter(int(m.group(1)) for m in found if m)
    duplicates = sum(1 for n in range(1, rounds + 1) if counts[n] > 1)
    lost = sum(1 for n in range(1, rounds + 1) if counts[n] == 0)
    return {"rounds": rounds, "window_ms": window_ms, "seed": seed,
            "answered_twice": duplicates, "never_answered": lost,
            "answered_thrice_or_more": sum(1 for c in counts.values() if c > 2),
            "share_twice": round(duplicates / rounds, 3),
            "estimated_moment_ms": round(duplicates / rounds * window_ms, 2),
            "seconds": round(time.monotonic() - started, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=positive, default=40)
    parser.add_argument("--window-ms", type=float, default=20.0)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    print(json.dumps(asyncio.run(run(args.rounds, args.window_ms, args.seed))))


if __name__ == "__main__":
    main()

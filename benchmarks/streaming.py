"""Answers that appear as they are written: how soon a person sees text, with and without drafts.

The real bot (`build_app` + the Telegram channel, long polling) against the fake Bot API and a
fake Groq that streams slowly: `--chunk` characters every `--delay` seconds (default 16
characters every 0.25 s, so an answer of ~1,200 characters takes ~19 s to write, about what a
slow reasoning answer takes on Groq). For each answer, in a private chat:

- `first_text_s`: from the person's message to the first text they can see (the first draft
  with streaming on; the answer itself with streaming off);
- `final_s`: to the real message with the whole answer;
- Bot API calls for the answer (drafts, messages; the "typing…" actions apart).

Prints JSON (one object per mode, medians over `--answers` answers).

    TIKTOKEN_CACHE_DIR=../shared/tiktoken python benchmarks/streaming.py --answers 3
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

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from _cli import positive  # noqa: E402

from rumi.app import build_app  # noqa: E402
from rumi.channels.telegram import TelegramChannel  # noqa: E402
from rumi.config_load import load_settings  # noqa: E402
from tests.fakes.groq_server import FakeGroqServer  # noqa: E402
from tests.fakes.telegram_server import FakeTelegramServer  # noqa: E402

TOKEN = "777:BENCH-token"
PERSON = 111
SENTENCE = "Esta es una frase de la respuesta, escrita poco a poco por un modelo lento. "


def answer_text(chars: int) -> str:
    text = ""
    while len(text) < chars:
        text += SENTENCE
    return text[:chars].rstrip()


async def one_mode(stream: bool, model: str, answers: int, chars: int, chunk: int,
                   delay: float) -> dict[str, object]:
    groq = await FakeGroqServer().start()
    telegram = await FakeTelegramServer(TOKEN).start()
    groq.stream_chunk_chars, groq.stream_delay = chunk, delay
    with tempfile.TemporaryDirectory() as tmp:
        config = Path(tmp) / "config.toml"
        config.write_text(
            f'data_dir = "{tmp}/data"\nlog_level = "WARNING"\n'
            f'[telegram]\ntoken = "{TOKEN}"\nbase_url = "{telegram.base_url}"\n'
            f'base_file_url = "{telegram.base_file_url}"\nallowed_users = [{PERSON}]\n'
            f"poll_timeout = 1\nstream = {str(stream).lower()}\n"
            f'[llm]\napi_key = "k"\nbase_url = "{groq.base_url}"\nmodel = "{model}"\n'
            "max_output_tokens = 4096\ntimeout = 120\n"
            "[sandbox]\nenabled = false\n[memory]\nembeddings_enabled = false\n",
            encoding="utf-8")
        app = await build_app(load_settings(config, env={}))
        channel = TelegramChannel(app.settings.telegram, app.assistant, steps=app.steps,
                                  answer_text=app.answer_text)
        await app.start()
        await channel.start()
        rows: list[dict[str, float]] = []
        try:
            delay_was, groq.stream_delay = groq.stream_delay, 0.0
            await one_answer(telegram, groq, "Hola.", -1)   # warm-up: connections, caches
            groq.stream_delay = delay_was
            for n in range(answers):
                rows.append(await one_answer(telegram, groq, answer_text(chars), n))
        finally:
            await channel.stop()
            await app.stop()
            await telegram.stop()
            await groq.stop()
    return {"stream": stream, "model": model, "answers": answers, "answer_chars": chars,
            "chunk_chars": chunk, "chunk_delay_s": delay,
            **{key: round(statistics.median(r[key] for r in rows), 3) for key in rows[0]},
            "runs": rows}


async def one_answer(telegram: FakeTelegramServer, groq: FakeGroqServer, text: str,
                     n: int) -> dict[str, float]:
    groq.enqueue_text(text)
    sent_before, calls_before = len(telegram.sent), len(telegram.calls)
    drafts_before = len(telegram.drafts.history)
    started = time.monotonic()
    telegram.push_text(PERSON, PERSON, f"cuéntame algo largo, número {n}")
    await telegram.wait_for_sent(sent_before + 1, timeout=300)
    final = time.monotonic() - started
    await asyncio.sleep(0.5)   # anything sent after the answer would count too
    drafts = telegram.drafts.history[drafts_before:]
    first = (drafts[0].at - started) if drafts else final
    calls = [method for method, _ in telegram.calls[calls_before:]]
    answer = [s for s in telegram.sent[sent_before:] if s.method == "sendMessage"]
    if len(answer) != 1 or answer[0].text != text:
        raise SystemExit(f"the answer did not arrive once and whole: {len(answer)} messages")
    return {"first_text_s": first, "final_s": final,
            "first_over_final": first / final,
            "drafts": float(len(drafts)),
            "messages": float(calls.count("sendMessage")),
            "bot_api_calls": float(sum(m != "sendChatAction" for m in calls
                                       if m != "getUpdates")),
            "typing_actions": float(calls.count("sendChatAction"))}


async def main(args: argparse.Namespace) -> list[dict[str, object]]:
    return [await one_mode(stream, args.model, args.answers, args.chars, args.chunk,
                           args.delay)
            for stream in (True, False)]


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--answers", type=positive, default=3)
    parser.add_argument("--chars", type=positive, default=1_200)
    parser.add_argument("--chunk", type=positive, default=16)
    parser.add_argument("--delay", type=float, default=0.25)
    parser.add_argument("--model", default="openai/gpt-oss-120b")
    print(json.dumps(asyncio.run(main(parser.parse_args())), indent=2))

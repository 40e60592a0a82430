#!/usr/bin/env python3
"""How big is a fresh chat's first request, and how much of a tool loop's next request can the
provider serve from its prompt cache? Prints JSON.

Builds the request with the real `ContextEngine`, the o200k tokenizer (`TokenCounter`, set
`TIKTOKEN_CACHE_DIR` when offline) and all thirteen tools as `rumi/app.py` registers them:
the six memory system calls, the four sandbox tools (offered as if Docker were up; no engine
is contacted) and the three long-term memory tools. Tokens are counted the way the engine
counts them (messages with their overhead + tool definitions as JSON), so `request.total`
equals what the dashboard calls "used" before calibration.

`harmony` counts the same requests as gpt-oss reads them, rendered by OpenAI's harmony renderer
(benchmarks/harmony_count.py, needs the `openai-harmony` dev extra): the first request's tokens
and the token prefix the second request shares with it.

The cache figure follows the provider's prefix order: leading system message, then the tool
definitions, then the remaining messages; it is the share of the second request's serialized
text (after a tool call and its result) that the first request already had as a prefix. The
automatic message (dashboard, recalled memories) sits right before the person's message and
stays the same for the whole turn, so the whole first request is a prefix of the second.

    TIKTOKEN_CACHE_DIR=../shared/tiktoken python scripts/prompt_size.py [--message TEXT]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

import harmony_count  # noqa: E402

from rumi import messages as msg  # noqa: E402
from rumi.base.tools import Tool
from rumi.config import Settings  # noqa: E402
from rumi.context import ContextEngine, TokenCounter  # noqa: E402
from rumi.context.prompt import SEP  # noqa: E402
from rumi.memory.commands import MemoryCommands  # noqa: E402
from rumi.sandbox.manager import SandboxManager  # noqa: E402
from rumi.sandbox.tools import sandbox_tools  # noqa: E402
from rumi.sessions.state import SessionState  # noqa: E402

DEFAULT_MESSAGE = "¿Qué archivos hay en mi proyecto y cuál pesa más?"  # 11 o200k tokens
TOOL_OUTPUT = "total 12\n-rw-r--r-- 1 rumi rumi 5120 informe.pdf\n-rw-r--r-- 1 rumi rumi 88 a.txt"


def all_tools(engine: ContextEngine, settings: Settings) -> list[Tool]:
    """The thirteen tools in `build_app`'s registration order (context, sandbox, memory)."""
    sandbox = SandboxManager(settings.sandbox, settings.data_dir)  # no Docker call here
    memory = MemoryCommands(settings.data_dir, store=None, lifecycle=None,  # type: ignore[arg-type]
                            journal=None)  # type: ignore[arg-type]
    return [*engine.tools(), *sandbox_tools(sandbox), *memory.tools()]


def serialize(messages: list[dict[str, Any]], specs: list[dict[str, Any]]) -> str:
    """The request in the provider's prefix order: leading system messages, tools, the rest."""
    lead = 0
    while lead < len(messages) and messages[lead]["role"] == "system":
        lead += 1
    parts = [json.dumps(m, ensure_ascii=False) for m in messages[:lead]]
    parts.append(json.dumps(specs, ensure_ascii=False))
    parts.extend(json.dumps(m, ensure_ascii=False) for m in messages[lead:])
    return "".join(parts)


def harmony(first: list[dict[str, Any]], second: list[dict[str, Any]],
            specs: list[dict[str, Any]]) -> dict[str, Any]:
    missing = harmony_count.available()
    if missing:
        return {"unavailable": missing}
    one = harmony_count.render({"messages": first, "tools": specs})
    two = harmony_count.render({"messages": second, "tools": specs})
    shared = harmony_count.common_prefix(one, two)
    return {"first_request": len(one), "second_request": len(two),
            "second_shares_prefix": shared, "second_prefix_share": round(shared / len(two), 4)}


def prefix_share(first: str, second: str) -> float:
    return len(os.path.commonprefix([first, second])) / len(second) if second else 0.0


async def measure(data_dir: Path, message: str) -> dict[str, Any]:
    settings = Settings(data_dir=data_dir)
    tokens = TokenCounter()
    engine = ContextEngine(settings, tokens, None)
    specs = [tool.spec(msg.current_language()) for tool in all_tools(engine, settings)]
    session = SessionState(chat_id="1")
    await engine.add_message(session, "user", message)
    first = await engine.build(session, query=message, tools=specs)
    rt = engine.runtime(session)
    engine_count, dashboard = rt.last_local, rt.section_tokens["dashboard"]
    lead = engine.lead_blocks(rt)
    blocks = {name: tokens.count(text + (SEP if k < len(lead) - 1 else ""))
              for k, (name, text) in enumerate(lead)}
    tool_tokens = {s["function"]["name"]: tokens.count(json.dumps(s, ensure_ascii=False))
                   for s in specs}
    total = tokens.count_messages(first) + tokens.count_tools(specs)
    automatic = next(m for m in first[1:] if m["role"] == "user")  # right after the system

    call = {"id": "call_1", "type": "function",
            "function": {"name": "bash", "arguments": json.dumps({"command": "ls -la"})}}
    await engine.add_message(session, "assistant", None, tool_calls=[call])
    await engine.add_message(session, "tool", TOOL_OUTPUT, tool_call_id="call_1")
    second = await engine.build(session, query=message, tools=specs)
    text_first, text_second = serialize(first, specs), serialize(second, specs)
    return {
        "tokenizer": "chars/4 fallback" if tokens.is_fallback else tokens.encoding_name,
        "user_message": {"text": message, "tokens": tokens.count(message)},
        "leading_system_message": {
            "tokens": tokens.count_message(first[0]),
            "blocks": blocks,
            "section_text": {name: rt.files.sections[name].tokens for name in rt.files.sections},
        },
        "automatic_message": {
            "tokens": tokens.count_message(automatic),
            "dashboard": dashboard,
            "recalled_memories": rt.recall_tokens,
        },
        "conversation_messages": tokens.count_messages(first[2:]) - 3,
        "tools": {"count": len(specs), "each": tool_tokens, "total": tokens.count_tools(specs)},
        "request": {"total": total, "engine_count": engine_count, "messages": len(first)},
        "harmony": harmony(first, second, specs),
        "tool_loop_prefix": {
            "second_request_chars": len(text_second),
            "common_prefix_share": round(prefix_share(text_first, text_second), 4),
            "first_is_prefix": text_second.startswith(text_first),
        },
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--message", default=DEFAULT_MESSAGE, help="the first user message")
    parser.add_argument("--language", choices=msg.SUPPORTED_LANGUAGES,
                        default=msg.DEFAULT_LANGUAGE, help="the chat's language")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="rumi-prompt-size-") as tmp, \
            msg.use_language(args.language):
        report = asyncio.run(measure(Path(tmp), args.message))
    report["language"] = args.language
    json.dump(report, sys.stdout, ensure_ascii=False, indent=2)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

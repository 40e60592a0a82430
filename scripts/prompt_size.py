#!/usr/bin/env python3
"""How big is a fresh chat's first request, and how much of a tool loop's next request can the
provider serve from its prompt cache? Prints JSON.

Builds the request with the real `ContextEngine`, the cl100k tokenizer (`TokenCounter`, set
`TIKTOKEN_CACHE_DIR` when offline) and all thirteen tools as `rumi/app.py` registers them:
the six memory system calls, the four sandbox tools (offered as if Docker were up; no engine
is contacted) and the three long-term memory tools. Tokens are counted the way the engine
counts them (messages with their overhead + tool definitions as JSON), so `request.total`
equals what the dashboard calls "used" before calibration.

The cache figure follows the provider's prefix order: leading system message, then the tool
definitions, then the remaining messages; it is the share of the second request's serialized
text (after a tool call and its result) that the first request already had as a prefix.

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

from rumi.base.tools import Tool
from rumi.config import Settings
from rumi.context import ContextEngine, TokenCounter
from rumi.context.engine import SEP
from rumi.memory.commands import MemoryCommands
from rumi.sandbox.manager import SandboxManager
from rumi.sandbox.tools import sandbox_tools
from rumi.sessions.state import SessionState

DEFAULT_MESSAGE = "¿Qué archivos hay en mi proyecto y cuál pesa más?"  # 14 cl100k tokens
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


def prefix_share(first: str, second: str) -> float:
    return len(os.path.commonprefix([first, second])) / len(second) if second else 0.0


async def measure(data_dir: Path, message: str) -> dict[str, Any]:
    settings = Settings(data_dir=data_dir)
    tokens = TokenCounter()
    engine = ContextEngine(settings, tokens, None)
    specs = [tool.spec() for tool in all_tools(engine, settings)]
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
        "trailing_message": {
            "tokens": tokens.count_message(first[-1]),
            "dashboard": dashboard,
            "recalled_memories": rt.recall_tokens,
        },
        "conversation_messages": tokens.count_messages(first[1:-1]) - 3,
        "tools": {"count": len(specs), "each": tool_tokens, "total": tokens.count_tools(specs)},
        "request": {"total": total, "engine_count": engine_count, "messages": len(first)},
        "tool_loop_prefix": {
            "second_request_chars": len(text_second),
            "common_prefix_share": round(prefix_share(text_first, text_second), 4),
            "first_without_trailing_is_prefix": text_second.startswith(
                serialize(first[:-1], specs)),
        },
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--message", default=DEFAULT_MESSAGE, help="the first user message")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="rumi-prompt-size-") as tmp:
        report = asyncio.run(measure(Path(tmp), args.message))
    json.dump(report, sys.stdout, ensure_ascii=False, indent=2)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

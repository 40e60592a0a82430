"""Property: after any sequence of prunes and summaries the built list is API-valid and
every original message is recoverable from the tape byte for byte."""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rumi.base.tools import ToolError
from rumi.config import Settings
from rumi.context import ContextEngine, TokenCounter
from rumi.context.builder import validate_messages
from rumi.context.syscalls import prune, summarize
from rumi.sessions.state import SessionState

texts = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=40)
steps = st.lists(
    st.one_of(
        st.tuples(st.just("user"), texts),
        st.tuples(st.just("calls"), st.integers(1, 3), texts),
        st.tuples(st.just("assistant"), texts),
    ),
    min_size=1, max_size=25,
)
ops = st.lists(
    st.one_of(
        st.tuples(st.just("prune"), st.lists(st.integers(0, 80), min_size=1, max_size=4)),
        st.tuples(st.just("summarize"), st.integers(0, 80), st.integers(0, 80), texts),
        st.tuples(st.just("pin"), st.integers(0, 80)),
    ),
    max_size=12,
)

COUNTER = TokenCounter()


async def scenario(data_dir: Path, script: list, operations: list) -> None:
    engine = ContextEngine(Settings(data_dir=data_dir), COUNTER, None)
    session = SessionState(chat_id="prop")
    originals: dict[int, str] = {}
    for n, step in enumerate(script):
        if step[0] == "calls":
            calls = [{"id": f"c{n}_{k}", "type": "function",
                      "function": {"name": "bash", "arguments": "{}"}} for k in range(step[1])]
            item = await engine.add_message(session, "assistant", step[2], tool_calls=calls)
            originals[item.id] = step[2]
            for k, call in enumerate(calls):
                result = await engine.add_message(session, "tool", f"{step[2]}·{k}",
                                                  tool_call_id=call["id"])
                originals[result.id] = f"{step[2]}·{k}"
        else:
            item = await engine.add_message(session, step[0], step[1])
            originals[item.id] = step[1]
    pinned: set[int] = set()
    for op in operations:
        try:
            if op[0] == "prune":
                await prune(engine, session, op[1])
            elif op[0] == "summarize":
                await summarize(engine, session, op[1], op[2], op[3] or "resumen")
            elif await engine.pin(session, op[1]):
                pinned.add(op[1])
        except ToolError:
            pass
        messages = await engine.build(session)
        assert validate_messages(messages) == [], messages
        assert pinned <= {i.id for i in session.items}
    result = await engine.compact(session)  # the safety net keeps the same invariants
    assert validate_messages(await engine.build(session)) == []
    assert pinned <= {i.id for i in session.items}
    assert not result.compacted or result.method == "extractive"
    for message_id, text in originals.items():
        record = await engine.original(session, message_id)
        assert record is not None and record["content"] == text


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(script=steps, operations=ops)
def test_prune_and_summarize_keep_pairs_and_tape(script: list, operations: list) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        asyncio.run(scenario(Path(tmp), script, operations))


@settings(max_examples=25, deadline=None)
@given(script=steps, operations=ops)
def test_pinned_items_survive(script: list, operations: list) -> None:
    async def run(data_dir: Path) -> None:
        engine = ContextEngine(Settings(data_dir=data_dir), COUNTER, None)
        session = SessionState(chat_id="pins")
        for n, step in enumerate(script):
            await engine.add_message(session, "user", f"{n}:{step[-1]}")
        pinned = [i.id for i in session.items[::3]]
        for item_id in pinned:
            await engine.pin(session, item_id)
        for op in operations:
            try:
                if op[0] == "prune":
                    await prune(engine, session, op[1])
                elif op[0] == "summarize":
                    await summarize(engine, session, op[1], op[2], op[3] or "r")
            except ToolError:
                pass
        assert [i.id for i in session.items if i.pinned] == pinned

    with tempfile.TemporaryDirectory() as tmp:
        asyncio.run(run(Path(tmp)))

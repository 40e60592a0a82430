"""The safety net: automatic progressive compaction, its hook, and its fallbacks."""

from __future__ import annotations

from rumi.context import ContextEngine, TokenCounter
from rumi.context.builder import validate_messages
from rumi.context.compaction import plan_middle
from rumi.llm.client import LLMClient
from rumi.sessions.state import ContextItem, SessionState
from tests.context.conftest import exchange
from tests.prompt_shape import automatic


def small_settings(make_settings, fake_groq, window: int = 6000):
    return make_settings(
        f'[llm]\napi_key = "gsk_test"\nbase_url = "{fake_groq.base_url}"\nmax_retries = 0\n'
        f"context_window = {window}\n")


def summary_responder(fake_groq):
    def respond(body: dict) -> dict:
        system = body["messages"][0]["content"]
        if "compactador" in system:
            return {"role": "assistant", "content": "- Se habló de varios pasos; ver #ids."}
        return {"role": "assistant", "content": "ok"}
    fake_groq.responder = respond


async def turn(engine: ContextEngine, session: SessionState, n: int) -> None:
    await engine.add_message(session, "user", f"Petición {n}: " + "detalle " * 30)
    await engine.build(session)
    if n % 3 == 0:
        await exchange(engine, session, n, output="línea de salida\n" * 15)
    await engine.add_message(session, "assistant", f"Respuesta {n}: " + "hecho " * 25)


async def test_long_conversation_stays_under_the_limit(fake_groq, make_settings,
                                                       counter: TokenCounter) -> None:
    summary_responder(fake_groq)
    settings = small_settings(make_settings, fake_groq)
    llm = LLMClient(settings.llm)
    engine = ContextEngine(settings, counter, llm)
    seen: list[tuple[list[int], int]] = []

    async def hook(session: SessionState, items: list[ContextItem]) -> None:
        seen.append(([i.id for i in items], len(fake_groq.requests)))

    engine.before_compaction.append(hook)
    session = SessionState(chat_id="long")
    originals: dict[int, str] = {}
    progressive: set[int] = set()
    try:
        for n in range(80):
            await turn(engine, session, n)
            if n == 2:
                await engine.pin(session, session.items[4].id)
            for item in session.items:
                if item.kind == "message":
                    originals.setdefault(item.id, item.content)
            first = [i.id for i in session.items[:3]]
            last = [i.id for i in session.items[-10:]]
            tape_before = len(await engine.runtime(session).tape.records())
            result = await engine.after_turn(session)
            assert engine.pressure(session) < settings.context.hard_limit
            if result is not None and result.compacted:
                assert [i.id for i in session.items[:3]] == first
                new = (await engine.runtime(session).tape.records())[tape_before:]
                tails = [r["keep_last"] for r in new if r.get("event") == "compact"]
                assert tails and set(tails) <= {10, 5, 2, 1}  # progressive: 10, then 5, 2, 1
                assert tails == sorted(set(tails), reverse=True)
                progressive.update(tails)
                kept = tails[-1]  # the last pass kept at least this many items untouched
                assert [i.id for i in session.items[-kept:]] == last[-kept:]
                assert validate_messages(await engine.build(session)) == []
    finally:
        await llm.close()
    assert len(seen) >= 3
    assert 10 in progressive
    summaries = [r for r in fake_groq.requests if "compactador" in r["messages"][0]["content"]]
    assert len(summaries) >= len(seen) - 1
    for ids, requests_before in seen:  # the hook ran before the summary was requested
        request = fake_groq.requests[requests_before]
        assert "compactador" in request["messages"][0]["content"]
        assert f"[#{ids[0]}]" in request["messages"][1]["content"]
    assert 5 in [i.id for i in session.items] and engine.item(session, 5).pinned
    assert any(i.kind == "summary" for i in session.items)
    for item_id, text in originals.items():
        assert (await engine.original(session, item_id))["content"] == text


async def fill(engine: ContextEngine, session: SessionState) -> None:
    n = 0
    while engine.pressure(session) < engine.cfg.hard_limit:
        await turn(engine, session, n)
        n += 1


async def test_failing_hook_prevents_compaction(fake_groq, make_settings,
                                                counter: TokenCounter) -> None:
    summary_responder(fake_groq)
    settings = small_settings(make_settings, fake_groq)
    llm = LLMClient(settings.llm)
    engine = ContextEngine(settings, counter, llm)

    async def broken(session: SessionState, items: list[ContextItem]) -> None:
        raise RuntimeError("la base de datos no responde")

    engine.before_compaction.append(broken)
    session = SessionState(chat_id="hook")
    try:
        await fill(engine, session)
        before = [i.id for i in session.items]
        requests = len(fake_groq.requests)
        result = await engine.after_turn(session)
    finally:
        await llm.close()
    assert result is not None and not result.compacted
    assert "la base de datos no responde" in result.blocked_reason
    assert [i.id for i in session.items] == before
    assert len(fake_groq.requests) == requests
    assert "Compactación automática cancelada" in automatic(await engine.build(session))


async def test_failed_hook_is_not_retried_before_every_call_of_the_turn(
        fake_groq, make_settings, counter: TokenCounter) -> None:
    """ensure_room runs before each model call: a failing flush must not repeat each time."""
    summary_responder(fake_groq)
    settings = small_settings(make_settings, fake_groq)
    llm = LLMClient(settings.llm)
    engine = ContextEngine(settings, counter, llm)
    calls: list[int] = []

    async def broken(session: SessionState, items: list[ContextItem]) -> None:
        calls.append(len(items))
        raise RuntimeError("la base de datos no responde")

    engine.before_compaction.append(broken)
    session = SessionState(chat_id="hookonce")
    try:
        await fill(engine, session)
        for _ in range(4):  # four model calls of one turn
            await engine.ensure_room(session)
        assert len(calls) == 1
        forced = await engine.ensure_room(session, force=True)  # the provider said "too long"
        assert forced is not None and len(calls) == 2
        await engine.add_message(session, "user", "otra petición")
        await engine.ensure_room(session)
    finally:
        await llm.close()
    assert len(calls) == 3


async def test_llm_down_falls_back_to_extractive(fake_groq, make_settings,
                                                 counter: TokenCounter) -> None:
    settings = small_settings(make_settings, fake_groq)
    llm = LLMClient(settings.llm)
    engine = ContextEngine(settings, counter, llm)
    session = SessionState(chat_id="down")
    try:
        await fill(engine, session)
        for _ in range(5):
            fake_groq.enqueue_error(500, "caído")
        result = await engine.after_turn(session)
    finally:
        await llm.close()
    assert result is not None and result.compacted and result.method == "extractive"
    assert result.pressure_after < settings.context.hard_limit < result.pressure_before
    summary = next(i for i in session.items if i.kind == "summary")
    assert summary.content.startswith("Resumen automático (extractivo")
    assert f"#{result.removed_ids[0]}" in summary.content
    assert validate_messages(await engine.build(session)) == []


async def test_nothing_to_compact_is_reported(make_settings, counter: TokenCounter) -> None:
    settings = make_settings("[llm]\ncontext_window = 2500\n")
    engine = ContextEngine(settings, counter, None)
    session = SessionState(chat_id="full")
    await engine.add_message(session, "user", "dato clave " * 600)
    await engine.pin(session, 1)
    await engine.build(session)
    assert engine.pressure(session) >= engine.cfg.hard_limit
    result = await engine.after_turn(session)
    assert result is not None and not result.compacted
    assert "nada más que compactar" in automatic(await engine.build(session))


async def test_tail_shrinks_progressively(make_settings, counter: TokenCounter) -> None:
    """Big recent items: keeping the last 10 is not enough, so the tail goes 10 → 5 → …
    and each pass still leaves its own tail untouched."""
    settings = make_settings("[llm]\ncontext_window = 6000\n")
    engine = ContextEngine(settings, counter, None)
    session = SessionState(chat_id="tail")
    for n in range(30):
        await engine.add_message(session, "user", f"nota {n}: " + "breve " * 30)
    for n in range(10):
        await engine.add_message(session, "user", f"informe {n}:\n" + "dato largo " * 120)
    last = [i.id for i in session.items[-10:]]
    await engine.build(session)
    result = await engine.after_turn(session)
    assert result is not None and result.compacted
    assert result.pressure_after < settings.context.hard_limit < result.pressure_before
    tails = [r["keep_last"] for r in await engine.runtime(session).tape.records()
             if r.get("event") == "compact"]
    assert tails[:2] == [10, 5] and tails == sorted(tails, reverse=True)
    kept = tails[-1]
    assert [i.id for i in session.items[-kept:]] == last[-kept:]
    assert validate_messages(await engine.build(session)) == []


def test_the_persons_newest_message_is_never_in_the_middle() -> None:
    """A long tool turn pushes the person's message out of the kept tail; it still stays
    (the request is shaped around it), while older messages of the person may go."""
    items = [ContextItem(id=1, role="user", content="hola"),
             ContextItem(id=2, role="assistant", content="hola"),
             ContextItem(id=3, role="user", content="revisa los registros")]
    for n in range(4, 16, 2):
        call = {"id": f"c{n}", "type": "function", "function": {"name": "bash",
                                                                 "arguments": "{}"}}
        items.append(ContextItem(id=n, role="assistant", content="", tool_calls=[call]))
        items.append(ContextItem(id=n + 1, role="tool", content="x", tool_call_id=f"c{n}"))
    middle = [items[k].id for k in plan_middle(items, 1, 4)]
    assert 3 not in middle and 2 in middle and {4, 5, 6, 7} <= set(middle)
    assert 1 not in middle   # the kept head

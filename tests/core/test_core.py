"""Assistant: routing, busy queueing with "⏳", /stop, /reset, command registry, errors."""

from __future__ import annotations

import asyncio

import pytest

from rumi import messages as msg
from rumi.agent.loop import AgentLoop
from rumi.base.chats import Speaker
from rumi.base.commands import CommandRequest
from rumi.base.replies import Attachment, Reply
from rumi.base.tools import Tool, ToolArgs, ToolContext, ToolRegistry
from rumi.core.assistant import Assistant
from rumi.llm.client import LLMClient
from rumi.sessions.events import SessionEvent
from rumi.sessions.manager import SessionManager
from tests.fakes.context import SimpleContext


class WaitArgs(ToolArgs):
    pass


@pytest.fixture
async def rig(make_settings, fake_groq, data_dir):
    settings = make_settings(
        f'[llm]\napi_key = "k"\nbase_url = "{fake_groq.base_url}"\nretry_base_delay = 0\n'
        "max_retries = 0\n"
    )
    llm = LLMClient(settings.llm)
    context = SimpleContext()
    started = asyncio.Event()
    gate = asyncio.Event()

    async def wait_tool(args: WaitArgs, ctx: ToolContext) -> str:
        started.set()
        await gate.wait()
        return "done waiting"

    registry = ToolRegistry()
    registry.register(Tool("wait", "wait for the gate", WaitArgs, wait_tool))
    sessions = SessionManager(data_dir, settings.sessions)
    assistant = Assistant(sessions, context, AgentLoop(llm, context, registry, settings.agent))
    assistant.started, assistant.gate = started, gate  # type: ignore[attr-defined]
    yield assistant
    await llm.close()


async def test_plain_message_round_trip(rig: Assistant, fake_groq, data_dir) -> None:
    fake_groq.enqueue_text("Hola, ¿qué tal?")
    reply = await rig.handle("10", 1, "hola", channel_message_id=5)
    assert reply.text == "Hola, ¿qué tal?" and not reply.is_error
    assert not rig.sessions.is_busy("10")
    assert (data_dir / "chats" / "10" / "session.json").exists()
    assert "10" in rig.context.opened  # type: ignore[attr-defined]
    # recall was handed the message before the turn (its query embeds meanwhile)
    assert rig.context.prefetched == [("10", "hola")]  # type: ignore[attr-defined]


async def test_busy_chat_gets_hourglass_and_is_answered_after(rig: Assistant, fake_groq) -> None:
    fake_groq.enqueue_tool_call("wait", {})
    fake_groq.enqueue_text("primera")
    fake_groq.enqueue_text("segunda")
    notes: list[str] = []

    async def notify(text: str) -> None:
        notes.append(text)

    first = asyncio.create_task(rig.handle("10", 1, "uno", notify=notify))
    await rig.started.wait()  # type: ignore[attr-defined]
    second = asyncio.create_task(rig.handle("10", 1, "dos", notify=notify))
    while not notes:
        await asyncio.sleep(0.01)
    assert notes == [msg.BUSY]
    rig.gate.set()  # type: ignore[attr-defined]
    assert (await first).text == "primera"
    assert (await second).text == "segunda"
    users = [m["content"] for m in fake_groq.requests[-1]["messages"] if m["role"] == "user"]
    assert users == ["uno", "dos"]  # nothing lost, in order


async def test_stop_cancels_and_releases_once(rig: Assistant, fake_groq) -> None:
    fake_groq.enqueue_tool_call("wait", {})
    task = asyncio.create_task(rig.handle("10", 1, "larga"))
    await rig.started.wait()  # type: ignore[attr-defined]
    stop = await rig.handle("10", 1, "/stop")
    assert stop.text == ""   # the stopped turn's reply is the one answer (issue 33)
    reply = await task
    assert reply.text == msg.STOPPED_REPLY
    assert reply.stopped and not reply.is_error   # channels show "stopped", not "done"
    assert rig.context.events == [("10", "stopped", msg.STOPPED_REPLY)]  # on the tape too
    assert not rig.sessions.is_busy("10")
    assert rig.sessions._chats["10"].releases == 1
    assert (await rig.handle("10", 1, "/stop")).text == msg.NOTHING_TO_STOP
    fake_groq.enqueue_text("sigo aquí")
    assert (await rig.handle("10", 1, "¿sigues?")).text == "sigo aquí"


async def test_reset_ends_session_and_fires_events(rig: Assistant, fake_groq) -> None:
    seen: list[str] = []

    async def record(event: SessionEvent) -> None:
        seen.append(f"{event.kind}:{event.reason}")

    for kind in ("created", "reset", "ended"):
        rig.sessions.events.subscribe(kind, record)
    fake_groq.enqueue_text("a")
    await rig.handle("10", 1, "hola")
    reply = await rig.handle("10", 1, "/reset")
    assert reply.text == msg.RESET_DONE
    assert seen == ["created:None", "reset:reset", "ended:reset"]
    fake_groq.enqueue_text("b")
    await rig.handle("10", 1, "otra vez")
    assert seen[-1] == "created:None"
    users = [m["content"] for m in fake_groq.requests[-1]["messages"] if m["role"] == "user"]
    assert users == ["otra vez"]


async def test_message_event_reports_tools_and_tokens(rig: Assistant, fake_groq) -> None:
    """`message` is the lifecycle event nothing in Rumi subscribes to yet: pin what it carries."""
    seen: list[SessionEvent] = []

    async def record(event: SessionEvent) -> None:
        seen.append(event)

    rig.sessions.events.subscribe("message", record)
    rig.gate.set()  # type: ignore[attr-defined]
    fake_groq.enqueue_tool_call("wait", {}, prompt_tokens=30)
    fake_groq.enqueue_text("listo", prompt_tokens=50)
    assert (await rig.handle("10", 1, "espera un poco")).text == "listo"
    [event] = seen
    assert event.chat_id == "10" and event.session is not None
    assert event.data["tools"] == ["wait"] and event.data["stopped_by"] is None
    assert event.data["tokens"] > 30 + 50  # both calls' prompts plus their completions
    await rig.handle("10", 1, "/help")
    assert len(seen) == 1  # commands are not messages


async def test_clear_fires_cleared_with_removed_items(rig: Assistant, fake_groq) -> None:
    removed: list[int] = []

    async def on_clear(event: SessionEvent) -> None:
        removed.append(len(event.data["removed"]))

    rig.sessions.events.subscribe("cleared", on_clear)
    fake_groq.enqueue_text("a")
    await rig.handle("10", 1, "hola")
    reply = await rig.handle("10", 1, "/clear")
    assert removed == [2] and "2" in reply.text


async def test_command_registry(rig: Assistant) -> None:
    coming = await rig.handle("10", 1, "/remember que me gusta el té")
    assert coming.text == msg.FEATURE_COMING.format(name="remember")
    unknown = await rig.handle("10", 1, "/bailar")
    assert "/help" in unknown.text
    got: list[CommandRequest] = []

    async def remember(request: CommandRequest) -> str:
        got.append(request)
        return f"Guardado: {request.args}"

    rig.register_command("remember", remember)
    reply = await rig.handle("10", 1, "/remember@RumiBot  que me gusta el té ")
    assert reply.text == "Guardado: que me gusta el té"
    assert got[0].session is not None and got[0].session.chat_id == "10"
    assert not rig.sessions.is_busy("10")

    async def importer(request: CommandRequest) -> Reply:
        assert request.attachment is not None
        return Reply(f"{request.attachment.filename}:{len(request.attachment.data)}")

    rig.register_command("import", importer)
    reply = await rig.handle("10", 1, "/import", attachment=Attachment("m.jsonl", b"abc"))
    assert reply.text == "m.jsonl:3"
    with pytest.raises(ValueError):
        rig.register_command("stop", remember)


async def test_help_and_status(rig: Assistant) -> None:
    help_text = (await rig.handle("10", 1, "/help")).text
    for name in ("start", "status", "stop", "remember", "forget", "clear", "reset", "export"):
        assert f"/{name}" in help_text

    async def provider(chat_id: str, session) -> str:
        return f"sandbox de {chat_id}: parado"

    async def internals(chat_id: str, session) -> str:
        return "internals of the memory"

    rig.add_status_provider(provider)
    rig.add_status_provider(internals, detail=True)
    status = (await rig.handle("10", 1, "/status")).text
    assert msg.STATUS_IDLE in status and "sandbox de 10" in status
    assert "items: 0" not in status and "internals" not in status   # the context: in detail
    assert msg.STATUS_DETAIL_HINT in status
    for word in ("detalle", "details", "DETALLES"):
        detail = (await rig.handle("10", 1, f"/status {word}")).text
        assert "items: 0" in detail and "internals of the memory" in detail
        assert "sandbox de 10" in detail and msg.STATUS_DETAIL_HINT not in detail


async def test_internal_failure_is_a_short_message(rig: Assistant, fake_groq,
                                                   caplog: pytest.LogCaptureFixture) -> None:
    async def explode(session, **kwargs):
        raise RuntimeError("secret internals")

    rig.context.build = explode  # type: ignore[method-assign]
    reply = await rig.handle("10", 1, "hola")
    assert reply.is_error and reply.text == msg.INTERNAL_ERROR
    assert "secret internals" not in reply.text and "secret internals" in caplog.text
    assert not rig.sessions.is_busy("10")


async def test_model_outage_is_friendly(rig: Assistant, fake_groq) -> None:
    fake_groq.enqueue_error(503, "overloaded")
    reply = await rig.handle("10", 1, "hola")
    assert reply.text == msg.MODEL_UNAVAILABLE and reply.is_error


async def test_log_line_has_no_message_body(rig: Assistant, fake_groq,
                                            caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level("INFO", logger="rumi.core")
    fake_groq.enqueue_text("respuesta secreta")
    await rig.handle("10", 1, "mi contraseña es hunter2")
    lines = [r.getMessage() for r in caplog.records if r.name == "rumi.core"
             and r.levelname == "INFO"]
    assert len(lines) == 1 and "chat=10" in lines[0] and "tokens=" in lines[0]
    assert all("hunter2" not in r.getMessage() for r in caplog.records if r.levelno > 10)


async def test_pin_and_unpin_by_id_and_by_reply(rig: Assistant, fake_groq) -> None:
    fake_groq.enqueue_text("vale")
    await rig.handle("10", 1, "recuerda este dato", channel_message_id=55)
    session = await rig.sessions.get("10")
    first = session.items[0]
    assert (await rig.handle("10", 1, "/pin")).text == msg.PIN_USAGE.format(name="pin")
    assert (await rig.handle("10", 1, "/pin 999")).text == msg.PIN_NOT_FOUND.format(id=999)
    reply = await rig.handle("10", 1, "/pin", reply_to_message_id=55)
    assert reply.text == msg.PINNED.format(id=first.id) and first.pinned
    reply = await rig.handle("10", 1, f"/unpin #{first.id}")
    assert reply.text == msg.UNPINNED.format(id=first.id) and not first.pinned


async def test_outbox_delivers_notices(rig: Assistant) -> None:
    assert await rig.tell("10", "hola") is False
    got: list[tuple[str, str]] = []

    async def outbox(chat_id: str, text: str) -> None:
        got.append((chat_id, text))

    rig.set_outbox(outbox)
    assert await rig.tell("10", "aviso") is True and got == [("10", "aviso")]


async def test_notices_before_a_channel_or_for_another_channel_wait_their_turn(
        rig: Assistant) -> None:
    """Found at start-up (no channel yet) or meant for a chat the running channel does not
    serve: queued, and delivered by the channel that does, buttons included."""
    assert await rig.tell("20", "reconstruida", [[("Sí", "/memorymd si")]]) is False
    terminal: list[str] = []

    async def only_terminal(chat_id: str, text: str, buttons=None) -> bool:  # noqa: ANN001
        if chat_id != "terminal":
            return False
        terminal.append(text)
        return True

    rig.set_outbox(only_terminal)
    assert await rig.deliver_queued() == 0 and terminal == []
    got: list[tuple[str, str, object]] = []

    async def telegram(chat_id: str, text: str, buttons=None) -> None:  # noqa: ANN001
        got.append((chat_id, text, buttons))

    rig.set_outbox(telegram)
    assert await rig.deliver_queued() == 1
    assert got == [("20", "reconstruida", [[("Sí", "/memorymd si")]])]
    assert await rig.deliver_queued() == 0      # delivered once


async def test_empty_text_never_reaches_the_model(rig: Assistant, fake_groq) -> None:
    reply = await rig.handle("10", 1, "   ")
    assert reply.text == "" and fake_groq.requests == []


async def test_group_admin_commands_are_refused_to_members_before_any_lock(
        rig: Assistant, fake_groq) -> None:
    """In a group, a `group_admin` command from a member is refused at once, without the
    chat lock (it does not wait behind a running turn) and without running the handler;
    admins and private chats run it. A callable decides per request."""
    ran: list[str] = []
    asked: list[tuple[str, int | str]] = []

    async def handler(request: CommandRequest) -> Reply:
        ran.append(f"{request.name} {request.args}".strip())
        return Reply("hecho")

    async def admins(chat_id: str, user_id: int | str) -> bool:
        asked.append((chat_id, user_id))
        return user_id == 7

    rig.set_admin_check(admins)
    rig.register_command("wipe", handler, group_admin=True)
    rig.register_command("zone", handler, needs_session=False,
                         group_admin=lambda request: bool(request.args.strip()))
    luis, boss = Speaker("5", "Luis"), Speaker("7", "Jefa")

    fake_groq.enqueue_tool_call("wait", {})
    fake_groq.enqueue_text("listo")
    turn = asyncio.create_task(rig.handle("-9", 5, "larga", speaker=luis))
    await rig.started.wait()  # type: ignore[attr-defined]
    refused = await rig.handle("-9", 5, "/wipe", speaker=luis)   # the turn still holds the lock
    assert refused.text == msg.GROUP_ADMIN_ONLY.format(name="wipe") and ran == []
    assert (await rig.handle("-9", 5, "/zone Europe/Madrid", speaker=luis)).text == \
        msg.GROUP_ADMIN_ONLY.format(name="zone")
    assert (await rig.handle("-9", 5, "/zone", speaker=luis)).text == "hecho"
    assert (await rig.handle("-9", 7, "/zone Europe/Madrid", speaker=boss)).text == "hecho"
    rig.gate.set()  # type: ignore[attr-defined]
    assert (await turn).text == "listo"
    assert (await rig.handle("-9", 7, "/wipe", speaker=boss)).text == "hecho"
    assert ran == ["zone", "zone Europe/Madrid", "wipe"]
    assert asked == [("-9", 5), ("-9", 5), ("-9", 7), ("-9", 7)]

    assert (await rig.handle("10", 5, "/wipe")).text == "hecho"   # a private chat
    assert len(asked) == 4
    assert msg.GROUP_ADMIN_REFUSALS["reset"] == (await rig.handle(
        "-9", 5, "/reset", speaker=luis)).text

"""A feature written outside rumi/ plugs in through the same interface as the built-in ones
(issue 25, "one way to wire a feature"): its command, tool, /status line, job, session
subscriber, lifecycle hooks and a capability all work through `build_app`, with the real
Assistant, agent loop and `groq` client talking to the fake Groq server."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from rumi.app import build_app
from rumi.base.commands import CommandRequest
from rumi.base.feature import Capability, FeatureHost
from rumi.base.replies import Reply
from rumi.base.tools import Tool, ToolArgs, ToolContext

CHAT = "5151"
# a capability the tally offers and the announcer uses, neither importing the other
TALLY_TOTAL: Capability[Any] = Capability("tests.tally_total")


class AddArgs(ToolArgs):
    amount: int = Field(description="how much to add")


class TallyFeature:
    """A counter the model raises with a tool, the person reads with /tally and /status, and
    a job doubles."""

    name = "tally"

    def __init__(self) -> None:
        self.total = 0
        self.events: list[str] = []

    async def setup(self, host: FeatureHost) -> None:
        async def add(args: AddArgs, ctx: ToolContext) -> str:
            self.total += args.amount
            return f"total {self.total}"

        async def show(request: CommandRequest) -> Reply:
            return Reply(f"tally {self.total}", markdown=False)

        async def status(chat_id: str, session: object) -> str:
            return f"Tally: {self.total}"

        async def double() -> None:
            self.total *= 2

        async def ended(event: Any) -> None:
            self.events.append(f"ended {event.chat_id}")

        async def total() -> int:
            return self.total

        host.add_tool(Tool("tally_add", "Add to the tally.", AddArgs, add))
        host.register_command("tally", show, needs_session=False,
                              description=lambda: "show the tally")
        host.add_status_provider(status)
        host.add_job("tally.double", double, minutes=60)
        host.on_session("ended", ended)
        host.on_start(self._hook("start"))
        host.on_stop(self._hook("stop"))
        host.on_close(self._hook("close"))
        host.offer(TALLY_TOTAL, total)
        host.expose("tally", self)

    def _hook(self, name: str) -> Any:
        async def hook() -> None:
            self.events.append(name)

        return hook


class AnnouncerFeature:
    """Reads what another feature offers, by capability only."""

    name = "announcer"

    async def setup(self, host: FeatureHost) -> None:
        async def announce(request: CommandRequest) -> Reply:
            total = host.find(TALLY_TOTAL)
            if total is None:
                return Reply("no tally here", markdown=False)
            return Reply(f"the tally says {await total()}", markdown=False)

        host.register_command("announce", announce, needs_session=False)


def settings_for(make_settings, fake_groq):
    return make_settings(f'[llm]\napi_key = "k"\nbase_url = "{fake_groq.base_url}"\n'
                         "[sandbox]\nenabled = false\n[memory]\nembeddings_enabled = false\n")


async def test_a_third_party_feature_works_end_to_end(make_settings, fake_groq) -> None:
    tally = TallyFeature()
    app = await build_app(settings_for(make_settings, fake_groq),
                          extra_features=[tally, AnnouncerFeature()])
    await app.start()
    try:
        assert tally.events == ["start"]
        assert "tally.double" in app.scheduler.jobs()
        assert app.parts["tally"] is tally

        fake_groq.enqueue_tool_call("tally_add", {"amount": 2})
        fake_groq.enqueue_text("Anotado.")
        reply = await app.assistant.handle(CHAT, 1, "suma dos a la cuenta")
        assert reply.text == "Anotado."
        offered = [t["function"]["name"] for t in fake_groq.requests[0]["tools"]]
        assert "tally_add" in offered
        results = [m for m in fake_groq.requests[1]["messages"] if m["role"] == "tool"]
        assert "total 2" in results[-1]["content"]

        assert (await app.assistant.handle(CHAT, 1, "/tally")).text == "tally 2"
        assert "Tally: 2" in (await app.assistant.handle(CHAT, 1, "/status")).text
        assert "/tally" in (await app.assistant.handle(CHAT, 1, "/help")).text

        assert await app.scheduler.run_now("tally.double")
        assert (await app.assistant.handle(CHAT, 1, "/announce")).text == "the tally says 4"

        await app.assistant.handle(CHAT, 1, "/reset")
        assert f"ended {CHAT}" in tally.events
    finally:
        await app.stop()
    assert tally.events[-2:] == ["stop", "close"]


async def test_features_replace_the_built_in_list(make_settings, fake_groq) -> None:
    """`features=[]` builds a bare assistant: no memory command, no reminder tool; what the
    announcer looks for is simply absent."""
    app = await build_app(settings_for(make_settings, fake_groq), features=[],
                          extra_features=[AnnouncerFeature()])
    try:
        assert "schedule" not in app.tools.names()
        assert "memory_store" not in app.parts
        assert (await app.assistant.handle(CHAT, 1, "/announce")).text == "no tally here"
    finally:
        await app.stop()

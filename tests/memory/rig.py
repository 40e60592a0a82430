"""Lifecycle fixtures: the real store, context engine, session manager and Assistant, wired
by `install_memory_lifecycle`, with the fake Groq server and a controllable clock."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from rumi.agent.loop import AgentLoop
from rumi.base.tools import ToolRegistry
from rumi.config import MemorySettings, Settings
from rumi.context import ContextEngine, TokenCounter
from rumi.core.assistant import Assistant
from rumi.llm.client import LLMClient
from rumi.memory.install import MemoryRuntime, install_memory_lifecycle
from rumi.memory.store.api import MemoryStoreAPI
from rumi.scheduler import Scheduler
from rumi.sessions.manager import SessionManager
from tests.memory.conftest import store_fixture


class Clock:
    """A clock tests move by hand (jobs read it instead of the wall clock)."""

    def __init__(self, start: datetime) -> None:
        self.now = start

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **delta: float) -> None:
        self.now += timedelta(**delta)


def extraction_json(memories: list[dict[str, Any]] | None = None,
                    events: list[str] | None = None) -> str:
    return json.dumps({"memories": memories or [], "events": events or []})


@pytest.fixture
def clock() -> Clock:
    return Clock(datetime(2026, 6, 1, 10, 0, tzinfo=UTC))


@pytest.fixture
def settings(make_settings, fake_groq) -> Settings:
    return make_settings(
        f'timezone = "Europe/Madrid"\n[llm]\napi_key = "k"\nbase_url = "{fake_groq.base_url}"\n'
        "max_retries = 0\n[memory]\nembeddings_enabled = false\n")


@pytest.fixture
async def llm(settings: Settings) -> AsyncIterator[LLMClient]:
    client = LLMClient(settings.llm)
    yield client
    await client.close()


# The lifecycle's store, keyword only, on SQLite and on PostgreSQL.
store = store_fixture(MemorySettings(embeddings_enabled=False, db_busy_timeout_ms=300),
                      model=False)


@dataclass
class Rig:
    settings: Settings
    llm: LLMClient
    store: MemoryStoreAPI
    context: ContextEngine
    sessions: SessionManager
    assistant: Assistant
    tools: ToolRegistry
    scheduler: Scheduler
    memory: MemoryRuntime
    clock: Clock
    notices: list[tuple[str, str]]
    stopped_sandboxes: list[str]

    async def say(self, chat_id: str, text: str, **kwargs: Any):
        return await self.assistant.handle(chat_id, 1, text, **kwargs)


@pytest.fixture
async def rig(settings, llm, store, clock) -> AsyncIterator[Rig]:
    context = ContextEngine(settings, TokenCounter(), llm)
    sessions = SessionManager(settings.data_dir, settings.sessions)
    tools = ToolRegistry()
    for tool in context.tools():
        tools.register(tool)
    agent = AgentLoop(llm, context, tools, settings.agent)
    assistant = Assistant(sessions, context, agent)
    scheduler = Scheduler(settings.timezone)
    notices: list[tuple[str, str]] = []
    stopped: list[str] = []

    async def notify(chat_id: str, text: str) -> None:
        notices.append((chat_id, text))

    async def stop_sandbox(chat_id: str) -> None:
        stopped.append(chat_id)

    memory = await install_memory_lifecycle(
        settings, llm=llm, store=store, context=context, sessions=sessions,
        assistant=assistant, scheduler=scheduler, tools=tools, stop_sandbox=stop_sandbox,
        notify=notify, clock=clock)
    yield Rig(settings, llm, store, context, sessions, assistant, tools, scheduler, memory,
              clock, notices, stopped)
    if memory.sync is not None:
        await memory.sync.stop()
    await scheduler.shutdown()

"""Long-term memory as a feature: the store, the recall the context engine reads each turn,
the /status lines, and the lifecycle (`install_memory_lifecycle`: commands, tools, jobs,
session-end learning, the MEMORY.md watcher).

It uses what other features offer without importing them: `STOP_SANDBOX` (/reset removes the
chat's container; looked up once, the sandbox is set up first) and `CHAT_TIMEZONE` (recall and
/search resolve "ayer" in the chat's zone; looked up on each use, reminders come later)."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from zoneinfo import ZoneInfo

from rumi.base.checks import DoctorCheck
from rumi.base.feature import CHAT_TIMEZONE, STOP_SANDBOX, FeatureHost
from rumi.base.tools import Tool
from rumi.fileio import ensure_private_dir
from rumi.memory import checks
from rumi.memory.factory import open_memory_store
from rumi.memory.install import install_memory_lifecycle
from rumi.memory.recall.retrieval import MemoryRecall
from rumi.memory.status import memory_count_provider, memory_status_provider

log = logging.getLogger(__name__)


@dataclass
class _Tools:
    """The registry shape `install_memory_lifecycle` registers its tools on."""

    host: FeatureHost

    def register(self, tool: Tool) -> None:
        self.host.add_tool(tool)


class MemoryFeature:
    name = "memory"

    def doctor_checks(self) -> list[DoctorCheck]:
        """SQLite can hold memory; rumi.db is healthy and matches each MEMORY.md."""
        return checks.doctor_checks()

    async def setup(self, host: FeatureHost) -> None:
        settings = host.settings
        ensure_private_dir(settings.data_dir)
        # the factory honours memory.vector_save_interval_seconds and builds the embedder
        # off-loop
        store = await open_memory_store(settings)
        host.on_close(store.close)
        host.expose("memory_store", store)

        async def chat_timezone(chat_id: str) -> ZoneInfo:
            """The chat's zone (/timezone, kept by reminders) or the configured one."""
            zone_of = host.find(CHAT_TIMEZONE)
            if zone_of is not None:
                try:
                    return await zone_of(chat_id)
                except Exception:  # a recall must not fail over the zone: use the configured
                    log.warning("timezone of chat %s unavailable", chat_id, exc_info=True)
            return ZoneInfo(settings.timezone)

        recall = MemoryRecall(store, store.settings, count_tokens=host.count_tokens,
                              timezone=chat_timezone)
        host.context.recall = recall
        host.on_close(recall.close)   # its Apertium pipelines, when a question started them
        host.add_status_provider(memory_count_provider(store))
        host.add_status_provider(memory_status_provider(store, recall), detail=True)
        runtime = await install_memory_lifecycle(
            settings, llm=host.llm, store=store, context=host.context, sessions=host.sessions,
            assistant=host, scheduler=host.scheduler, tools=_Tools(host),
            stop_sandbox=host.find(STOP_SANDBOX), notify=host.tell, timezone=chat_timezone,
        )
        host.expose("memory", runtime)
        host.on_start(runtime.start)
        host.on_stop(runtime.stop)

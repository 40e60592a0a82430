"""Reminders as a feature: the store and service, the `schedule` tool, the /reminders, /cancel
and /timezone commands, start/stop, and the chat's time zone offered to others
(`CHAT_TIMEZONE`: memory resolves "ayer" or "last week" in it).

A scheduled task runs a whole turn (`host.run_turn`) and every reminder goes out through
`host.tell`, so this package never imports the core."""

from __future__ import annotations

import logging
from collections.abc import Callable

from rumi.base.feature import CHAT_TIMEZONE, FeatureHost, switched_off
from rumi.config import Settings
from rumi.reminders.commands import ReminderCommands, schedule_tool
from rumi.reminders.service import ReminderService
from rumi.reminders.store import ReminderRows, ReminderStore

log = logging.getLogger(__name__)

SCHEDULER_USER = "rumi-scheduler"


class ReminderFeature:
    """`rows(settings)`: where the reminders live when not in `rumi.db` (the composition root
    passes the store wing's `reminder_rows`: PostgreSQL's `rumi` schema), else None."""

    name = "reminders"

    def __init__(self, rows: Callable[[Settings], ReminderRows | None] | None = None) -> None:
        self.rows = rows

    async def setup(self, host: FeatureHost) -> None:
        settings = host.settings
        if switched_off(settings.reminders.enabled, "reminders", "reminders.enabled"):
            return

        async def run_task(chat_id: str, prompt: str) -> str:
            return await host.run_turn(chat_id, SCHEDULER_USER, prompt)

        async def send(chat_id: str, text: str) -> bool:
            # The service retries an undelivered reminder itself: the core must not queue it.
            return await host.tell(chat_id, text, keep=False)

        rows = self.rows(settings) if self.rows is not None else None
        store = ReminderStore(rows if rows is not None else settings.data_dir / "rumi.db",
                              settings.memory.db_busy_timeout_ms)
        service = ReminderService(store, host.scheduler, settings.reminders, settings.timezone,
                                  send=send, run_task=run_task,
                                  can_send=lambda: host.can_tell,
                                  language_of=host.chat_language)
        host.add_tool(schedule_tool(service))
        ReminderCommands(service).register(host)
        host.offer(CHAT_TIMEZONE, service.timezone)
        host.expose("reminders", service)
        host.on_start(service.start)
        host.on_stop(service.stop)
        host.on_close(store.close)

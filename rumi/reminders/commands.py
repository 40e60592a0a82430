"""What reminders add to the conversation: the `schedule` tool and the /reminders, /cancel
and /timezone commands (`rumi/reminders/feature.py` registers them)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from zoneinfo import ZoneInfo

from rumi import messages as msg
from rumi.base.commands import CommandRequest, GroupAdmin
from rumi.base.feature import FeatureHost
from rumi.base.replies import Reply
from rumi.base.tools import Tool, ToolArgs, ToolContext, ToolError, localized_tool
from rumi.reminders.service import ReminderError, ReminderService, local_text, utc_now
from rumi.reminders.store import Reminder
from rumi.reminders.tool_text import TOOL_TEXTS, say


class ScheduleArgs(ToolArgs):
    when: str   # the words for the model, in each language, are in tool_text.TOOL_TEXTS
    text: str
    task: bool = False


def schedule_tool(service: ReminderService) -> Tool:
    async def handler(args: ScheduleArgs, ctx: ToolContext) -> str:
        try:
            row = await service.create(ctx.chat_id, args.when, args.text, task=args.task,
                                       set_by=_asker(ctx))
        except ReminderError as exc:
            raise ToolError(str(exc)) from exc
        tz = await service.timezone(ctx.chat_id)
        repeat = say("repeat", rule=row.recurrence) if row.recurrence else ""
        return say("scheduled", id=row.id, kind=say("task" if row.is_task else "reminder"),
                   when=row.due_at.astimezone(tz).isoformat(timespec="minutes"), tz=tz.key,
                   repeat=repeat,
                   now=service.clock().astimezone(tz).isoformat(timespec="minutes"))

    return localized_tool("schedule", TOOL_TEXTS, ScheduleArgs, handler)


class ReminderCommands:
    """/reminders, /cancel <id>, /timezone [zone]: no chat lock needed (their own table)."""

    def __init__(self, service: ReminderService,
                 clock: Callable[[], datetime] = utc_now) -> None:
        self.service = service
        self.clock = clock

    def register(self, host: FeatureHost) -> None:
        # In a group, changing the zone decides for everyone: admins only. Listing and
        # showing the zone stay open; /cancel checks who set the reminder itself.
        admin: dict[str, GroupAdmin] = {"reminders": False, "cancel": False,
                                        "timezone": lambda request: bool(request.args.strip())}
        for name, handler in (("reminders", self.list), ("cancel", self.cancel),
                              ("timezone", self.timezone)):
            host.register_command(name, handler, needs_session=False,
                                  description=_description(name), group_admin=admin[name])

    async def list(self, request: CommandRequest) -> Reply:
        rows = await self.service.list(request.chat_id)
        if not rows:
            return Reply(msg.REMINDERS_EMPTY, markdown=False)
        tz = await self.service.timezone(request.chat_id)
        lines = [msg.REMINDERS_HEADER.format(tz=tz.key)]
        lines += [_item(row, tz) for row in rows]
        lines.append(msg.REMINDERS_FOOTER)
        return Reply("\n".join(lines), markdown=False)

    async def cancel(self, request: CommandRequest) -> Reply:
        raw = request.args.strip().lstrip("#")
        if not raw.isdigit():
            return Reply(msg.CANCEL_USAGE, markdown=False)
        if request.in_group and not await self._may_cancel(request, int(raw)):
            return Reply(msg.GROUP_ADMIN_REFUSALS["cancel"], markdown=False)
        row = await self.service.cancel(request.chat_id, int(raw))
        if row is None:
            return Reply(msg.CANCEL_NOT_FOUND.format(id=raw), markdown=False)
        return Reply(msg.CANCEL_DONE.format(id=row.id, text=row.text), markdown=False)

    async def _may_cancel(self, request: CommandRequest, reminder_id: int) -> bool:
        """In a group: the member who set the reminder, or an admin (a reminder set in a
        private chat's time or before owners were kept has none: admins only). A missing id
        passes, so the answer is the ordinary "not found"."""
        row = await self.service.get(request.chat_id, reminder_id)
        if row is None or (request.speaker is not None
                           and row.set_by == request.speaker.user_id):
            return True
        return await request.is_admin()

    async def timezone(self, request: CommandRequest) -> Reply:
        name = request.args.strip()
        if not name:
            tz = await self.service.timezone(request.chat_id)
            return Reply(msg.TIMEZONE_SHOW.format(tz=tz.key, now=local_text(self.clock(), tz)),
                         markdown=False)
        try:
            tz = await self.service.set_timezone(request.chat_id, name)
        except ValueError:
            return Reply(msg.TIMEZONE_UNKNOWN.format(name=name[:64]), markdown=False)
        return Reply(msg.TIMEZONE_SET.format(tz=tz.key, now=local_text(self.clock(), tz)),
                     markdown=False)


def _asker(ctx: ToolContext) -> str | None:
    """The group member whose message the agent is answering (None in a private chat)."""
    for item in reversed(getattr(ctx.session, "items", None) or []):
        if item.role == "user":
            return item.speaker_id
    return None


def _description(name: str) -> Callable[[], str]:
    return lambda: msg.REMINDER_COMMANDS[name]


def _item(row: Reminder, tz: ZoneInfo) -> str:
    repeat = msg.REMINDERS_REPEAT.format(rule=row.recurrence) if row.recurrence else ""
    kind = msg.REMINDERS_KIND_TASK if row.is_task else ""
    return msg.REMINDERS_ITEM.format(id=row.id, when=local_text(row.due_at, tz), kind=kind,
                                     text=row.text, repeat=repeat)

"""What reminders add to the conversation: the `schedule` tool and the /reminders, /cancel
and /timezone commands (`rumi/reminders/feature.py` registers them)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from zoneinfo import ZoneInfo

from pydantic import Field

from rumi import messages as msg
from rumi.base.commands import CommandRequest, GroupAdmin
from rumi.base.feature import FeatureHost
from rumi.base.replies import Reply
from rumi.base.tools import Tool, ToolArgs, ToolContext, ToolError
from rumi.reminders.service import ReminderError, ReminderService, local_text, utc_now
from rumi.reminders.store import Reminder

SCHEDULE_DESCRIPTION = (
    "Schedule a reminder (a message sent to this chat at `when`) or, with task=true, a task "
    "(at `when` you get `text` as a request; your answer is sent). Returns the id and the "
    "chat's current time; the person sees them with /reminders, cancels with /cancel <id>."
)


class ScheduleArgs(ToolArgs):
    when: str = Field(description="in the chat's time zone: ISO date-time (2026-05-21T09:30), "
                                  "delay (+10m, +2h, +1d) or recurrence (daily 08:00, "
                                  "weekdays 08:00, weekly mon 08:00, cron M H DOM MON DOW)")
    text: str = Field(description="what to remind, or the task, in the person's words")
    task: bool = Field(default=False, description="a task instead of a message")


def schedule_tool(service: ReminderService) -> Tool:
    async def handler(args: ScheduleArgs, ctx: ToolContext) -> str:
        try:
            row = await service.create(ctx.chat_id, args.when, args.text, task=args.task,
                                       set_by=_asker(ctx))
        except ReminderError as exc:
            raise ToolError(str(exc)) from exc
        tz = await service.timezone(ctx.chat_id)
        repeat = f", repeating ({row.recurrence} as cron)" if row.recurrence else ""
        return (f"Scheduled #{row.id} ({'task' if row.is_task else 'reminder'}) for "
                f"{row.due_at.astimezone(tz).isoformat(timespec='minutes')} {tz.key}{repeat}. "
                f"Now it is {service.clock().astimezone(tz).isoformat(timespec='minutes')}.")

    return Tool("schedule", SCHEDULE_DESCRIPTION, ScheduleArgs, handler)


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

"""The commands the core owns that need the session manager or the context engine:
`/reset`, `/clear`, `/pin`, `/unpin` (memory replaces `/clear` and `/reset` with its own)."""

from __future__ import annotations

from rumi import messages as msg
from rumi.base.commands import CommandRequest
from rumi.base.replies import Reply
from rumi.core.commands import CommandRegistry
from rumi.core.ports import ContextForCore
from rumi.sessions.events import SessionEvent
from rumi.sessions.manager import SessionManager


class BuiltinCommands:
    def __init__(self, sessions: SessionManager, context: ContextForCore) -> None:
        self.sessions = sessions
        self.context = context

    def register(self, commands: CommandRegistry) -> None:
        commands.register("reset", self.reset, needs_session=False, group_admin=True)
        commands.register("clear", self.clear, group_admin=True)
        commands.register("pin", self.pin)
        commands.register("unpin", self.unpin)

    async def reset(self, request: CommandRequest) -> Reply:
        """Stop whatever runs, end the session (fires `reset` and `ended`), start fresh."""
        self.sessions.stop(request.chat_id)
        session = await self.sessions.acquire(request.chat_id, wait=True)
        assert session is not None
        try:
            await self.sessions.end(request.chat_id, "reset")
        finally:
            await self.sessions.release(request.chat_id, save=False)
        return Reply(msg.RESET_DONE, markdown=False)

    async def clear(self, request: CommandRequest) -> Reply:
        """Empty the active conversation; subscribers of `cleared` get the removed items."""
        assert request.session is not None
        removed = await self.context.clear(request.session)
        await self.sessions.emit(SessionEvent(
            "cleared", request.chat_id, request.session, reason="clear",
            data={"removed": removed},
        ))
        count = msg.count_of(len(removed), "ITEMS")
        return Reply(msg.CLEAR_DONE.format(count=count), markdown=False)

    async def pin(self, request: CommandRequest) -> Reply:
        return await self._set_pin(request, True)

    async def unpin(self, request: CommandRequest) -> Reply:
        return await self._set_pin(request, False)

    async def _set_pin(self, request: CommandRequest, pinned: bool) -> Reply:
        """`/pin 12` (the [#12] id) or `/pin` as a reply to a message (yours or Rumi's)."""
        assert request.session is not None
        item_id: int | None = None
        raw = request.args.strip().lstrip("#[").rstrip("]")
        if raw.isdigit():
            item_id = int(raw)
        elif request.reply_to_message_id is not None:
            item = self.context.find_item_by_channel_message(request.session,
                                                             request.reply_to_message_id)
            item_id = item.id if item is not None else None
        if item_id is None:
            return Reply(msg.PIN_USAGE.format(name=request.name), markdown=False)
        action = self.context.pin if pinned else self.context.unpin
        if not await action(request.session, item_id):
            return Reply(msg.PIN_NOT_FOUND.format(id=item_id), markdown=False)
        text = msg.PINNED if pinned else msg.UNPINNED
        return Reply(text.format(id=item_id), markdown=False)

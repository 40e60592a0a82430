"""A slash command as every part that owns one sees it: the request it gets and the shape of its
handler, so features register commands without importing the core that routes them."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from rumi.base.chats import Speaker
from rumi.base.replies import Attachment, Reply

log = logging.getLogger(__name__)


@dataclass
class CommandRequest:
    """Everything a command handler gets. `session` (a `sessions.state.SessionState`, typed
    loosely because sessions sit above this ground layer) is locked for it when
    `needs_session`."""

    chat_id: str
    user_id: int | str
    name: str
    args: str
    session: Any = None
    attachment: Attachment | None = None
    channel_message_id: int | None = None
    reply_to_message_id: int | None = None
    speaker: Speaker | None = None   # who typed it, in a group chat (None: a private chat)
    admin_check: Callable[[], Awaitable[bool]] | None = None

    @property
    def in_group(self) -> bool:
        return self.speaker is not None

    async def is_admin(self) -> bool:
        """May this person act for the whole chat (forget others' memories, switch memory
        off)? In a private chat they own everything; in a group only the group's admins,
        as the channel says. Anything unknown (no channel answer) counts as no."""
        if self.speaker is None:
            return True
        if self.admin_check is None:
            return False
        try:
            return await self.admin_check()
        except Exception:
            log.exception("asking whether user %s administers chat %s failed",
                          self.user_id, self.chat_id)
            return False


CommandHandler = Callable[[CommandRequest], Awaitable[Reply | str]]
# A command's description: text, or a callable read each time in the active language
Description = str | Callable[[], str]
# Whether a command changes what a whole group shares: always, or depending on the request
# (`/timezone` only with a zone; without one it just shows it)
GroupAdmin = bool | Callable[[CommandRequest], bool]

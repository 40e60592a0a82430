"""`/status`: what a person asks (busy or idle, uptime, every part's lines); with `detalle`
the context internals and every part's diagnostics as well."""

from __future__ import annotations

import logging
import time

from rumi import messages as msg
from rumi.base.feature import StatusProvider
from rumi.base.replies import Reply
from rumi.core.ports import ContextForCore
from rumi.sessions.manager import SessionManager
from rumi.sessions.state import SessionState

log = logging.getLogger(__name__)

DETAIL_WORDS = frozenset({"detalle", "detalles", "details", "detail"})


class StatusReport:
    def __init__(self, sessions: SessionManager, context: ContextForCore) -> None:
        self.sessions = sessions
        self.context = context
        self.started_at = time.time()
        self._providers: list[StatusProvider] = []
        self._detail_providers: list[StatusProvider] = []

    def add(self, provider: StatusProvider, *, detail: bool = False) -> None:
        (self._detail_providers if detail else self._providers).append(provider)

    async def reply(self, chat_id: str, args: str) -> Reply:
        """The /status answer; `args` naming a detail word asks for the internals too."""
        detail = args.strip().lower() in DETAIL_WORDS
        session = await self.sessions.get(chat_id)
        await self.context.open(session)
        lines = [msg.STATUS_HEADER]
        busy = self.sessions.is_busy(chat_id)
        lines.append(msg.STATUS_BUSY if busy else msg.STATUS_IDLE)
        lines.append(msg.STATUS_UPTIME.format(
            uptime=msg.format_duration(time.time() - self.started_at)))
        lines += await _lines(chat_id, session, self._providers)
        if not detail:
            lines.append(msg.STATUS_DETAIL_HINT)
            return Reply("\n".join(lines), markdown=False)
        lines += ["", self.context.status_text(session)]
        lines += await _lines(chat_id, session, self._detail_providers)
        return Reply("\n".join(lines), markdown=False)


async def _lines(chat_id: str, session: SessionState,
                 providers: list[StatusProvider]) -> list[str]:
    """Each provider's line; one that fails is logged and left out, never the whole answer."""
    lines: list[str] = []
    for provider in providers:
        try:
            line = await provider(chat_id, session)
        except Exception:
            log.exception("status provider %s failed", provider)
            continue
        if line:
            lines.append(line)
    return lines

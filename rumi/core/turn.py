"""One turn under the chat lock: wait for the chat (the "⏳", FIFO, a full queue refused),
run the agent as a task `/stop` can cancel, and turn its result into a `Reply`."""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass, field
from typing import Any

from rumi import messages as msg
from rumi.agent.loop import AgentLoop
from rumi.agent.turn import TurnResult
from rumi.base.chats import Speaker
from rumi.base.replies import Reply
from rumi.core.ports import ContextForCore, Notify
from rumi.sessions.events import SessionEvent
from rumi.sessions.manager import QueueFull, SessionManager
from rumi.sessions.state import SessionState

MODEL_FAILURES = frozenset({"llm_unavailable", "context_full", "rate_limited", "auth_failed",
                            "model_gone", "tool_call_failed"})


@dataclass
class Outcome:
    """What one handled message was, for its INFO log line."""

    kind: str
    result: TurnResult | None = None
    extra: dict[str, Any] = field(default_factory=dict)


class ChatTurns:
    def __init__(self, sessions: SessionManager, context: ContextForCore,
                 agent: AgentLoop) -> None:
        self.sessions = sessions
        self.context = context
        self.agent = agent

    async def lock(self, chat_id: str, notify: Notify | None) -> SessionState | Reply:
        """The chat's session, held, with its context open; a `Reply` when the queue is full."""
        session = await self.sessions.acquire(chat_id)
        if session is None:
            if self.sessions.queued(chat_id) >= self.sessions.settings.max_queued_messages:
                return Reply(msg.BUSY_QUEUE_FULL, markdown=False)
            if notify is not None:
                await notify(msg.BUSY)
            try:
                session = await self.sessions.acquire(chat_id, wait=True)
            except QueueFull:
                return Reply(msg.BUSY_QUEUE_FULL, markdown=False)
        assert session is not None
        try:
            await self.context.open(session)
        except BaseException:
            await self.sessions.release(chat_id)
            raise
        return session

    async def run(self, chat_id: str, text: str, channel_message_id: int | None,
                  notify: Notify | None, outcome: Outcome,
                  speaker: Speaker | None = None) -> Reply:
        self.context.prepare_recall(chat_id, text)   # embeds the query while we set up
        locked = await self.lock(chat_id, notify)
        if isinstance(locked, Reply):
            return locked
        session = locked
        shown = TurnResult(text="")
        task = asyncio.create_task(
            self.agent.run(session, text, channel_message_id=channel_message_id,
                           speaker=speaker, result=shown),
            name=f"rumi-turn-{chat_id}",
        )
        self.sessions.set_task(chat_id, task)  # type: ignore[arg-type]
        try:
            try:
                result = await task
            except asyncio.CancelledError:
                current = asyncio.current_task()
                if current is not None and current.cancelling():
                    with contextlib.suppress(BaseException):
                        await asyncio.wait({task})
                    raise
                outcome.kind = "message(stopped)"
                if shown.stopped_by == "stopped":   # part of the answer was shown: kept
                    await self.context.note_reply(session, shown.text, "stopped")
                    return Reply(shown.text, stopped=True)
                await self.context.note_reply(session, msg.STOPPED_REPLY, "stopped")
                return Reply(msg.STOPPED_REPLY, markdown=False, stopped=True)
            outcome.result = result
            return await self._answered(chat_id, session, result)
        finally:
            await self.sessions.release(chat_id)

    async def _answered(self, chat_id: str, session: SessionState,
                        result: TurnResult) -> Reply:
        await self.sessions.emit(SessionEvent(
            "message", chat_id, session,
            data={"tools": list(result.tools), "tokens": result.tokens,
                  "stopped_by": result.stopped_by},
        ))
        text = f"{result.notice}\n\n{result.text}" if result.notice else result.text
        return Reply(text, is_error=result.stopped_by in MODEL_FAILURES,
                     markdown=result.stopped_by in (None, "stream_broken"),
                     item_id=result.item_id)

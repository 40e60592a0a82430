"""A turn a crash cut, settled before the loop goes on: every recorded call gets a result and
none runs twice (the tape's side is `rumi/context/resume.py`)."""

from __future__ import annotations

import logging

from rumi import messages as msg
from rumi.agent.turn import ContextLike, TurnResult
from rumi.base.tools import ToolRegistry
from rumi.context.builder import strip_id_prefix
from rumi.context.resume import RecordedTurn
from rumi.sessions.state import SessionState

log = logging.getLogger(__name__)


async def settle(context: ContextLike, registry: ToolRegistry, session: SessionState,
                 recorded: RecordedTurn, result: TurnResult) -> bool:
    """Settle a turn cut by a crash; True when it had already reached its answer.

    A call recorded without a result gets one now: "not run" when it never started,
    "may have run" when it did (the model must check before repeating it), and the
    person is told when such a call changes files or state."""
    answer = recorded.answer
    if answer is not None:
        result.text = strip_id_prefix(answer.content).strip() or msg.EMPTY_REPLY
        result.item_id = answer.id
        return True
    told = []
    for call in recorded.unfinished:
        text = msg.TOOL_MAYBE_RAN if call.started else msg.TOOL_NOT_RUN
        await context.add_message(session, "tool", text, tool_call_id=call.call_id,
                                  name=call.name, is_error=True)
        tool = registry.get(call.name)
        if call.started and (tool is None or tool.changes_state):
            told.append(call.name)
    log.info("chat %s: resuming a turn cut by a restart (%d steps, %d unfinished calls)",
             session.chat_id, len(recorded.steps), len(recorded.unfinished))
    if told:
        result.notice = msg.TOOL_MAYBE_RAN_NOTICE.format(tools=", ".join(told))
    return False

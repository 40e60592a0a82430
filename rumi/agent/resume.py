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
    person is told when such a call changes files or state. That notice is worked out from
    the tape each time, so a second crash before it was sent does not lose it, and an
    answer given again after a crash carries it as the first did."""
    told = [name for name in _maybe_ran(recorded) if _changes_state(registry, name)]
    answer = recorded.answer
    if answer is not None:
        result.text = strip_id_prefix(answer.content).strip() or msg.EMPTY_REPLY
        result.item_id = answer.id
        _tell(result, told)
        return True
    for call in recorded.unfinished:
        text = msg.TOOL_MAYBE_RAN if call.started else msg.TOOL_NOT_RUN
        await context.add_message(session, "tool", text, tool_call_id=call.call_id,
                                  name=call.name, is_error=True)
        if call.started and _changes_state(registry, call.name):
            told.append(call.name)
    log.info("chat %s: resuming a turn cut by a restart (%d steps, %d unfinished calls)",
             session.chat_id, len(recorded.steps), len(recorded.unfinished))
    _tell(result, told)
    return False


def _maybe_ran(recorded: RecordedTurn) -> list[str]:
    """Calls an earlier restart already reported as possibly run (their result is on the
    tape, in whichever language that restart spoke)."""
    texts = {str(msg.text("TOOL_MAYBE_RAN", code)) for code in msg.SUPPORTED_LANGUAGES}
    return [step.name or "?" for step in recorded.steps
            if step.role == "tool" and step.is_error
            and strip_id_prefix(step.content).strip() in texts]


def _changes_state(registry: ToolRegistry, name: str) -> bool:
    tool = registry.get(name)
    return tool is None or tool.changes_state


def _tell(result: TurnResult, told: list[str]) -> None:
    if told:
        names = list(dict.fromkeys(told))
        result.notice = msg.TOOL_MAYBE_RAN_NOTICE.format(tools=", ".join(names))

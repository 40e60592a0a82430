"""`/redact <texto>`, and the question `/forget` asks when the forgotten text was also said.

A redaction cannot be undone, so one touching more than a few messages (or several memories)
is asked first, like a mass forget; the question never repeats the text (that would write it
again). The answer is `/redact sí` or `/redact no` — Telegram's buttons send those, the
terminal types them (`s`/`n` work too) — within five minutes. Replies say what went and where,
by ids and counts only.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from rumi import messages as msg
from rumi.base.commands import CommandRequest
from rumi.base.pending import PendingQuestions
from rumi.base.replies import Reply
from rumi.memory.redaction.record import Report
from rumi.memory.redaction.redactor import Redactor
from rumi.memory.redaction.text import MIN_CHARS, tombstone

log = logging.getLogger(__name__)

CONFIRM_SECONDS = 300
CONFIRM_ABOVE = 3
"""More messages than this (or more than one memory) and `/redact` asks before removing."""

YES = ("si", "sí", "s", "y", "yes")
NO = ("no", "n", "cancelar", "cancel")


@dataclass
class _Pending:
    texts: list[str]
    already: str | None = None  # what /forget already erased, for the final reply


class RedactCommand:
    """The `/redact` handler and the offer `/forget` appends to its reply."""

    def __init__(self, redactor: Redactor, *,
                 monotonic: Callable[[], float] = time.monotonic) -> None:
        self.redactor = redactor
        self._pending: PendingQuestions[_Pending] = PendingQuestions(CONFIRM_SECONDS, monotonic)
        self.assistant: Any = None

    def register(self, assistant: Any) -> None:
        self.assistant = assistant   # told after a redaction, so channels drop their copies
        assistant.register_command(
            "redact", self.cmd_redact, needs_session=True, group_admin=True,
            description=lambda: msg.REDACT_COMMAND_DESCRIPTION)   # a group's history is everyone's

    async def offer(self, chat_id: str, texts: Sequence[str], already: str
                    ) -> tuple[str, list[list[tuple[str, str]]]] | None:
        """After a forget: the question and buttons when the texts are still in the
        conversation, else None. `already` names what the forget erased."""
        usable = [t for t in texts if len(" ".join(t.split())) >= MIN_CHARS]
        try:
            report = await self.redactor.survey(chat_id, usable)
        except ValueError:
            return None
        if not report.mentions and not report.context_items:
            return None
        self._pending.ask(chat_id, _Pending(list(usable), already))
        count = max(report.mentions, report.context_items)
        question = (msg.REDACT_OFFER_ONE if count == 1 else msg.REDACT_OFFER).format(
            count=count, tombstone=tombstone())
        return question, _buttons()

    async def cmd_redact(self, request: CommandRequest) -> Reply:
        chat_id, args = request.chat_id, " ".join(request.args.split())
        if not args:
            return Reply(msg.REDACT_USAGE, markdown=False)
        pending = self._pending.get(chat_id)
        choice = args.casefold()
        if choice in YES or choice in NO:
            if pending is None:
                return Reply(msg.REDACT_EXPIRED, markdown=False)
            self._pending.close(chat_id)
            if choice in NO:
                return Reply(msg.REDACT_CANCELLED, markdown=False)
            report = await self._redact(chat_id, pending.texts, request)
            return Reply(describe(report, pending.already), markdown=False)
        try:
            report = await self.redactor.survey(chat_id, [args], request.session)
        except ValueError:
            return Reply(_refusal(args), markdown=False, is_error=True)
        if not report:
            return Reply(msg.REDACT_NOTHING, markdown=False)
        if len(report.message_ids) > CONFIRM_ABOVE or len(report.memory_ids) > 1:
            self._pending.ask(chat_id, _Pending([args]))
            return Reply(msg.REDACT_CONFIRM.format(where=what_and_where(report),
                                                   tombstone=tombstone()),
                         markdown=False, buttons=_buttons())
        done = await self._redact(chat_id, [args], request)
        return Reply(describe(done), markdown=False)

    async def _redact(self, chat_id: str, texts: list[str], request: CommandRequest) -> Report:
        report = await self.redactor.redact(chat_id, texts, request.session)
        if self.assistant is not None:
            await self.assistant.erased(chat_id)
        return report


def _refusal(text: str) -> str:
    if len(text) < MIN_CHARS:
        return msg.REDACT_TOO_SHORT.format(min=MIN_CHARS)
    return msg.REDACT_TOMBSTONE_TEXT


def _buttons() -> list[list[tuple[str, str]]]:
    return [[(msg.REDACT_YES_BUTTON, "/redact sí"), (msg.REDACT_NO_BUTTON, "/redact no")]]


def what_and_where(report: Report, already: str | None = None) -> str:
    """«memoria #12 y 8 menciones en el historial (5 mensajes, 1 línea del registro…)»."""
    parts: list[str] = [already] if already else []
    ids = report.memory_ids
    if ids:
        listed = ", ".join(f"#{i}" for i in ids)
        parts.append((msg.FORGOT_ONE if len(ids) == 1 else msg.FORGOT_MANY).format(
            ids=listed, count=len(ids)))
    mentions = report.mentions or report.context_items
    if mentions:
        text = (msg.REDACT_MENTIONS_ONE if mentions == 1 else msg.REDACT_MENTIONS).format(
            count=mentions)
        where = [template.format(count=n) for template, n in (
            (msg.REDACT_PART_MESSAGES, len(report.message_ids)),
            (msg.REDACT_PART_CONTEXT, report.context_items),
            (msg.REDACT_PART_DAILY, report.daily_lines),
            (msg.REDACT_PART_SNAPSHOTS, report.snapshot_lines),
            (msg.REDACT_PART_NAMES, report.snapshot_names),
            (msg.REDACT_PART_PENDING, report.pending),
            (msg.REDACT_PART_SECTIONS, report.sections),
        ) if n]
        if where:
            text += msg.REDACT_WHERE.format(parts=", ".join(where))
        parts.append(text)
    if not parts:
        return msg.REDACT_NOTHING_LEFT
    return msg.REDACT_AND.join(parts)


def describe(report: Report, already: str | None = None) -> str:
    return msg.REDACT_DONE.format(what=what_and_where(report, already))

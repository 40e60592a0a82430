"""Redaction: removing what was *said*, not only what was learned (docs/memory.md,
"Redaction").

`/forget` erases memories; the words of the conversation stay in the tape, the active context,
daily logs, snapshots and pending extractions. A redaction finds a text in all of them and
replaces it with a tombstone that keeps each message's id, time and role, and erases the
memories that hold it. Every file is replaced atomically (old or new, never half), and a crash
between files is finished on the next start: the intent (the texts, which only that file
holds, and only until the redaction is done) is written first and removed last. What stays is
the record that a redaction happened: which ids, when, never what.
"""

from __future__ import annotations

import asyncio
import json
import logging
import secrets
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rumi.memory.files.journal import DAILY_NAME
from rumi.memory.redaction.record import (
    INTENT_NAME,
    LOG_NAME,
    Report,
    count_log,
    log_once,
    now_iso,
    remove_synced,
    write_json,
)
from rumi.memory.redaction.rewrite import (
    redact_session,
    redact_snapshot,
    redact_tape,
    redact_text_file,
    tape_has,
)
from rumi.memory.redaction.text import (
    DAILY_PREFIX,
    Needles,
    scrub,
    tombstone,
)
from rumi.paths import ChatPaths, chats_root
from rumi.sessions.state import SessionState

log = logging.getLogger(__name__)

IMPORTED_TAPES = "imported_session_log_*.jsonl"
MEMORY_SCAN_LIMIT = 100_000


class Redactor:
    """Finds and removes texts from one chat's conversation files, context and memory.

    Collaborators come from the composition root: the store (memories holding the text), the
    lifecycle (pending extractions, MEMORY.md), the session manager (a fresh session snapshot,
    no journal line keeping the old text) and the context engine (records the redaction on
    the tape and drops its cached copy of the chat).
    """

    def __init__(self, data_dir: Path, *, store: Any, lifecycle: Any, sessions: Any = None,
                 context: Any = None, tape_index: Any = None) -> None:
        self.data_dir = Path(data_dir)
        self.store = store
        self.lifecycle = lifecycle
        self.sessions = sessions
        self.context = context
        self.tape_index = tape_index   # the conversation search index, rebuilt from the tapes

    # --- what a redaction would touch --------------------------------------------------

    async def survey(self, chat_id: str, texts: Sequence[str],
                     session: SessionState | None = None) -> Report:
        """Count what `redact` would change, writing nothing."""
        needles = Needles(texts)
        tomb = tombstone()
        report = Report()
        await asyncio.to_thread(self._files, ChatPaths(self.data_dir, chat_id), needles, tomb,
                                report, False)
        report.pending = len(await self._pending_hits(chat_id, needles, tomb, write=False))
        if session is None and self.sessions is not None:
            session = await self.sessions.get(chat_id)
        if session is not None:
            report.context_items = redact_session(session, needles, tomb, write=False)
        report.memory_ids = [m.id for m in await self._memories(chat_id, needles)]
        return report

    # --- doing it ----------------------------------------------------------------------

    async def redact(self, chat_id: str, texts: Sequence[str],
                     session: SessionState | None) -> Report:
        """Remove `texts` everywhere in the chat. The caller holds the chat's session lock
        (`session`), so no turn writes to the tape meanwhile."""
        needles = Needles(texts)
        planned = await self.survey(chat_id, texts, session)
        token = secrets.token_hex(8)
        paths = ChatPaths(self.data_dir, chat_id)
        # the fingerprints go in the intent too: after a crash, files already rewritten no
        # longer show what they held, and an import must still recognise it
        intent = {"token": token, "texts": needles.texts, "ids": planned.message_ids,
                  "hashes": sorted(planned.hashes), "renamed": planned.renamed,
                  "tombstone": tombstone(), "at": now_iso()}
        await asyncio.to_thread(write_json, paths.smma / INTENT_NAME, intent)
        return await self._finish(chat_id, intent, session)

    async def _finish(self, chat_id: str, intent: dict[str, Any],
                      session: SessionState | None) -> Report:
        paths = ChatPaths(self.data_dir, chat_id)
        token, ids = str(intent["token"]), [int(i) for i in intent.get("ids", [])]
        if session is not None and self.context is not None and \
                not await asyncio.to_thread(tape_has, paths.tape, token):
            await self.context.note_redaction(session, ids, token)
        needles = Needles(intent["texts"])
        tomb = str(intent.get("tombstone") or tombstone())
        report = Report()
        async with self.lifecycle.pending_lock:
            await asyncio.to_thread(self._files, paths, needles, tomb, report, True)
            report.pending = len(await self._pending_hits(chat_id, needles, tomb, write=True))
        if self.context is not None:
            self.context.forget_chat(chat_id)
        if session is not None:
            report.context_items = redact_session(session, needles, tomb, write=True)
            if self.sessions is not None:
                await self.sessions.rewrite(session)
        if self.tape_index is not None:
            await self.tape_index.rebuild(chat_id)
        memories = await self._memories(chat_id, needles)
        if memories:
            report.memory_ids = [m.id for m in memories]
            report.history = await self.store.erase(chat_id, report.memory_ids)
            await self.lifecycle.write_markdown(chat_id)
        report.message_ids = sorted(set(ids) | set(report.message_ids))
        report.hashes.update(h for h in intent.get("hashes") or [] if isinstance(h, str))
        report.renamed = {**(intent.get("renamed") or {}), **report.renamed}
        await asyncio.to_thread(log_once, paths.smma / LOG_NAME, token, intent["at"], report)
        await asyncio.to_thread(remove_synced, paths.smma / INTENT_NAME)
        log.info("chat %s: redaction %s done (%d messages, %d other places, %d memories)",
                 chat_id, token, len(report.message_ids), report.mentions - report.tape_lines,
                 len(report.memory_ids))
        return report

    async def resume(self) -> int:
        """At start: finish every redaction a crash interrupted (its intent file is still
        there). Returns how many were finished."""
        root = chats_root(self.data_dir)
        found = await asyncio.to_thread(
            lambda: sorted(p.parent.parent.name for p in root.glob(f"*/.smma/{INTENT_NAME}")))
        done = 0
        for chat_id in found:
            path = ChatPaths(self.data_dir, chat_id).smma / INTENT_NAME
            try:
                intent = json.loads(await asyncio.to_thread(path.read_bytes))
                Needles(intent["texts"])
            except (OSError, ValueError, KeyError, TypeError) as exc:
                log.error("chat %s: unreadable redaction intent (%s); left for a person",
                          chat_id, exc)
                continue
            session = None
            if self.sessions is not None:
                session = await self.sessions.acquire(chat_id, wait=True)
            try:
                await self._finish(chat_id, intent, session)
                done += 1
            except Exception:
                log.exception("chat %s: finishing an interrupted redaction failed", chat_id)
            finally:
                if self.sessions is not None:
                    await self.sessions.release(chat_id)
        return done

    async def count(self, chat_id: str) -> tuple[int, int]:
        """(redactions done in this chat, messages they tombstoned), for /memory and /status."""
        path = ChatPaths(self.data_dir, chat_id).smma / LOG_NAME
        return await asyncio.to_thread(count_log, path)

    # --- the parts -----------------------------------------------------------------------

    def _files(self, paths: ChatPaths, needles: Needles, tomb: str, report: Report,
               write: bool) -> None:
        """Tapes, daily logs, snapshots (and their names) and profile sections. Blocking."""
        tapes = [paths.tape, *sorted(paths.smma.glob(IMPORTED_TAPES))]
        for tape in tapes:
            redact_tape(tape, needles, tomb, report, write)
        if paths.daily_dir.is_dir():
            for entry in sorted(paths.daily_dir.iterdir()):
                if DAILY_NAME.match(entry.name) and entry.is_file():
                    report.daily_lines += redact_text_file(
                        entry, needles, tomb, DAILY_PREFIX, write, report.hashes)
        if paths.snapshots.is_dir():
            for entry in sorted(paths.snapshots.glob("*.md")):
                if entry.is_file():
                    report.snapshot_lines += redact_snapshot(entry, needles, tomb, report, write)
        if paths.smma.is_dir():
            for entry in sorted(paths.smma.glob("*.md")):
                if entry.is_file():
                    report.sections += redact_text_file(entry, needles, tomb, None, write,
                                                        report.hashes)

    async def _pending_hits(self, chat_id: str, needles: Needles, tomb: str, *,
                            write: bool) -> list[int]:
        """Deferred extractions whose transcript held the text (rewritten when `write`)."""
        hits: list[int] = []

        def change(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
            """A transcript loses the lines that said it (it is a work queue, not a record:
            nothing is left to extract from a tombstone); an emptied one is dropped."""
            kept = []
            for n, record in enumerate(records):
                text = record.get("transcript")
                if isinstance(text, str) and needles.found(text):
                    hits.append(n)
                    lines = [line for line in text.splitlines() if not needles.found(line)]
                    record["transcript"] = needles.replace("\n".join(lines), tomb)
                rest, hit = scrub({k: v for k, v in record.items() if k != "transcript"},
                                  needles, tomb)
                if hit:
                    record.update(rest)
                    if n not in hits:
                        hits.append(n)
                if str(record.get("transcript", "")).strip():
                    kept.append(record)
            return kept

        if write:
            await self.lifecycle.rewrite_pending(chat_id, change)
        else:
            change(await self.lifecycle.pending(chat_id))
        return hits

    async def _memories(self, chat_id: str, needles: Needles) -> list[Any]:
        """Every stored memory (any status) whose text, key or pre-edit texts hold it."""
        rows = await self.store.list(chat_id, status=None, limit=MEMORY_SCAN_LIMIT)
        return [m for m in rows
                if needles.found(m.content) or (m.key and needles.found(m.key))
                or needles.found(json.dumps(m.metadata or {}, ensure_ascii=False))]



"""Terminal channel (`rumi chat`): the same core as Telegram, one chat id of its own.

stdin is read by a daemon thread so the event loop never blocks and Ctrl-C / EOF end the
session at once (a blocked `input()` in the default executor would hold up interpreter exit).
On a terminal, Ctrl-D, `/exit` and `/salir` typed while the model thinks end the session at
once too: the turn is cancelled as Ctrl-C cancels it (the message stays on the tape), instead
of waiting for an answer nobody will read. From a pipe or a file the lines are a script, read
in order: every message before the end is answered.
The session is saved like any other chat, so the conversation continues next time.

Files cross the terminal as paths: a reply's document (the /export archive) is written under
`exports_dir` and its path printed; `/import <path>` reads a local archive (size-checked, in a
thread) and hands it to the same /import command Telegram uses, so validation is identical.
`/audio <path>` reads a local audio file and hands it to the core like a voice note.
Only this channel reads local paths: on Telegram "/import /etc/passwd" is just text.

While a turn runs, a "thinking…" line (on a real terminal only) shows Rumi is working, and
each tool step prints one line ("🔧 `ls -la`") from the agent's `ToolSteps` event. The answer
prints as the model writes it (`AnswerStream`): the indicator goes away at its first words and
comes back for a tool step; when the turn ends only what was not printed yet is added (a
"stopped" mark, a cut note), or the whole answer when it differs from what was streamed.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import threading
from collections import deque
from collections.abc import Awaitable, Iterator
from pathlib import Path
from typing import TextIO

from rumi import messages as msg
from rumi.base.answer_text import AnswerStream, AnswerText
from rumi.base.progress import ToolStep, ToolSteps
from rumi.base.replies import Attachment, Reply
from rumi.channels.terminal_help import terminal_help
from rumi.channels.thinking import Thinking
from rumi.chat_language import locale_language
from rumi.core.assistant import Assistant
from rumi.fileio import (
    ArchiveFileTooLarge,
    NotARegularFile,
    atomic_write_bytes,
    read_archive_file,
)

TERMINAL_CHAT_ID = "terminal"
EXIT_WORDS = {"/exit", "/quit", "/salir"}
HELP_WORDS = {"/help"}
# what the memory archive accepts (memory.archive.ArchiveLimits); `rumi chat` passes that
MAX_IMPORT_BYTES = 50 * 1024 * 1024
MAX_AUDIO_READ_BYTES = 100 * 1024 * 1024  # read no more; `voice.max_file_mb` decides the rest


class TerminalChannel:
    def __init__(
        self,
        assistant: Assistant,
        *,
        chat_id: str = TERMINAL_CHAT_ID,
        stdin: TextIO | None = None,
        stdout: TextIO | None = None,
        exports_dir: Path | None = None,
        max_import_bytes: int = MAX_IMPORT_BYTES,
        language: str | None = None,
        steps: ToolSteps | None = None,
        indicator: bool | None = None,
        answer_text: AnswerStream | None = None,
    ) -> None:
        self.assistant = assistant
        self.chat_id = chat_id
        self.stdin = stdin or sys.stdin
        self.stdout = stdout or sys.stdout
        self.exports_dir = exports_dir if exports_dir is not None else Path.cwd()
        self.max_import_bytes = max_import_bytes
        self.interactive = bool(getattr(self.stdin, "isatty", lambda: False)())
        self._yes_no: dict[str, str] = {}
        self._lines: asyncio.Queue[str | None] = asyncio.Queue()
        self._typed_ahead: deque[str | None] = deque()  # read while a turn ran, not yet handled
        # with agent.language = "auto": the locale's language (LC_ALL, LC_MESSAGES, LANG)
        self.language = language if language is not None else locale_language()
        self.steps = steps or ToolSteps()
        self.answer_text = answer_text or AnswerStream()
        self._live: str | None = None   # the answer printed so far on its open line
        if indicator is None:
            indicator = bool(getattr(self.stdout, "isatty", lambda: False)())
        self._thinking = Thinking(self.stdout, msg.text("TERMINAL_THINKING", self.language),
                                  enabled=indicator)

    async def run(self) -> None:
        """Read lines until EOF or an exit word; answer each through the core."""
        loop = asyncio.get_running_loop()
        reader = threading.Thread(target=self._read, args=(loop, self._lines), daemon=True,
                                  name="rumi-stdin")
        reader.start()
        msg.set_language(await self.assistant.language_for(self.chat_id, self.language))
        self.assistant.set_outbox(self._tell)
        await self.assistant.deliver_queued()
        self._write(msg.TERMINAL_WELCOME + "\n")
        while True:
            self._prompt()
            line = await self._next_line()
            if _leaves(line):
                self._write(f"\n{msg.TERMINAL_BYE}\n")
                return
            if not line.strip():
                continue
            answer, self._yes_no = self._yes_no.get(line.strip().casefold()), {}
            line = answer or line
            attachment: Attachment | None = None
            if line.strip().lower() in HELP_WORDS:
                await self._show(Reply(terminal_help(self.assistant.command_menu(),
                                                     audio=self.assistant.transcribes),
                                       markdown=False))
                continue
            if line.strip().split(maxsplit=1)[0].lower() == "/audio":
                await self._audio(line)
                continue
            if line.strip().split(maxsplit=1)[0].lower() == "/import":
                attachment, problem = await self._load_import(line)
                if attachment is None:
                    self._write(f"rumi> {problem}\n")
                    continue
                line = "/import"
            with self._working():
                reply = await self._busy(self.assistant.handle(
                    self.chat_id, "local", line, attachment=attachment, notify=self._notify))
            if reply is None:
                self._write(f"\n{msg.TERMINAL_BYE}\n")
                return
            await self._show(reply)

    async def _audio(self, line: str) -> None:
        """`/audio <path>`: a local audio file handled like a Telegram voice note."""
        raw = line.strip().partition(" ")[2].strip().strip("\"'")
        if not raw:
            self._write(f"rumi> {msg.TERMINAL_AUDIO_USAGE}\n")
            return
        path, data, problem = await _read_local(raw, MAX_AUDIO_READ_BYTES, msg.VOICE_TOO_LARGE)
        if data is None:
            self._write(f"rumi> {problem}\n")
            return
        with self._working():
            reply = await self._busy(self.assistant.handle_voice(
                self.chat_id, "local", Attachment(path.name, data), notify=self._notify))
        if reply is None:
            self._typed_ahead.appendleft(None)   # the person left while it was transcribed
            return
        await self._show(reply)

    async def _load_import(self, line: str) -> tuple[Attachment | None, str]:
        """`/import <path>`: the local archive as an attachment, or a friendly reason."""
        raw = line.strip().partition(" ")[2].strip().strip("\"'")
        if not raw:
            return None, msg.TERMINAL_IMPORT_USAGE
        path, data, problem = await _read_local(raw, self.max_import_bytes,
                                                msg.TERMINAL_IMPORT_TOO_LARGE)
        if data is None:
            return None, problem
        return Attachment(path.name, data, "application/gzip"), ""

    def _read(self, loop: asyncio.AbstractEventLoop, lines: asyncio.Queue[str | None]) -> None:
        with contextlib.suppress(OSError, ValueError, RuntimeError):
            for line in self.stdin:
                loop.call_soon_threadsafe(lines.put_nowait, line.rstrip("\n"))
        with contextlib.suppress(RuntimeError):  # the loop may be closed: we are exiting
            loop.call_soon_threadsafe(lines.put_nowait, None)

    async def _tell(self, chat_id: str, text: str,
                    buttons: list[list[tuple[str, str]]] | None = None) -> bool:
        """Notices for this chat; others (Telegram chats) stay queued for their channel."""
        if chat_id != self.chat_id:
            return False
        self._write(f"\n{msg.TERMINAL_NOTICE.format(text=text)}\n")
        choices = [b for row in buttons or [] for b in row]
        for label, command in choices:
            self._write(f"  {msg.TERMINAL_BUTTON.format(label=label, command=command)}\n")
        self._offer_yes_no(choices)
        return True

    def _offer_yes_no(self, choices: list[tuple[str, str]]) -> None:
        if len(choices) == 2:   # a yes/no question: «s» or «n» answers it
            self._yes_no = {"s": choices[0][1], "si": choices[0][1], "sí": choices[0][1],
                            "y": choices[0][1], "yes": choices[0][1], "n": choices[1][1],
                            "no": choices[1][1]}
            self._write(f"  {msg.TERMINAL_YES_NO}\n")

    async def _notify(self, text: str) -> None:
        self._write(text + "\n")

    @contextlib.contextmanager
    def _working(self) -> Iterator[None]:
        """Tool steps and the answer's text of the turn started in this block print in
        this chat as they come."""
        with self.steps.watching(self._step), self.answer_text.watching(self._text):
            yield

    async def _next_line(self) -> str | None:
        if self._typed_ahead:
            return self._typed_ahead.popleft()
        return await self._lines.get()

    async def _busy(self, work: Awaitable[Reply]) -> Reply | None:
        """Run one turn with the indicator shown, and gone before the answer prints.

        None when the person left on a terminal while it ran (Ctrl-D, an exit word): the turn
        is cancelled then and there. Other lines typed meanwhile wait their turn."""
        self._thinking.start()
        turn = asyncio.ensure_future(work)
        try:
            while self.interactive and not turn.done():
                reading = asyncio.ensure_future(self._lines.get())
                await asyncio.wait({turn, reading}, return_when=asyncio.FIRST_COMPLETED)
                if not reading.done():
                    reading.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await reading
                if reading.done() and not reading.cancelled():
                    line = reading.result()
                    if _leaves(line):
                        return None
                    self._typed_ahead.append(line)
            return await turn
        finally:
            if not turn.done():
                turn.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await turn
            await self._thinking.stop()

    async def _step(self, step: ToolStep) -> None:
        self._end_live()
        self._write(step.line + "\n")
        self._thinking.start()

    async def _text(self, piece: AnswerText) -> None:
        if piece.restart:
            self._end_live()
        if self._live is None:
            await self._thinking.stop()
            self._write("rumi> ")
            self._live = ""
        self._live += piece.text
        self._write(piece.text)

    def _end_live(self) -> None:
        if self._live is not None:
            self._live = None
            self._write("\n")

    async def _show(self, reply: Reply) -> None:
        live, self._live = (self._live or "").strip(), None
        if live and reply.text.startswith(live):
            self._write(reply.text[len(live):] + "\n")   # only what was not printed yet
        elif live:
            self._write(f"\nrumi> {reply.text}\n")
        elif reply.text:
            self._write(f"rumi> {reply.text}\n")
        # a reply asking yes/no (a redaction's confirmation) is answered with s/n too
        self._offer_yes_no([b for row in reply.buttons or [] for b in row])
        if reply.document is not None:
            name = Path(reply.document.filename).name or "rumi-archivo"
            target = self.exports_dir / name
            try:
                await asyncio.to_thread(atomic_write_bytes, target, reply.document.data)
            except OSError as exc:
                self._write(msg.TERMINAL_DOCUMENT_FAILED.format(
                    path=target, reason=exc.strerror or exc) + "\n")
                return
            self._write(msg.TERMINAL_DOCUMENT_SAVED.format(
                path=target, size=msg.format_number(len(reply.document.data))) + "\n")

    def _prompt(self) -> None:
        if self.interactive:
            self._write(msg.TERMINAL_PROMPT)

    def _write(self, text: str) -> None:
        self._thinking.erase()
        self.stdout.write(text)
        self.stdout.flush()
        self._thinking.redraw()


def _leaves(line: str | None) -> bool:
    """EOF (Ctrl-D) or an exit word: the person is done."""
    return line is None or line.strip().lower() in EXIT_WORDS


async def _read_local(raw: str, limit: int, too_large: str) -> tuple[Path, bytes | None, str]:
    """A file on this computer named by the person: (path, bytes, "") or (path, None, why),
    read off the event loop, a regular file only, at most `limit` bytes."""
    path = Path(raw)

    def read() -> bytes:
        nonlocal path
        path = path.expanduser()
        return read_archive_file(path, limit)

    try:
        data = await asyncio.to_thread(read)
    except FileNotFoundError:
        return path, None, msg.TERMINAL_IMPORT_MISSING.format(path=path)
    except NotARegularFile:
        return path, None, msg.TERMINAL_IMPORT_NOT_FILE.format(path=path)
    except ArchiveFileTooLarge as exc:
        return path, None, too_large.format(size_mb=exc.size / 2**20, max_mb=limit / 2**20)
    except OSError as exc:
        return path, None, msg.TERMINAL_IMPORT_UNREADABLE.format(
            path=path, reason=exc.strerror or exc)
    return path, data, ""

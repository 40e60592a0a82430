"""Terminal channel (`rumi chat`): the same core as Telegram, one chat id of its own.

stdin is read by a daemon thread so the event loop never blocks and Ctrl-C / EOF end the
session at once (a blocked `input()` in the default executor would hold up interpreter exit).
The session is saved like any other chat, so the conversation continues next time.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import threading
from typing import TextIO

from rumi.core import Assistant, Reply

TERMINAL_CHAT_ID = "terminal"
PROMPT = "tú> "
EXIT_WORDS = {"/exit", "/quit", "/salir"}


class TerminalChannel:
    def __init__(
        self,
        assistant: Assistant,
        *,
        chat_id: str = TERMINAL_CHAT_ID,
        stdin: TextIO | None = None,
        stdout: TextIO | None = None,
    ) -> None:
        self.assistant = assistant
        self.chat_id = chat_id
        self.stdin = stdin or sys.stdin
        self.stdout = stdout or sys.stdout
        self.interactive = bool(getattr(self.stdin, "isatty", lambda: False)())

    async def run(self) -> None:
        """Read lines until EOF or an exit word; answer each through the core."""
        lines: asyncio.Queue[str | None] = asyncio.Queue()
        loop = asyncio.get_running_loop()
        reader = threading.Thread(target=self._read, args=(loop, lines), daemon=True,
                                  name="rumi-stdin")
        reader.start()
        self.assistant.set_outbox(self._tell)
        self._write("Rumi en la terminal. Escribe /help para ver los comandos; "
                    "Ctrl-D o /salir para terminar.\n")
        while True:
            self._prompt()
            line = await lines.get()
            if line is None or line.strip().lower() in EXIT_WORDS:
                self._write("\n¡Hasta luego!\n")
                return
            if not line.strip():
                continue
            reply = await self.assistant.handle(self.chat_id, "local", line,
                                                notify=self._notify)
            self._show(reply)

    def _read(self, loop: asyncio.AbstractEventLoop, lines: asyncio.Queue[str | None]) -> None:
        with contextlib.suppress(OSError, ValueError, RuntimeError):
            for line in self.stdin:
                loop.call_soon_threadsafe(lines.put_nowait, line.rstrip("\n"))
        with contextlib.suppress(RuntimeError):  # the loop may be closed: we are exiting
            loop.call_soon_threadsafe(lines.put_nowait, None)

    async def _tell(self, chat_id: str, text: str) -> None:
        if chat_id == self.chat_id:
            self._write(f"\n[aviso] {text}\n")

    async def _notify(self, text: str) -> None:
        self._write(text + "\n")

    def _show(self, reply: Reply) -> None:
        if reply.text:
            self._write(f"rumi> {reply.text}\n")
        if reply.document is not None:
            self._write(f"[documento: {reply.document.filename}, "
                        f"{len(reply.document.data)} bytes; disponible en Telegram]\n")

    def _prompt(self) -> None:
        if self.interactive:
            self._write(PROMPT)

    def _write(self, text: str) -> None:
        self.stdout.write(text)
        self.stdout.flush()

"""Where log lines go: a private rotating file under the data dir, the screen only if asked.

In `rumi chat` the screen is the conversation: a WARNING from tiktoken, fastembed's
"sleeping for 27 seconds" or a Groq retry printed between two answers reads as if Rumi said
it. So the terminal chat logs to `<data_dir>/logs/rumi.log` and shows log lines on stderr only
with `--verbose`; `rumi run` writes the same file and shows on stderr (the journal, for a
service) only the warnings a person must act on, one line each — no INFO (migrations,
`watchfiles`), no traceback — unless `--verbose` shows everything. Third-party chatter is
routed into the same place: loguru (fastembed) is bridged into `logging`, Python warnings are
captured, and Hugging Face progress bars are switched off.

The file is opened 0600 (it holds chat ids and errors) and written by a background thread
through a queue, so logging never blocks the event loop on disk.

Secrets never reach a log line at any level: every handler's formatter is wrapped in
`MaskingFormatter`, which masks the configured secrets (bot token, Groq key) and anything
shaped like one in the finished line — the message, its arguments and its traceback alike, so
python-telegram-bot's and httpx's own DEBUG lines (URLs carry `/bot<token>/`) and error bodies
that quote a URL are covered without knowing who logs what. `scrub_logs` masks what an older
version already wrote, so `rumi backup`, which copies the logs, carries no secret either.
"""

from __future__ import annotations

import atexit
import logging
import logging.handlers
import os
import queue
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rumi.fileio import atomic_write_bytes
from rumi.secret_mask import SecretMask

LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
LOG_FILE = Path("logs") / "rumi.log"
MAX_BYTES = 2 * 1024 * 1024
BACKUPS = 3
QUIET_LOGGERS = ("httpx", "httpcore", "apscheduler", "docker", "urllib3", "groq._base_client",
                 "huggingface_hub", "filelock")
# not on the calm console (`rumi run` without --verbose): see _not_library_noise
LIBRARY_NOISE = ("py.warnings", "huggingface_hub", "fastembed", "tqdm", "onnxruntime")


class PrivateRotatingFileHandler(logging.handlers.RotatingFileHandler):
    """A rotating file whose every generation is created 0600, whatever the umask."""

    def _open(self) -> Any:
        fd = os.open(self.baseFilename, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        os.chmod(self.baseFilename, 0o600)  # a file left by an older version
        return os.fdopen(fd, "a", encoding=self.encoding or "utf-8")


# the file writers `setup_logging` started (one per call); exit, or `flush_logs`, stops them
_LISTENERS: list[logging.handlers.QueueListener] = []


def log_path(data_dir: Path) -> Path:
    return data_dir / LOG_FILE


class MaskingFormatter(logging.Formatter):
    """Another formatter's finished line, with every secret masked."""

    def __init__(self, inner: logging.Formatter, mask: SecretMask) -> None:
        super().__init__()
        self.inner = inner
        self.mask = mask

    def format(self, record: logging.LogRecord) -> str:
        return self.mask(self.inner.format(record))


def mask_handlers(logger: logging.Logger, mask: SecretMask) -> None:
    """Wrap the formatter of each of `logger`'s handlers (once) so no secret is written."""
    for handler in logger.handlers:
        inner = handler.formatter or logging.Formatter()
        if not isinstance(inner, MaskingFormatter):
            handler.setFormatter(MaskingFormatter(inner, mask))


def scrub_logs(data_dir: Path, secrets: Sequence[str | None]) -> int:
    """Mask secrets in the log files already on disk (written before lines were masked);
    returns how many files changed (blocking: call in a thread)."""
    mask = SecretMask(secrets)
    changed = 0
    for path in sorted(log_path(data_dir).parent.glob(LOG_FILE.name + "*")):
        if not path.is_file():
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        clean = mask(text)
        if clean != text:
            atomic_write_bytes(path, clean.encode("utf-8"))
            os.chmod(path, 0o600)
            changed += 1
    return changed


class OneLineFormatter(logging.Formatter):
    """A warning as one short line: the message's first line, the exception's type and text,
    never its traceback (the log file keeps that)."""

    def __init__(self, limit: int = 300) -> None:
        super().__init__("%(levelname)s %(name)s: %(message)s")
        self.limit = limit

    def format(self, record: logging.LogRecord) -> str:
        message = record.getMessage().strip().splitlines()
        line = message[0] if message else ""
        if record.exc_info and record.exc_info[1] is not None:
            exc = record.exc_info[1]
            detail = str(exc).strip().splitlines()
            line += f" ({type(exc).__name__}{': ' + detail[0] if detail else ''})"
        line = f"{record.levelname} {record.name}: {line}"
        return line if len(line) <= self.limit else line[:self.limit - 1] + "…"


def setup_logging(level: str, data_dir: Path, *, console: bool,
                  warnings: bool = False, secrets: Sequence[str | None] = ()) -> Path:
    """Send every log line to the data dir's log file, and to stderr only if `console`;
    with `warnings` (and not `console`), stderr gets WARNING and above, one line each.
    `secrets` (and anything shaped like a token or key) are masked in every line.

    Returns the file's path (for the one line that tells the person where it is).
    """
    path = log_path(data_dir)
    data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    path.parent.mkdir(mode=0o700, exist_ok=True)
    numeric = getattr(logging, level.upper(), logging.INFO)
    mask = SecretMask(secrets)
    formatter = MaskingFormatter(logging.Formatter(LOG_FORMAT), mask)
    file_handler = PrivateRotatingFileHandler(path, maxBytes=MAX_BYTES, backupCount=BACKUPS,
                                              encoding="utf-8")
    file_handler.setFormatter(formatter)
    lines: queue.SimpleQueue[logging.LogRecord] = queue.SimpleQueue()
    listener = logging.handlers.QueueListener(lines, file_handler, respect_handler_level=True)
    listener.start()
    _LISTENERS.append(listener)
    atexit.register(_stop, listener)

    root = logging.getLogger()
    for handler in list(root.handlers):
        root.removeHandler(handler)
        handler.close()
    root.addHandler(logging.handlers.QueueHandler(lines))
    if console:
        stream = logging.StreamHandler(sys.stderr)
        stream.setFormatter(formatter)
        root.addHandler(stream)
    elif warnings:
        stream = logging.StreamHandler(sys.stderr)
        stream.setLevel(logging.WARNING)
        stream.setFormatter(MaskingFormatter(OneLineFormatter(), mask))
        stream.addFilter(_not_library_noise)
        root.addHandler(stream)
    root.setLevel(numeric)
    for noisy in QUIET_LOGGERS:
        logging.getLogger(noisy).setLevel(max(logging.WARNING, numeric))
    logging.captureWarnings(True)
    if not console:
        os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
        os.environ.setdefault("TQDM_DISABLE", "1")
    _bridge_loguru()
    return path


def _not_library_noise(record: logging.LogRecord) -> bool:
    """The calm console leaves out what a person cannot act on: Python warnings meant for
    developers (a FutureWarning of fastembed) and the model downloaders' chatter (Hugging
    Face's "unauthenticated requests"); both still go to the file."""
    return not record.name.startswith(LIBRARY_NOISE)


def _stop(listener: logging.handlers.QueueListener) -> None:
    if listener in _LISTENERS:
        _LISTENERS.remove(listener)
        listener.stop()
        for handler in listener.handlers:
            handler.close()


def flush_logs() -> None:
    """Write every queued line to the log file and close it: what exit does, for a process
    that ends without the interpreter's teardown (`rumi.cli.end_process`)."""
    for listener in list(_LISTENERS):
        _stop(listener)
    logging.shutdown()


def _bridge_loguru() -> None:
    """fastembed logs through loguru, which prints to stderr by itself: route it to logging."""
    try:
        from loguru import logger
    except ImportError:
        return

    def forward(message: Any) -> None:
        record = message.record
        logging.getLogger(record["name"] or "loguru").log(
            record["level"].no, "%s", record["message"])

    logger.remove()
    logger.add(forward, level="INFO", format="{message}")

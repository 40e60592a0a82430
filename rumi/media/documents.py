"""Documents for the core: a text, PDF or CSV file is saved into the chat's sandbox workspace
and the agent is told where, so it can read or process it with its tools.

Only what the sandbox can usefully work with is taken (text that decodes as UTF-8, PDFs by
their signature); anything else gets a clear refusal. Nothing is overwritten: a name already in
the workspace gets a suffix (the saver's job). When the file cannot be saved the person is told
it was not kept, so they know to send it again.
"""

from __future__ import annotations

import logging
import re
import unicodedata
from collections.abc import Awaitable, Callable
from pathlib import PurePosixPath

from rumi import messages as msg
from rumi.base.feature import SaveFailed
from rumi.base.replies import Attachment, InputRefused
from rumi.config import DocumentSettings

log = logging.getLogger(__name__)

MB = 1024 * 1024
MAX_NAME_CHARS = 100
TEXT_SUFFIXES = frozenset({
    ".txt", ".md", ".csv", ".tsv", ".json", ".jsonl", ".yaml", ".yml", ".toml", ".ini",
    ".xml", ".html", ".log", ".py", ".sh", ".js", ".ts", ".sql", ".tex", ".rst", ".srt",
})
TEXT_TYPES = frozenset({"application/json", "application/xml", "application/x-yaml",
                        "application/toml", "application/sql", "application/x-sh"})
_UNSAFE = re.compile(r"[^\w.\- ]+")

# (chat_id, directory in /workspace, file name, bytes) -> the path it was saved at
Save = Callable[[str, str, str, bytes], Awaitable[str]]


class DocumentService:
    def __init__(self, save: Save | None, available: Callable[[], bool],
                 settings: DocumentSettings) -> None:
        self.save = save
        self.available = available
        self.settings = settings

    async def read(self, chat_id: str, document: Attachment, caption: str) -> str:
        """Save the document; the conversation's text says where, or InputRefused says why not."""
        name = safe_name(document.filename)
        if not is_supported(name, document.mime_type, document.data):
            raise InputRefused(msg.DOCUMENT_UNSUPPORTED.format(name=document.filename))
        if not self.settings.enabled:
            raise InputRefused(msg.DOCUMENTS_DISABLED.format(name=name))
        if self.save is None:
            raise InputRefused(msg.DOCUMENT_NO_SANDBOX.format(
                name=name, reason=msg.DOCUMENT_SANDBOX_OFF))
        size_mb = len(document.data) / MB
        if size_mb > self.settings.max_file_mb:
            raise InputRefused(msg.DOCUMENT_TOO_LARGE_FOR_WORKSPACE.format(
                name=name, size_mb=size_mb, max_mb=self.settings.max_file_mb))
        if not self.available():
            raise InputRefused(msg.DOCUMENT_NO_SANDBOX.format(
                name=name, reason=msg.DOCUMENT_SANDBOX_DOWN))
        try:
            path = await self.save(chat_id, self.settings.directory, name, document.data)
        except SaveFailed as exc:
            log.warning("chat=%s document %r not saved: %s", chat_id, name, exc)
            if exc.unavailable:
                raise InputRefused(msg.DOCUMENT_NO_SANDBOX.format(
                    name=name, reason=msg.DOCUMENT_SANDBOX_DOWN)) from exc
            reason = (msg.DOCUMENT_WORKSPACE_FULL if "quota" in str(exc)
                      else msg.DOCUMENT_SANDBOX_FAILED)
            raise InputRefused(msg.DOCUMENT_SAVE_FAILED.format(name=name, reason=reason)) from exc
        log.info("chat=%s document saved at %s (%d bytes)", chat_id, path, len(document.data))
        text = msg.DOCUMENT_ORIGIN.format(name=name, size=human_size(len(document.data)),
                                          path=path)
        return f"{text}\n{caption}" if caption else text


def safe_name(filename: str) -> str:
    """A plain file name for the workspace: no directories, no hidden files, no odd bytes."""
    base = PurePosixPath(filename.replace("\\", "/")).name
    base = unicodedata.normalize("NFC", base)
    base = _UNSAFE.sub("_", base).strip(" .")
    if len(base) > MAX_NAME_CHARS:
        suffix = PurePosixPath(base).suffix[:10]
        base = base[: MAX_NAME_CHARS - len(suffix)] + suffix
    return base or "documento"


def is_supported(name: str, mime_type: str | None, data: bytes) -> bool:
    """A PDF by its signature, or text (CSV included) that decodes as UTF-8 without NULs."""
    suffix = PurePosixPath(name).suffix.lower()
    if suffix == ".pdf" or mime_type == "application/pdf":
        return data.startswith(b"%PDF-")
    mime = (mime_type or "").split(";")[0].strip().lower()
    if suffix not in TEXT_SUFFIXES and not mime.startswith("text/") and mime not in TEXT_TYPES:
        return False
    if b"\x00" in data:
        return False
    try:
        data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return False
    return True


def human_size(size: int) -> str:
    if size < 1024:
        return f"{size} B"
    if size < MB:
        return f"{size / 1024:.1f} KB"
    return f"{size / MB:.1f} MB"

"""Episodic memory on disk: daily logs `memory/YYYY-MM-DD.md` and `/clear` snapshots.

Daily logs are append-only (one line per event, opened in append mode and fsynced, rewritten
only by a redaction the person asks for: `redaction.py`), dated in the configured timezone so
"today" matches the person's day. Snapshots keep the last messages of a cleared session as a
read-only Markdown file named by an LLM slug.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
import tempfile
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

from rumi.llm.client import LLMClient
from rumi.llm.errors import LLMUnavailable
from rumi.paths import ChatPaths
from rumi.sessions.state import ContextItem

log = logging.getLogger(__name__)

DAILY_NAME = re.compile(r"^(\d{4}-\d{2}-\d{2})\.md$")
SNAPSHOT_MESSAGES = 15
SLUG_MAX = 40
FALLBACK_SLUG = "sesion"


def utc_now() -> datetime:
    return datetime.now(UTC)


def slugify(text: str, max_len: int = SLUG_MAX) -> str:
    """Filesystem-safe ASCII slug; never empty, never a dotfile, never a path."""
    normalized = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    slug = re.sub(r"[^a-z0-9]+", "-", normalized.lower()).strip("-")
    slug = slug[:max_len].rstrip("-")
    return slug or FALLBACK_SLUG


@dataclass(frozen=True)
class JournalHit:
    day: str
    path: Path
    line: str


class Journal:
    """Daily logs and snapshots of every chat under `data_dir/chats/<id>/memory/`."""

    def __init__(
        self,
        data_dir: Path,
        timezone: str = "UTC",
        *,
        clock: Callable[[], datetime] = utc_now,
        llm: LLMClient | None = None,
    ) -> None:
        self.data_dir = Path(data_dir)
        self.tz = ZoneInfo(timezone)
        self.clock = clock
        self.llm = llm

    def local_now(self, now: datetime | None = None) -> datetime:
        return (now or self.clock()).astimezone(self.tz)

    def today(self, now: datetime | None = None) -> date:
        return self.local_now(now).date()

    def daily_path(self, chat_id: str, day: date) -> Path:
        return ChatPaths(self.data_dir, chat_id).daily_dir / f"{day.isoformat()}.md"

    async def append_events(
        self, chat_id: str, events: Sequence[str], *, day: date | None = None,
        now: datetime | None = None,
    ) -> Path | None:
        """Append one `- HH:MM text` line per event to the day's log (today by default)."""
        lines = [" ".join(e.split()) for e in events if e and e.strip()]
        if not lines:
            return None
        local = self.local_now(now)
        day = day or local.date()
        path = self.daily_path(chat_id, day)
        stamp = local.strftime("%H:%M")
        text = "".join(f"- {stamp} {line}\n" for line in lines)
        await asyncio.to_thread(self._append, path, day, text)
        return path

    @staticmethod
    def _append(path: Path, day: date, text: str) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "a", encoding="utf-8") as fh:
            if fh.tell() == 0:
                fh.write(f"# {day.isoformat()}\n\n")
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())

    async def recent_block(
        self, chat_id: str, budget_tokens: int, *, count_tokens: Callable[[str], int] | None = None,
        now: datetime | None = None,
    ) -> str:
        """Yesterday's and today's logs for the prompt, newest lines kept when over budget."""
        today = self.today(now)
        return await self.days_block(chat_id, [today - timedelta(days=1), today], budget_tokens,
                                     count_tokens=count_tokens)

    async def days_block(
        self, chat_id: str, days: Sequence[date], budget_tokens: int, *,
        count_tokens: Callable[[str], int] | None = None,
    ) -> str:
        """The logs of `days` (in the order given), newest lines kept when over budget."""
        parts: list[str] = []
        for day in days:
            path = self.daily_path(chat_id, day)
            text = await asyncio.to_thread(_read_or_empty, path)
            if text.strip():
                parts.append(text.strip())
        block = "\n\n".join(parts)
        count = count_tokens or (lambda s: len(s) // 4 + 1)
        if not block or count(block) <= budget_tokens:
            return block
        lines = block.splitlines()
        kept: list[str] = []
        for line in reversed(lines):
            if count("\n".join([line, *kept])) > budget_tokens:
                break
            kept.insert(0, line)
        return "\n".join(kept)

    async def days(self, chat_id: str) -> list[date]:
        """Dates that have a daily log, oldest first."""
        folder = ChatPaths(self.data_dir, chat_id).daily_dir

        def scan() -> list[date]:
            if not folder.is_dir():
                return []
            found = []
            for entry in folder.iterdir():
                match = DAILY_NAME.match(entry.name)
                if match and entry.is_file():
                    try:
                        found.append(date.fromisoformat(match.group(1)))
                    except ValueError:
                        continue
            return sorted(found)

        return await asyncio.to_thread(scan)

    async def search(
        self, chat_id: str, query: str, limit: int = 10, *, days: set[str] | None = None,
    ) -> list[JournalHit]:
        """Lines of daily logs and snapshots containing every word of `query`, newest first.

        `days` (YYYY-MM-DD) keeps only files of those days; with it an empty query lists
        their lines ("/search ayer")."""
        words = [w.casefold() for w in query.split() if w.strip()]
        if not words and not days:
            return []
        paths = ChatPaths(self.data_dir, chat_id)

        def scan() -> list[JournalHit]:
            files: list[tuple[str, Path]] = []
            if paths.daily_dir.is_dir():
                for entry in paths.daily_dir.iterdir():
                    m = DAILY_NAME.match(entry.name)
                    if m and entry.is_file():
                        files.append((m.group(1), entry))
            if paths.snapshots.is_dir():
                for entry in paths.snapshots.glob("*.md"):
                    if entry.is_file():
                        files.append((entry.name[:10], entry))
            hits: list[JournalHit] = []
            for day, path in sorted(files, key=lambda f: (f[0], f[1].name), reverse=True):
                if days is not None and day not in days:
                    continue
                for line in _read_or_empty(path).splitlines():
                    folded = line.casefold()
                    if not line.strip() or line.startswith("#") \
                            or not all(w in folded for w in words):
                        continue
                    hits.append(JournalHit(day, path, line.strip()))
                    if len(hits) >= limit:
                        return hits
            return hits

        return await asyncio.to_thread(scan)

    async def make_slug(self, items: Sequence[ContextItem]) -> str:
        """A short LLM slug for a snapshot; a plain fallback if the model cannot answer."""
        if self.llm is None or not items:
            return FALLBACK_SLUG
        transcript = "\n".join(f"{i.role}: {i.content[:300]}" for i in items[-SNAPSHOT_MESSAGES:])
        messages = [
            {"role": "system", "content": (
                "Give a 2-5 word title for this conversation, in the conversation's language, "
                "lowercase, no punctuation. Reply with the title only.")},
            {"role": "user", "content": transcript[-6000:]},
        ]
        try:
            response = await self.llm.complete(messages, max_tokens=24, temperature=0,
                                             background=True)
        except LLMUnavailable as exc:
            log.warning("snapshot slug: model unavailable (%s); using fallback", exc)
            return FALLBACK_SLUG
        return slugify(response.content.strip().splitlines()[0] if response.content else "")

    async def write_snapshot(
        self, chat_id: str, items: Sequence[ContextItem], *, slug: str | None = None,
        now: datetime | None = None,
    ) -> Path | None:
        """Save the last 15 messages as `snapshots/<date>-<slug>.md`; never overwrites one."""
        messages = [i for i in items if i.role in ("user", "assistant") and i.content]
        messages = messages[-SNAPSHOT_MESSAGES:]
        if not messages:
            return None
        local = self.local_now(now)
        slug = slugify(slug) if slug else await self.make_slug(messages)
        folder = ChatPaths(self.data_dir, chat_id).snapshots
        header = f"# {local.strftime('%Y-%m-%d %H:%M')} — {slug}\n\n"
        body = "".join(
            f"**{_author(m)}** [#{m.id}]: {m.content.strip()}\n\n"
            for m in messages
        )
        data = (header + body).encode("utf-8")
        return await asyncio.to_thread(_create_unique, folder, f"{local.date()}-{slug}", data)


def _read_or_empty(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return ""


def _create_unique(folder: Path, stem: str, data: bytes) -> Path:
    """Atomically create `stem.md`, or `stem-2.md`, … when the name is taken."""
    folder.mkdir(parents=True, exist_ok=True)
    n = 1
    while True:
        name = f"{stem}.md" if n == 1 else f"{stem}-{n}.md"
        target = folder / name
        fd, tmp = tempfile.mkstemp(prefix=".snap.", suffix=".tmp", dir=folder)
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
            try:
                os.link(tmp, target)
            except FileExistsError:
                n += 1
                continue
            return target
        finally:
            Path(tmp).unlink(missing_ok=True)


def _author(item: ContextItem) -> str:
    """Who said it in a snapshot: the group member's name and id, else Usuario or Rumi."""
    if item.speaker is not None:
        return item.speaker.label()
    return "Usuario" if item.role == "user" else "Rumi"

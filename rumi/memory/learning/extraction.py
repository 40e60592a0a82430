"""Learning from a conversation: one JSON-mode LLM call turns messages into memories and events.

Used at every session end (/reset, TTL expiry, /clear, shutdown) and before compaction drops
anything. The model's JSON is validated with pydantic; invalid JSON is retried once with the
error shown to the model, then `ExtractionFailed` is raised so the caller records the range as
pending (the raw text always stays on the tape).
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from rumi.llm.client import LLMClient
from rumi.llm.errors import LLMUnavailable
from rumi.memory.store.models import MemorySource, MemoryType, NewMemory
from rumi.sessions.state import ContextItem

log = logging.getLogger(__name__)

MAX_TRANSCRIPT_CHARS = 24_000
MAX_ITEM_CHARS = 2_000

SYSTEM_PROMPT = """\
You extract long-term memories about the USER from a conversation between the user and \
an assistant called Rumi. Reply with ONE JSON object and nothing else:
{"memories": [{"type": "fact|preference|decision|episodic", "content": "...", \
"key": "short_descriptive_key or null", "importance": 0.0-1.0, "confidence": 0.0-1.0, \
"transient": false}],
 "events": ["..."]}
Rules:
- Write every memory in the THIRD PERSON ("Trabaja en Google", "Prefiere Python") and in the \
language the user writes in ({language} by default).
- fact: stable information about the user or their world; give a descriptive snake_case key \
(e.g. "trabajo", "ciudad", "nombre_mascota").
- preference: likes, dislikes, how they want things done.
- decision: choices the user or the assistant agreed on (project decisions, plans).
- episodic: something that happened in this conversation and is worth remembering later.
- events: one short line per notable thing that happened today (also in the user's language).
- Do NOT store transient states (tired, hungry, in a hurry, "está cansado") as facts; if you \
mention one, set "transient": true.
- Do not invent anything; skip small talk; assistant-only statements are not user facts.
- importance: 0.9+ identity/critical, 0.6 useful, 0.3 minor. confidence: how sure you are.
- If there is nothing worth keeping reply {"memories": [], "events": []}."""

GROUP_RULES = """
This is a GROUP chat: several people write, and each of their lines starts with \
"user NAME (id N):". Keep them apart:
- Every memory is about ONE person: set "about" to that person's id N (the number in \
"(id N)") and name them in the content ("Ana tiene un perro"), never "the user".
- "I", "my", "me" in a line mean the person who wrote that line, not anyone else.
- Something about the whole group (a shared plan, a group decision): "about": null.
- Never attribute to someone what another person said about themselves."""

SPEAKER_LINE = re.compile(r"^\[#\d+\] user (.{1,200}?) \(id (-?\d{1,20})\):", re.M)

ExtractedType = Literal["fact", "preference", "decision", "episodic", "entity", "temporal"]


class ExtractedItem(BaseModel):
    model_config = ConfigDict(extra="ignore")

    type: ExtractedType = "fact"
    content: str = Field(min_length=1, max_length=2_000)
    key: str | None = Field(default=None, max_length=80)
    importance: float = Field(default=0.5, ge=0, le=1)
    confidence: float = Field(default=0.8, ge=0, le=1)
    transient: bool = False
    about: str | None = Field(default=None, max_length=40)   # group: the member's id

    @field_validator("about", mode="before")
    @classmethod
    def _about_text(cls, value: object) -> object:
        if isinstance(value, bool):
            return None
        return str(value).strip() or None if isinstance(value, int | str) else None

    @field_validator("type", mode="before")
    @classmethod
    def _lower(cls, value: object) -> object:
        return value.strip().lower() if isinstance(value, str) else value

    @field_validator("key", mode="before")
    @classmethod
    def _blank_key(cls, value: object) -> object:
        if isinstance(value, str):
            value = "_".join(value.strip().lower().split())
            return value or None
        return value


class ExtractionPayload(BaseModel):
    model_config = ConfigDict(extra="ignore")

    memories: list[ExtractedItem] = Field(default_factory=list)
    events: list[str] = Field(default_factory=list)


class ExtractionFailed(Exception):
    """The model could not produce valid JSON twice, or was unreachable."""


@dataclass
class Extraction:
    """The result: memories to store and one-line events for today's daily log."""

    memories: list[NewMemory] = field(default_factory=list)
    events: list[str] = field(default_factory=list)
    first_id: int | None = None
    last_id: int | None = None

    @property
    def empty(self) -> bool:
        return not self.memories and not self.events


def render_line(item: ContextItem) -> str | None:
    """One item as `[#id] role: text`, or None for tool chatter and empty messages."""
    if item.role not in ("user", "assistant") or not (item.content or "").strip():
        return None
    text = item.content.strip()
    if len(text) > MAX_ITEM_CHARS:
        text = text[:MAX_ITEM_CHARS] + "…"
    who = "user" if item.role == "user" else "assistant"
    if item.speaker is not None:
        who = f"user {item.speaker.label()}"
    if item.kind == "summary":
        who = "summary"
    return f"[#{item.id}] {who}: {text}"


def render_transcript(items: Sequence[ContextItem], limit: int = MAX_TRANSCRIPT_CHARS) -> str:
    """User/assistant text (and summaries) as `[#id] role: text`; tool chatter is left out.

    The `limit` cut is only a last guard for callers that pass a single over-long range;
    the lifecycle feeds `split_windows` output, which always fits, so nothing is cut there.
    """
    transcript = "\n".join(line for line in map(render_line, items) if line is not None)
    if len(transcript) > limit:
        transcript = "…\n" + transcript[-limit:]
    return transcript


def split_windows(items: Sequence[ContextItem], limit: int = MAX_TRANSCRIPT_CHARS
                  ) -> list[list[ContextItem]]:
    """Split a range on item boundaries into windows whose transcript fits in `limit`.

    A long session (or compaction range) must be extracted whole: one JSON call per window,
    so the head of the range is never silently cut off. Items that render to nothing (tool
    chatter) ride along with their neighbours; a window never holds only such items.
    """
    windows: list[list[ContextItem]] = []
    current: list[ContextItem] = []
    size = 0
    rendered = 0
    for item in items:
        line = render_line(item)
        cost = 0 if line is None else len(line) + (1 if rendered else 0)
        if line is not None and rendered and size + cost > limit:
            windows.append(current)
            current, size, rendered, cost = [], 0, 0, len(line)
        current.append(item)
        if line is not None:
            size += cost
            rendered += 1
    if rendered:
        windows.append(current)
    elif current and windows:
        windows[-1].extend(current)
    return windows


class Extractor:
    """Turns a range of context items into `Extraction` (one LLM call, one retry on bad JSON)."""

    def __init__(self, llm: LLMClient, *, language: str = "es", max_tokens: int = 1_500) -> None:
        self.llm = llm
        self.language = language
        self.max_tokens = max_tokens

    async def extract(self, items: Sequence[ContextItem]) -> Extraction:
        transcript = render_transcript(items)
        speakers = {i.speaker.user_id: i.speaker.safe_name for i in items if i.speaker}
        ids = [i.id for i in items]
        result = Extraction(first_id=min(ids, default=None), last_id=max(ids, default=None))
        if not transcript:
            return result
        payload = await self.extract_text(transcript, group=bool(speakers))
        for item in payload.memories:
            if item.transient:
                log.debug("extraction: skipped transient %r", item.content)
                continue
            result.memories.append(self.to_memory(item, speakers))
        result.events = [" ".join(e.split()) for e in payload.events if e and e.strip()]
        return result

    async def extract_text(self, transcript: str, *, group: bool = False) -> ExtractionPayload:
        """Run the JSON-mode call on an already rendered transcript (also used for retries).

        `group`: the transcript's lines name their speakers, and each memory must say whom
        it is about."""
        system = SYSTEM_PROMPT.replace("{language}", self.language)
        if group:
            system += "\n" + GROUP_RULES
        messages = [
            {"role": "system", "content": system},
            {"role": "user", "content": f"Conversation:\n{transcript}"},
        ]
        problem = ""
        for attempt in (1, 2):
            try:
                response = await self.llm.complete(
                    messages, json_mode=True, max_tokens=self.max_tokens, temperature=0,
                    background=True,
                )
            except LLMUnavailable as exc:
                raise ExtractionFailed(f"model unavailable: {exc}") from exc
            try:
                return parse_payload(response.content)
            except ValueError as exc:
                problem = str(exc)
                log.warning("extraction attempt %d returned invalid JSON: %s", attempt, problem)
                messages = [
                    *messages,
                    {"role": "assistant", "content": response.content[:4000]},
                    {"role": "user", "content": (
                        f"That was not valid JSON for the schema ({problem}). "
                        "Reply again with only the JSON object.")},
                ]
        raise ExtractionFailed(f"invalid JSON twice: {problem}")

    @staticmethod
    def to_memory(item: ExtractedItem, speakers: dict[str, str] | None = None) -> NewMemory:
        """`speakers` (id -> name) are the group members who wrote in the transcript: a memory
        is only attributed to one of them (the model cannot invent an owner)."""
        owner = item.about if speakers and item.about in speakers else None
        return NewMemory(
            content=item.content.strip(),
            type=MemoryType(item.type),
            key=item.key,
            source=MemorySource.AUTO,
            importance=item.importance,
            confidence=item.confidence,
            owner_id=owner,
            metadata={"owner_name": speakers[owner]} if speakers and owner else {},
        )


def transcript_speakers(transcript: str) -> dict[str, str]:
    """The group members named in a rendered transcript (for a deferred extraction, which
    only kept the text): `user Ana (id 111):` -> {"111": "Ana"}."""
    return {m.group(2): m.group(1) for m in SPEAKER_LINE.finditer(transcript)}



def parse_payload(text: str) -> ExtractionPayload:
    """Validate the model's JSON; ValueError with a short reason when it does not fit."""
    try:
        data = json.loads(text or "")
    except json.JSONDecodeError as exc:
        raise ValueError(f"not JSON: {exc.msg}") from exc
    if isinstance(data, list):
        data = {"memories": data}
    if not isinstance(data, dict):
        raise ValueError("top level must be an object")
    raw_items = data.get("memories", [])
    if not isinstance(raw_items, list):
        raise ValueError("'memories' must be a list")
    good: list[dict] = []
    for raw in raw_items:
        try:
            ExtractedItem.model_validate(raw)
        except ValidationError:
            log.info("extraction: dropped one malformed memory entry")
            continue
        good.append(raw)
    events = data.get("events", [])
    if not isinstance(events, list):
        raise ValueError("'events' must be a list")
    try:
        return ExtractionPayload.model_validate(
            {"memories": good, "events": [e for e in events if isinstance(e, str)]}
        )
    except ValidationError as exc:
        raise ValueError(exc.errors()[0]["msg"]) from exc

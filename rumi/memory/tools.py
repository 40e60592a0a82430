"""The agent's memory tools: `remember`, `forget`, `search_memory`.

Thin over `MemoryCommands` (`core`), so a tool and the command a person types share one path;
the model's saves are `auto`, never user-confirmed (see `MemoryCommands.remember`).
"""

from __future__ import annotations

from typing import Any, Protocol

from pydantic import Field

from rumi.base.tools import Tool, ToolArgs, ToolContext, ToolError, localized_tool
from rumi.memory.lines import last_speaker, memory_line
from rumi.memory.store.editing import Forgotten
from rumi.memory.store.models import Memory, MemoryInputError, MemoryType
from rumi.memory.tool_text import TOOL_TEXTS, say


class MemoryActions(Protocol):
    """What the tools use of `MemoryCommands`."""

    store: Any

    async def enabled(self, chat_id: str) -> bool: ...

    async def remember(self, chat_id: str, text: str, **kwargs: Any) -> Memory: ...

    async def find(self, chat_id: str, query: str, limit: int = 10) -> list[Memory]: ...

    async def forget_ids(self, chat_id: str, ids: list[int]) -> Forgotten: ...

    async def search(self, chat_id: str, query: str, limit: int = 8) -> list[str]: ...


class MemoryTools:
    def __init__(self, core: MemoryActions) -> None:
        self.core = core

    def tools(self) -> list[Tool]:
        return [
            localized_tool("remember", TOOL_TEXTS["remember"], RememberArgs,
                           self._tool_remember),
            localized_tool("forget", TOOL_TEXTS["forget"], ForgetArgs, self._tool_forget),
            localized_tool("search_memory", TOOL_TEXTS["search_memory"], SearchArgs,
                           self._tool_search, changes_state=False),
        ]

    async def _tool_remember(self, args: RememberArgs, ctx: ToolContext) -> str:
        if not await self.core.enabled(ctx.chat_id):
            raise ToolError(say("off"))
        try:
            memory = await self.core.remember(
                ctx.chat_id, args.content, type_=MemoryType(args.type), key=args.key or None,
                by_user=False, owner=last_speaker(ctx))
        except MemoryInputError as exc:
            raise ToolError(str(exc)) from exc
        return say("saved", line=memory_line(memory))

    async def _tool_forget(self, args: ForgetArgs, ctx: ToolContext) -> str:
        if args.memory_id is not None:
            ids = [args.memory_id]
        elif args.query:
            matches = await self.core.find(ctx.chat_id, args.query)
            if len(matches) > 1:
                listing = "; ".join(memory_line(m) for m in matches)
                raise ToolError(say("several", listing=listing))
            ids = [m.id for m in matches]
        else:
            raise ToolError(say("give_id"))
        speaker = last_speaker(ctx)
        if speaker is not None:   # a group: the agent cannot ask Telegram who is an admin
            found = await self.core.store.get_many(ctx.chat_id, ids)
            if any(m.owner_id != speaker.user_id for m in found):
                raise ToolError(say("group_owner"))
        forgotten = await self.core.forget_ids(ctx.chat_id, ids)
        if not forgotten:
            raise ToolError(say("no_match"))
        return say("forgot", ids=", ".join(f"#{m.id}" for m in forgotten))

    async def _tool_search(self, args: SearchArgs, ctx: ToolContext) -> str:
        if not await self.core.enabled(ctx.chat_id):
            raise ToolError(say("off"))
        hits = await self.core.search(ctx.chat_id, args.query, args.limit)
        return "\n".join(hits) if hits else say("no_results")


class RememberArgs(ToolArgs):
    content: str = Field(min_length=1, max_length=2_000)
    key: str | None = Field(default=None, max_length=80)
    type: str = Field(default="fact", pattern="^(fact|preference|decision|entity|profile)$")

class ForgetArgs(ToolArgs):
    memory_id: int | None = None
    query: str | None = Field(default=None, max_length=200)

class SearchArgs(ToolArgs):
    query: str = Field(min_length=1, max_length=200)
    limit: int = Field(default=8, ge=1, le=30)

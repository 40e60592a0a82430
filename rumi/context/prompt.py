"""The prompt's parts: the leading system message's blocks, the automatic message's, and
their token counts (exact sums of cached blocks), for `ContextEngine.build`.

Layout. The provider caches the longest prefix a request shares with earlier ones (system
message, then tool definitions, then messages), and a chat model answers the LATEST
user-role message (gpt-oss's published chat template renders each as a new user turn). So:
a leading system message with what rarely changes (identity, sections 3–6, the header of the
message list); the conversation; and, as its own message right BEFORE the person's newest
message, the automatic block (recalled memories, this turn's automatic notes, the dashboard).
The person's words are therefore the last user message of every request, and during tool
steps the request ends with the tool results, as harmony expects (call → result → the model
continues). A separate message, not a block glued to the person's, keeps the person's item
exactly as stored (and as the model sees it in later turns), and lets the block be dropped
from history without touching the item.

The automatic message is byte-identical for every call of one turn: the dashboard is frozen
at the turn's first build and drawn again only when something the model must act on changes
(the pressure level, an alert, a warning, a failing tool, a pin, a section problem); live
figures stay in `/status`. A turn's tool steps thus extend the cached prefix. Earlier turns'
automatic blocks are not kept, so each new turn loses from the cache only the previous
exchange (the person's last message onward). It has the user role and says it is automatic:
gpt-oss's template silently drops any system message after the first, and a dashboard the
model never sees would break SMMA without a trace. Nothing before it may carry a counter, a
timestamp or per-turn text.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any, Protocol

from rumi import messages as msg
from rumi.context import model_text
from rumi.context.runtime import ChatRuntime
from rumi.context.sections import DISK_SECTIONS
from rumi.context.tokens import TokenCounter
from rumi.sessions.state import ContextItem

log = logging.getLogger(__name__)

SYSTEM_OVERHEAD = 4
SEP = "\n\n"
WORKSPACE_KINDS = ("loaded_file", "recalled")
SYSTEM_MESSAGES = 2  # the leading (stable) and the automatic (per-turn) message
# gpt-oss's chat template reads only the FIRST system message and drops later ones, so the
# per-turn part travels as a user-role message that says plainly it is not the person's.
AUTO_ROLE = "user"
AUTO_MARKER = model_text.SPANISH.auto_marker   # each language's: model_text.<LANG>.auto_marker
AUTO_MARKERS = (model_text.SPANISH.auto_marker, model_text.ENGLISH.auto_marker)


class RecallProvider(Protocol):
    """Optionally also `prefetch(chat_id, query)`, which starts on a query before the prompt
    needs it (`ContextEngine.prepare_recall` calls it when the provider has it and does not
    wait: what it returns, a task or None, is for tests and benchmarks to await)."""

    async def recall_block(self, chat_id: str, query: str, budget_tokens: int) -> str: ...


def newest_person_index(items: list[ContextItem]) -> int | None:
    """Index of the person's newest message: the last user-role item (only the people in the
    chat write user items; summaries, tool results and loaded files have other roles)."""
    for index in range(len(items) - 1, -1, -1):
        if items[index].role == "user":
            return index
    return None


class BlockTokens:
    """Token counts of the prompt's parts, each system block counted once and cached."""

    def __init__(self, tokens: TokenCounter) -> None:
        self.tokens = tokens
        self.cache: dict[str, int] = {}

    def block(self, block: str) -> int:
        """The system message is blocks joined by a blank line. Counted with its following
        separator (BPE may merge "\n\n" into a preceding "."), each block starts a fresh
        pre-token, so the message's tokens are exactly the sum (cached: blocks rarely change)."""
        cached = self.cache.get(block)
        if cached is None:
            if len(self.cache) > 512:
                self.cache.clear()
            cached = self.cache[block] = self.tokens.count(block)
        return cached

    def joined(self, blocks: list[str]) -> int:
        """Tokens of `SEP.join(blocks)` (see `block`)."""
        if not blocks:
            return 0
        return sum(self.block(b + SEP) for b in blocks[:-1]) + self.block(blocks[-1])

    def messages(self, sources: list[ContextItem],
                 messages: list[dict[str, Any]]) -> tuple[int, int]:
        """(action log, workspace) tokens of the rendered conversation."""
        log_tokens = work_tokens = 0
        for item, message in zip(sources, messages, strict=True):
            n = item.token_count
            if n is None:
                n = self.tokens.item_tokens(item, message)
            if item.role == "tool" or item.kind in WORKSPACE_KINDS:
                work_tokens += n
            else:
                log_tokens += n
        return log_tokens, work_tokens


def lead_blocks(rt: ChatRuntime) -> list[tuple[str, str]]:
    """(name, text) of the leading system message's blocks: identity, sections 3–6 and
    the header of the message list. Only human or `edit_section` edits change them, so
    the request prefix stays byte-identical from call to call and turn to turn."""
    files = rt.files.sections
    t = model_text.for_language()   # the chat's language: stable within the chat
    # the reply language follows agent.language (with "auto", this chat's person)
    blocks = [("identity", t.identity_header + files["identity"].text.strip() + "\n\n"
               + msg.MODEL_REPLY_LANGUAGE)]
    for spec in DISK_SECTIONS:
        if spec.number == 1:
            continue
        section = files[spec.name]
        body = (section.text.strip() if section.loaded
                else t.not_loaded.format(why=section.error or t.file_missing))
        title = t.section_titles[spec.name]
        blocks.append((spec.name, f"=== [{spec.number}] {title} ({spec.name}) ===\n\n"
                                  f"{body or t.empty}"))
    blocks.append(("messages_header", t.messages_header))
    return blocks


def auto_blocks(rt: ChatRuntime, notes: Sequence[str] = ()) -> list[str]:
    """The automatic message's blocks before the dashboard (which goes last)."""
    t = model_text.for_language()
    recalled = [t.recall_header + rt.recall_text] if rt.recall_text else []
    noted = [t.notes_header + "\n".join(f"- {n}" for n in notes)] if notes else []
    return [t.auto_marker, *recalled, *noted]


async def recall_into(rt: ChatRuntime, recall: RecallProvider | None, chat_id: str,
                      query: str, budget: int, tokens: TokenCounter) -> None:
    """This turn's recalled memories for `query`, within `budget` tokens; a failing recall
    leaves a notice on the dashboard instead of the block."""
    rt.recall_query = query
    rt.recall_text, rt.recall_tokens = "", 0
    if recall is None or not query.strip():
        return
    try:
        block = await recall.recall_block(chat_id, query, budget)
    except Exception:
        log.exception("recall failed for chat %s", chat_id)
        rt.notices["recall"] = model_text.for_language().recall_failed
        return
    rt.notices.pop("recall", None)
    block = (block or "").strip()
    if tokens.count(block) > budget:
        block = tokens.truncate(block, budget)
    rt.recall_text, rt.recall_tokens = block, tokens.count(block)

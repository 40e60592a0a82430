"""Read a tool name gpt-oss wrapped in its own format back to the declared tool it means.

gpt-oss writes its calls in OpenAI's harmony format (`to=functions.NAME<|channel|>commentary
<|constrain|>json<|message|>{...}`), and the server that turns that into an OpenAI-style
`tool_calls` entry sometimes keeps a piece of the wrapping in the name: `calc<|channel|>
commentary`, `functions.calc`, `calcjson`, `json.calc`, `calc.json`, `calc<|constrain|>json`.
The intent is plain, so asking the model again would cost a request for nothing. A name is only
rewritten when exactly one declared tool is left once the wrapping is removed; anything else
stays as it was and the registry's "unknown tool" answer teaches the model.

Pure and total: no I/O, and no input makes `resolve` raise.
"""

from __future__ import annotations

import re
from collections.abc import Collection

_SPECIAL = re.compile(r"<\|[^|<>]{0,32}\|>|<\||\|>")
_SEPARATOR = re.compile(r"[^A-Za-z0-9_\-]+")
_WRAPPING = frozenset({"functions", "function", "json", "commentary", "analysis", "final",
                       "to", "constrain", "channel", "message", "call", "tool", "tools",
                       "assistant", "start", "end"})
_DOTTED_WRAPPING = re.compile(r"^(?:to=)?(?:(?:functions|json)\.)*|(?:\.json)+$",
                              re.IGNORECASE)
_GLUE = "json"
MAX_NAME_CHARS = 256


def resolve(name: object, declared: Collection[str]) -> str | None:
    """The declared tool `name` means, or None when none or several could be meant."""
    if not isinstance(name, str) or not declared:
        return None
    known = {n for n in declared if isinstance(n, str)}
    if name in known:
        return name
    if len(name) > MAX_NAME_CHARS:
        return None
    words, parts = _pieces(name)
    for pieces in (words, parts):
        found = {match for piece in pieces if (match := _match(piece, known)) is not None}
        if found:
            return found.pop() if len(found) == 1 else None
    return None


def _pieces(name: str) -> tuple[list[str], list[str]]:
    """The name-shaped words left once harmony's special tokens are removed, each without its
    `functions.`/`json.` prefix or `.json` suffix (a declared name may hold dots itself); then,
    if no word names a tool, their parts."""
    words: list[str] = []
    parts: list[str] = []
    for word in _SPECIAL.sub(" ", name).split():
        word = word.strip("=:,;\"'`")
        words.append(_DOTTED_WRAPPING.sub("", word))
        parts.extend(piece for piece in _SEPARATOR.split(word) if piece)
    return words, parts


def _match(piece: str, known: set[str]) -> str | None:
    if piece in known:
        return piece
    if piece.lower() in _WRAPPING:
        return None
    lowered = piece.lower()
    if lowered.endswith(_GLUE):
        core = piece[: -len(_GLUE)].rstrip("_-")
        if core in known:
            return core
    if lowered.startswith(_GLUE):
        core = piece[len(_GLUE):].lstrip("_-")
        if core in known:
            return core
    return None

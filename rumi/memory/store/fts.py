"""Turning free text into FTS5 queries that can never be a syntax error.

People and models type `"`, `*`, `NEAR(`, `-`, `:`, parentheses and AND/OR/NOT into search
boxes. We never pass their text to MATCH: we keep only word tokens and quote each one, so every
operator becomes a literal (and, with `remove_diacritics 2`, "canción" finds "cancion").
"""

from __future__ import annotations

import re

_WORD = re.compile(r"[^\W_]+", re.UNICODE)
MAX_TERMS = 64


def terms(text: str) -> list[str]:
    """Distinct lower-cased word tokens of `text`, in order, at most MAX_TERMS."""
    if not isinstance(text, str):
        return []
    seen: dict[str, None] = {}
    for match in _WORD.finditer(text):
        seen.setdefault(match.group(0).lower(), None)
        if len(seen) >= MAX_TERMS:
            break
    return list(seen)


def any_of(text: str) -> str | None:
    """MATCH expression: any term (BM25 then ranks documents matching more of them higher)."""
    words = terms(text)
    return " OR ".join(f'"{w}"' for w in words) if words else None


def all_of(text: str) -> str | None:
    words = terms(text)
    return " AND ".join(f'"{w}"' for w in words) if words else None


def phrase(text: str) -> str | None:
    """MATCH expression for the words of `text` in sequence (forget-by-text)."""
    words = terms(text)
    return '"' + " ".join(words) + '"' if words else None

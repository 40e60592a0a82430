"""`rumi/context/prompt.py`: the system message's tokens are the sum of its cached blocks, as
`ContextEngine.build` relies on (real tiktoken)."""

from __future__ import annotations

from rumi.context.prompt import SEP, BlockTokens
from rumi.context.tokens import TokenCounter


def test_joined_blocks_count_exactly_what_the_joined_text_counts(counter: TokenCounter) -> None:
    blocks = ["=== [3] Identidad ===\n\nSoy Rumi.", "Fin de frase.", "```\ncode\n```",
              "¿Qué hice el lunes?", "última"]
    parts = BlockTokens(counter)
    assert parts.joined(blocks) == counter.count(SEP.join(blocks))
    assert parts.joined(blocks) == parts.joined(blocks)   # the second time from the cache
    assert set(parts.cache) >= {b + SEP for b in blocks[:-1]}
    assert parts.joined([]) == 0

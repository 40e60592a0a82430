"""The tokenizer's vocabulary kept parsed between starts (`load_encoding(..., cache_dir)`):
the counts are tiktoken's own, the kept file is what a second start reads, and a damaged or
foreign file is made again instead of breaking the start or the counts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from rumi.context.tokens import TokenCounter, load_encoding, vocabulary_bytes
from rumi.encoding import ENCODING

TEXTS = ["El módulo de autenticación falla con OAuth2 ☃ — ¿por qué?",
         "日本語のテキスト 🙂 and <|endoftext|> as plain text", "x" * 3000, ""]


def _same(counter: TokenCounter, encoding: Any) -> bool:
    return all(counter.count(t) == len(encoding.encode(t, disallowed_special=())) for t in TEXTS)


def test_the_kept_vocabulary_counts_as_tiktoken_and_is_what_the_next_start_reads(
        tmp_path: Path, encoding: Any) -> None:
    first = TokenCounter(cache_dir=tmp_path)            # tiktoken's load, then kept
    kept = tmp_path / f"{ENCODING}.vocab"
    assert kept.is_file() and not first.is_fallback and _same(first, encoding)
    second = TokenCounter(cache_dir=tmp_path)           # read back
    assert not second.is_fallback and _same(second, encoding)
    assert second.truncate("palabra " * 300, 50) == first.truncate("palabra " * 300, 50)

    # the next start builds its encoding from the kept file: a vocabulary of single bytes
    # written there (in the same layout) makes every byte a token
    header, _, _ = kept.read_bytes().partition(b"\n")
    head = json.loads(header)
    byte_ranks = {bytes([b]): b for b in range(256)}
    kept.write_bytes(vocabulary_bytes(head["key"],
                                      dict(head["arguments"], mergeable_ranks=byte_ranks)))
    assert TokenCounter(cache_dir=tmp_path).count("hello") == 5
    assert len(encoding.encode("hello")) == 1


@pytest.mark.parametrize("damage", ["truncated", "garbage", "empty", "other-version"])
def test_a_damaged_or_foreign_file_is_made_again(tmp_path: Path, encoding: Any,
                                                 damage: str) -> None:
    TokenCounter(cache_dir=tmp_path)
    kept = tmp_path / f"{ENCODING}.vocab"
    good = kept.read_bytes()
    if damage == "truncated":   # e.g. a disk that filled up
        kept.write_bytes(good[: len(good) // 2])
    elif damage == "garbage":
        kept.write_bytes(b"\x00\xff" * 1000 + b"\n" + b"\x01" * 500)
    elif damage == "empty":
        kept.write_bytes(b"")
    else:
        header, _, rest = good.partition(b"\n")
        head = json.loads(header)
        head["key"][2] = "0.0.1"   # kept by another tiktoken
        kept.write_bytes(json.dumps(head).encode() + b"\n" + rest)
    counter = TokenCounter(cache_dir=tmp_path)
    assert not counter.is_fallback and _same(counter, encoding)
    assert kept.read_bytes() == good   # made again, whole


def test_an_unwritable_place_only_skips_keeping_it(tmp_path: Path, encoding: Any) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory", encoding="utf-8")
    counter = TokenCounter(cache_dir=blocker / "tokenizer")
    assert not counter.is_fallback and _same(counter, encoding)


def test_encodings_tiktoken_does_not_construct_itself_are_loaded_as_before(
        tmp_path: Path) -> None:
    assert TokenCounter("does-not-exist", cache_dir=tmp_path).is_fallback
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(ValueError):
        load_encoding("does-not-exist", tmp_path)

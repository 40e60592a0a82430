"""Which tiktoken vocabulary Rumi counts with, and where tiktoken keeps it.

o200k_base is gpt-oss's vocabulary for ordinary text (its tokenizer, o200k_harmony, adds only
the format's special tokens). A module of its own so the doctor, `rumi models` and the test
stand-ins name the same file without importing the context engine.
"""

from __future__ import annotations

import hashlib

ENCODING = "o200k_base"
ENCODING_URL = "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken"
ENCODING_SHA256 = "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"


def cache_key(url: str = ENCODING_URL) -> str:
    """The file name tiktoken (and openai-harmony) cache a download under: sha1 of its URL."""
    return hashlib.sha1(url.encode()).hexdigest()  # noqa: S324 (tiktoken's key, not security)

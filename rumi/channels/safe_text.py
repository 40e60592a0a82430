"""Text from Telegram made safe to store: lone UTF-16 surrogates replaced by U+FFFD.

Telegram's JSON is UTF-16 underneath; a client can send half of a surrogate pair, which the
JSON escape `\\ud83d` carries through and Python decodes into a `str` that no UTF-8 encoder
accepts. One such message used to stop journaling, and with it polling for every chat.
"""

from __future__ import annotations

import re
from typing import Any

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def clean(value: Any) -> Any:
    """`value` (JSON-like) with every lone surrogate in its strings, keys included, replaced;
    the same object when there was none."""
    if isinstance(value, str):
        return _LONE_SURROGATE.sub("\ufffd", value)
    if isinstance(value, dict):
        return {clean(k): clean(v) for k, v in value.items()}
    if isinstance(value, list):
        return [clean(v) for v in value]
    return value
